"""Arrays whose sizes do not agree are a ValueError naming both arguments
and both sizes, raised before the kernel runs (never an out-of-bounds read
or write); empty arrays and read-only inputs are fine."""

import re

import numpy as np
import pytest

import attn
from conftest import needs_compiler, reference_attention, relative_error

pytestmark = needs_compiler
rng = np.random.default_rng(3)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def nan(*shape):
    return np.full(shape, np.nan, np.float32)


def raises_naming(call, *words):
    """call() raises ValueError whose message has each of `words` (argument
    names and sizes) as a whole word."""
    with pytest.raises(ValueError) as raised:
        call()
    message = str(raised.value)
    assert message.startswith("attn: ")
    for word in words:
        assert re.search(rf"(?<![\w-]){re.escape(str(word))}(?![\w-])",
                         message), (word, message)
    return message


@pytest.fixture(scope="module")
def plain():
    return attn.compile_cpu(attn.attention(head_dim=16))


@pytest.fixture(scope="module")
def with_lse():
    return attn.compile_cpu(attn.attention(head_dim=16, lse=True))


def test_out_shorter_than_q(plain):
    q, kv = rand(1, 4, 256, 16), rand(1, 4, 256, 16)
    out = nan(1, 4, 1, 16)  # M = 1 instead of 256
    raises_naming(lambda: plain(q, kv, kv, out), "out", "q", 1, 256)
    assert np.isnan(out).all()


def test_kv_batch_smaller_than_q_batch(plain):
    q, kv = rand(4, 4, 64, 16), rand(1, 4, 64, 16)
    out = nan(4, 4, 64, 16)
    raises_naming(lambda: plain(q, kv, kv, out), "q", 1, 4)
    assert np.isnan(out).all()


def test_v_shorter_than_k(plain):
    q, k, v = rand(1, 4, 16, 16), rand(1, 4, 16, 16), rand(1, 4, 8, 16)
    out = nan(1, 4, 16, 16)
    raises_naming(lambda: plain(q, k, v, out), "k", "v", 8, 16)
    assert np.isnan(out).all()


def test_lse_too_small(with_lse):
    q, kv = rand(1, 4, 16, 16), rand(1, 4, 16, 16)
    out, lse = nan(1, 4, 16, 16), nan(1, 4, 8)
    raises_naming(lambda: with_lse(q, kv, kv, out, lse), "lse", 8, 16)
    assert np.isnan(out).all() and np.isnan(lse).all()
    raises_naming(lambda: with_lse(q, kv, kv, out, nan(1, 2, 16)), "lse", 2, 4)


@pytest.mark.parametrize("heads", [(2, 64), (6, 4), (4, 8), (4, 0)])
def test_query_heads_not_a_multiple_of_kv_heads(plain, heads):
    hq, hkv = heads
    q, kv = rand(1, hq, 8, 16), rand(1, hkv, 8, 16)
    out = nan(1, hq, 8, 16)
    raises_naming(lambda: plain(q, kv, kv, out), "q", "k", hq, hkv)
    assert np.isnan(out).all()


def test_short_document_ids():
    kernel = attn.compile_cpu(attn.attention(head_dim=16, mask="document"))
    q, kv = rand(1, 4, 64, 16), rand(1, 4, 64, 16)
    out = nan(1, 4, 64, 16)
    raises_naming(lambda: kernel(q, kv, kv, out, np.zeros(1, np.int32)),
                  "argument 4", 1, 64)
    # As long as the longer of M and N is needed: here N.
    q = rand(1, 4, 8, 16)
    out = nan(1, 4, 8, 16)
    raises_naming(lambda: kernel(q, kv, kv, out, np.zeros(8, np.int32)),
                  "argument 4", 8, 64)
    assert np.isnan(out).all()
    kernel(q, kv, kv, out, np.zeros(64, np.int32))
    assert not np.isnan(out).any()


def test_short_alibi_slopes():
    kernel = attn.compile_cpu(attn.attention(head_dim=16, score_mod="alibi"))
    q, kv = rand(1, 8, 16, 16), rand(1, 2, 16, 16)
    out = nan(1, 8, 16, 16)
    raises_naming(lambda: kernel(q, kv, kv, out, attn.alibi_slopes(2)),
                  "argument 4", 2, 8)
    assert np.isnan(out).all()
    kernel(q, kv, kv, out, attn.alibi_slopes(8))
    assert not np.isnan(out).any()


def test_softmax_output_smaller_than_input():
    kernel = attn.compile_cpu(attn.softmax())
    x, y = np.ones((64, 4096), np.float32), nan(1, 1)
    raises_naming(lambda: kernel(x, y), "out", 1, 64)
    assert np.isnan(y).all()
    raises_naming(lambda: kernel(x, nan(64, 4095)), "out", 4095, 4096)


