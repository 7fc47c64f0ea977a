"""Python mods traced into attn regions (attn.trace): the same functions
that numpy evaluates as the reference run compiled on the CPU."""

import numpy as np
import pytest

import attn
from conftest import needs_compiler, reference_attention, relative_error
from test_backward import inputs, score_gradients, sum_error

pytestmark = needs_compiler

N = 40
DOC = (np.arange(N) // 13).astype(np.int32)
BIAS = np.random.default_rng(3).standard_normal((4, 2 * N - 1)).astype(
    np.float32)
BIAS64 = BIAS.astype(np.float64)
SLOPES = attn.alibi_slopes(4)

# FlexAttention's examples as Python functions of (b, h, q_idx, kv_idx)
# and (score, b, h, q_idx, kv_idx), over numpy values or traced ones.
MASKS = {
    "causal": lambda b, h, q, kv: q >= kv,
    "sliding window": lambda b, h, q, kv: (q >= kv) & (q - kv <= 7),
    "prefix": lambda b, h, q, kv: (kv <= 5) | (q >= kv),
    "document": lambda b, h, q, kv: (DOC[q] == DOC[kv]) & (q >= kv),
    "neighbourhood": lambda b, h, q, kv: (abs(q // 8 - kv // 8) <= 1)
    & (abs(q % 8 - kv % 8) <= 1),
    "per head": lambda b, h, q, kv: (h % 2 == 0) | (kv <= q),
    # FlexAttention's NATTEN on a 5 x 8 canvas, a 3 x 3 window whose centre
    # stays inside it.
    "natten": lambda b, h, q, kv: (abs(np.clip(q // 8, 1, 3) - kv // 8) <= 1)
    & (abs(np.clip(q % 8, 1, 6) - kv % 8) <= 1),
}
SCORE_MODS = {
    "relative bias": lambda s, b, h, q, kv: s + BIAS[h, q - kv + N - 1],
    "alibi": lambda s, b, h, q, kv: s + SLOPES[h] * (q - kv),
    "softcap": lambda s, b, h, q, kv: 20 * np.tanh(s / 20),
    "square": lambda s, b, h, q, kv: s ** 2 / 4,
    "checkerboard": lambda s, b, h, q, kv: np.where((q - kv) % 2 == 0, s,
                                                    s * 0.5),
    "clamped": lambda s, b, h, q, kv: np.minimum(np.maximum(s, -1.0), 1.0)
    + np.exp2(-(abs(q - kv) / 8)),
}


def run_forward(mask, score_mod, heads=4, reference_mask=None,
                reference_mod=None):
    """The mods compiled for the CPU against numpy evaluating them (or
    the reference_ versions, which numpy can broadcast)."""
    module = attn.attention("f32", head_dim=16, mask=mask,
                            score_mod=score_mod, heads=heads)
    kernel = attn.compile_cpu(module, q_tile=16, kv_tile=16)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, heads, N, 16)).astype(np.float32)
               for _ in range(3))
    out = np.full_like(q, np.nan)
    kernel(q, k, v, out, *attn.captures(mask, score_mod))
    want, _ = reference_attention(q, k, v, keep=reference_mask or mask,
                                  score_mod=reference_mod or score_mod)
    return relative_error(out, want)


@pytest.mark.parametrize("mask", list(MASKS))
def test_traced_masks_match_numpy(mask):
    assert run_forward(MASKS[mask], None) < 1e-5


@pytest.mark.parametrize("score_mod", list(SCORE_MODS))
def test_traced_score_mods_match_numpy(score_mod):
    assert run_forward(MASKS["causal"], SCORE_MODS[score_mod]) < 1e-5


def test_captures_are_arguments_read_in_place():
    """A captured array is an argument: new values need no recompile."""
    table = np.zeros((4, 2 * N - 1), np.float32)
    mod = lambda s, b, h, q, kv: s + table[h, q - kv + N - 1]
    module = attn.attention("f32", head_dim=16, score_mod=mod, heads=4)
    kernel = attn.compile_cpu(module)
    (captured,) = attn.captures(score_mod=mod)
    assert captured is table
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 4, N, 16)).astype(np.float32)
               for _ in range(3))
    for values in (BIAS, -BIAS):
        table[...] = values
        out = np.empty_like(q)
        kernel(q, k, v, out, table)
        want, _ = reference_attention(q, k, v, score_mod=mod)
        assert relative_error(out, want) < 1e-5