def test_a_scalar_result_is_refused():
    module = attn.Module.parse("""
    func.func @f(%a: tensor<4xf32>) -> f32 {
      %c = arith.constant 1.0 : f32
      return %c : f32
    }""")
    with pytest.raises((ValueError, RuntimeError), match="@f"):
        attn.compile_cpu(module)(np.zeros(4, np.float32))


@pytest.mark.parametrize("shape_q, shape_kv", [
    ((1, 4, 0, 16), (1, 4, 8, 16)),   # M = 0
    ((0, 4, 8, 16), (0, 4, 8, 16)),   # B = 0
    ((1, 0, 8, 16), (1, 0, 8, 16)),   # Hq = Hkv = 0
    ((2, 4, 0, 16), (2, 2, 0, 16)),   # M = N = 0
])
def test_empty_outputs_are_nothing_to_do(with_lse, shape_q, shape_kv):
    q, kv = rand(*shape_q), rand(*shape_kv)
    out, lse = nan(*shape_q), nan(*shape_q[:3])
    with_lse(q, kv, kv, out, lse)
    assert out.size == 0 and lse.size == 0


def test_no_keys_give_zero_and_minus_infinity(with_lse):
    """N = 0: every row has nothing to attend to: 0, and a logsumexp of
    -inf (as for a fully masked row), never NaN."""
    q, kv = rand(2, 4, 5, 16), rand(2, 2, 0, 16)
    out, lse = nan(2, 4, 5, 16), nan(2, 4, 5)
    with_lse(q, kv, kv, out, lse)
    assert (out == 0).all()
    assert (lse == -np.inf).all()


def test_empty_softmax():
    kernel = attn.compile_cpu(attn.softmax())
    for shape in ((0, 7), (3, 0), (0, 0)):
        kernel(np.zeros(shape, np.float32), np.zeros(shape, np.float32))


def test_read_only_inputs(with_lse):
    q, kv = rand(1, 4, 20, 16), rand(1, 2, 30, 16)
    for a in (q, kv):
        a.setflags(write=False)
    out, lse = nan(1, 4, 20, 16), nan(1, 4, 20)
    with_lse(q, kv, kv, out, lse)
    want, want_lse = reference_attention(q, kv, kv)
    assert relative_error(out, want) < 1e-5
    assert relative_error(lse, want_lse) < 1e-5
    # Read-only captures too (np.frombuffer of bytes is read-only).
    docs = attn.compile_cpu(attn.attention(head_dim=16, mask="document"))
    ids = np.frombuffer(np.zeros(30, np.int32).tobytes(), np.int32)
    docs(q, kv, kv, out, ids)
    assert relative_error(out, reference_attention(q, kv, kv, causal=True)[0]) < 1e-5


def test_read_only_outputs_are_refused(with_lse):
    q, kv = rand(1, 4, 8, 16), rand(1, 4, 8, 16)
    out, lse = nan(1, 4, 8, 16), nan(1, 4, 8)
    out.setflags(write=False)
    raises_naming(lambda: with_lse(q, kv, kv, out, lse), "out", "argument 3",
                  "read-only")
    out = nan(1, 4, 8, 16)
    lse.setflags(write=False)
    raises_naming(lambda: with_lse(q, kv, kv, out, lse), "lse", "read-only")
    assert np.isnan(out).all()


def test_arguments_are_named():
    assert attn.compile_cpu(attn.attention(lse=True, mask="document",
                                           score_mod="alibi")).arg_names == [
        "q", "k", "v", "out", "lse", "argument 5", "argument 6"]
    assert attn.compile_cpu(attn.softmax()).arg_names == ["input", "out"]


def test_bounds_checks_catch_what_the_contract_cannot():
    """A region reading a captured tensor at q + 1 (no size the contract can
    tie it to): with bounds_checks (compile_cpu's default) the bad read is
    an error naming the tensor, not an out-of-bounds access."""
    t = "tensor<1x1x?x16xf32>"
    module = attn.Module.parse(f"""
    func.func @shifted(%q: {t}, %k: {t}, %v: {t}, %o: {t},
                       %table: tensor<?xi32>) -> {t} {{
      %r = attn.attention ins(%q, %k, %v : {t}, {t}, {t}) outs(%o : {t})
          mask_mod {{
          ^bb0(%b: index, %h: index, %i: index, %j: index):
            %c1 = arith.constant 1 : index
            %next = arith.addi %i, %c1 : index
            %x = tensor.extract %table[%next] : tensor<?xi32>
            %c0 = arith.constant 0 : i32
            %keep = arith.cmpi eq, %x, %c0 : i32
            attn.yield %keep : i1
          }} -> {t}
      return %r : {t}
    }}""")
    kernel = attn.compile_cpu(module)
    q = rand(1, 1, 8, 16)
    out = nan(1, 1, 8, 16)
    kernel(q, q, q, out, np.zeros(9, np.int32))
    assert not np.isnan(out).any()
    with pytest.raises((ValueError, RuntimeError), match="argument 4"):
        kernel(q, q, q, out, np.zeros(8, np.int32))