def test_traced_region_text():
    """Python's floor modulo and integer-to-float conversion, as ops."""
    traced = attn.trace.trace(
        score_mod=lambda s, b, h, q, kv: s + (q - kv) % 3)
    body = traced.score_body
    assert "arith.remsi" in body and "arith.select" in body
    assert "arith.sitofp" in body and "attn.yield" in body
    assert traced.arguments == "" and traced.learnable == []


def test_learnt_bias_gradients_of_a_traced_score_mod():
    """capture_grads=True learns every float32 array the score_mod reads:
    here a gain per head and a relative-position bias table."""
    gain = np.random.default_rng(4).uniform(0.5, 1.5, 4).astype(np.float32)
    mod = lambda s, b, h, i, j: s * gain[h] + BIAS[h, i - j + N - 1]
    module = attn.attention_grad("f32", head_dim=16, score_mod=mod,
                                 heads=(4, 2), capture_grads=True)
    kernel = attn.compile_cpu(module, kv_tile=8)
    q, k, v, do = inputs((1, 4, N, 16), (1, 2, N, 16), seed=5)
    out, lse = reference_attention(q, k, v, score_mod=mod)
    grads = [np.full_like(x, np.nan) for x in (q, k, v)]
    dgain, dbias = np.full_like(gain, np.nan), np.full_like(BIAS, np.nan)
    assert [a is b for a, b in zip(attn.captures(score_mod=mod),
                                   (gain, BIAS))] == [True, True]
    kernel(q, k, v, out.astype(np.float32), do, lse.astype(np.float32),
           *grads, dgain, dbias, gain, BIAS)
    ds, idx = score_gradients(q, k, v, do, False, mod)
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64),
                  np.repeat(k, 2, axis=1).astype(np.float64)) / 4
    terms = ds * s
    assert sum_error(dgain, terms.sum(axis=(0, 2, 3)),
                     np.abs(terms).sum(axis=(0, 2, 3))) < 1e-6
    want, sizes = np.zeros(BIAS.shape), np.zeros(BIAS.shape)
    where = (idx[1], idx[2] - idx[3] + N - 1)
    np.add.at(want, where, ds)
    np.add.at(sizes, where, np.abs(ds))
    assert sum_error(dbias, want, sizes) < 1e-6


def test_traced_mods_compile_for_the_gpu(tmp_path):
    module = attn.attention("bf16", head_dim=64, mask=MASKS["document"],
                            score_mod=SCORE_MODS["relative bias"],
                            heads=(8, 2))
    kernel = attn.compile_gpu(module, "sm_90a", str(tmp_path))
    assert kernel.function == "attention"


def mask_with_if(b, h, q, kv):
    if q >= kv:
        return True
    return False


@pytest.mark.parametrize("kwargs,message", [
    ({"mask_mod": mask_with_if},
     r"mask_with_if \(line \d+\): Python control flow on a traced value"),
    ({"score_mod": lambda s, b, h, q, kv: np.sin(s)},
     r"sin\(\) has no attn op"),
    ({"score_mod": lambda s, b, h, q, kv: s + BIAS[h]},
     "reads a captured array of 2 dims with 1 indices"),
    ({"score_mod": lambda s, b, h, q, kv: s + BIAS64[h, q]},
     "captures a float64 array"),
    ({"mask_mod": lambda b, h, q, kv: q - kv},
     "mask_mod returns a non-boolean"),
    ({"score_mod": lambda s, b, h, q, kv: [0, 1][q]},
     "a traced value used as a Python int"),
    ({"score_mod": lambda s, b, h, q, kv: 2 ** s},
     "'\\*\\*' with a traced exponent"),
])
def test_untraceable_mods_raise_naming_the_function(kwargs, message):
    with pytest.raises(attn.TraceError, match=message):
        attn.trace.trace(**kwargs)


def test_callables_elsewhere_are_refused():
    with pytest.raises(TypeError, match="takes a function in attention"):
        attn.block_mask_module(MASKS["causal"], 64, 64)


def test_a_traced_region_does_not_join_a_builtin_one():
    from attn._compiler import attention_source
    body = attn.trace.trace(mask_mod=MASKS["causal"]).mask_body
    with pytest.raises(ValueError, match="replaces a built-in one"):
        attention_source("f32", 16, 0, False, False, "document", "none", 0.0,
                         -1, -1, -1, -1, -1, 0, trace_mask=body)
    with pytest.raises(ValueError, match="no such captured argument"):
        attention_source("f32", 16, 0, False, False, "none", "none", 0.0, -1,
                         -1, -1, -1, -1, 0, backward=True, trace_mask=body,
                         trace_wrt=[("capture0", "tensor<4xf32>")])


def test_flexattention_style_combinators_trace():
    """FlexAttention's and_masks as it is written (new_ones, .to(device))
    combines masks that read captured arrays."""
    def and_masks(*mask_mods):
        def and_mask(b, h, q_idx, kv_idx):
            result = b.new_ones((), dtype="torch.bool")
            for mask_mod in mask_mods:
                result = result & mask_mod(b, h, q_idx, kv_idx).to(
                    result.device)
            return result
        return and_mask

    combined = and_masks(MASKS["causal"], lambda b, h, q, kv: q - kv <= 7)
    body = attn.trace.trace(mask_mod=combined).mask_body
    assert body.startswith("\n        %v0 = arith.constant true")
    kernel = attn.compile_cpu(attn.attention("f32", head_dim=16,
                                             mask=combined, heads=4))
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 4, N, 16)).astype(np.float32)
               for _ in range(3))
    out = np.empty_like(q)
    kernel(q, k, v, out)
    want, _ = reference_attention(q, k, v, keep=MASKS["sliding window"])
    assert relative_error(out, want) < 1e-5


def random_mod(rng, depth=3, masks=False):
    """A random score_mod (or mask_mod) as Python source over s, b, h, q,
    kv (numpy spellings), and the same function: float, integer and
    boolean subexpressions mixed as FlexAttention's users mix them."""
    def integer(d):
        if d == 0 or rng.random() < 0.3:
            return str(rng.choice(["q", "kv", "h", "b", str(rng.integers(1, 9))]))
        op = rng.choice(["+", "-", "*", "//", "%", "abs"])
        if op == "abs":
            return f"abs({integer(d - 1)})"
        right = integer(d - 1) if op in "+-*" else str(rng.integers(1, 7))
        return f"({integer(d - 1)} {op} {right})"

    def floating(d):
        if d == 0 or rng.random() < 0.25:
            return str(rng.choice(["s", "s", f"{rng.uniform(-2, 2):.3f}"]))
        kind = rng.choice(["arith", "mix", "where", "unary", "minmax"])
        if kind == "arith":
            op = rng.choice(["+", "-", "*"])
            return f"({floating(d - 1)} {op} {floating(d - 1)})"
        if kind == "mix":
            return f"({floating(d - 1)} + {integer(d - 1)} / 16)"
        if kind == "where":
            cmp = rng.choice(["<", "<=", ">", ">=", "==", "!="])
            return (f"np.where({integer(d - 1)} {cmp} {integer(d - 1)}, "
                    f"{floating(d - 1)}, {floating(d - 1)})")
        if kind == "unary":
            fn = rng.choice(["np.tanh", "np.abs", "-"])
            return f"{fn}({floating(d - 1)})"
        fn = rng.choice(["np.minimum", "np.maximum"])
        return f"{fn}({floating(d - 1)}, {floating(d - 1)})"

    def boolean(d):
        if d == 0 or rng.random() < 0.3:
            # A variable on the left: Python's ~ of a constant bool is an int.
            cmp = rng.choice(["<", "<=", ">", ">=", "==", "!="])
            left = f"({rng.choice(['q', 'kv', 'h', 'b'])} + {integer(d)})"
            return f"({left} {cmp} {integer(d)})"
        op = rng.choice(["&", "|", "^", "~"])
        if op == "~":
            return f"(~{boolean(d - 1)})"
        return f"({boolean(d - 1)} {op} {boolean(d - 1)})"

    if masks:
        source = f"lambda b, h, q, kv: {boolean(depth)}"
    else:
        source = f"lambda s, b, h, q, kv: {floating(depth)}"
    return source, eval(source, {"np": np})


@pytest.mark.parametrize("seed", range(40))
def test_random_score_mods_match_numpy(seed):
    """Random mods, traced and compiled, against numpy evaluating the same
    function (Python's // and % on negative values included)."""
    source, mod = random_mod(np.random.default_rng(seed))
    # numpy gives a scalar for a mod that ignores its arguments.
    error = run_forward(MASKS["causal"], mod, reference_mod=lambda s, *i: (
        np.broadcast_to(mod(s, *i), s.shape)))
    assert error < 1e-5, source


@pytest.mark.parametrize("seed", range(20))
def test_random_mask_mods_match_numpy(seed):
    """Random masks of comparisons combined with & | ^ ~ (rows they empty
    give zeros, as numpy's reference does)."""
    source, mask = random_mod(np.random.default_rng(1000 + seed), masks=True)
    error = run_forward(mask, None, reference_mask=lambda *i: np.broadcast_to(
        mask(*i), np.broadcast(*i).shape))
    assert error < 1e-5, source
