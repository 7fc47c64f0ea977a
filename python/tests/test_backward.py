"""attn.attention_grad on the CPU: dQ, dK and dV against a float64 numpy
backward written from the definition, which is itself checked against
central finite differences of the float64 forward."""

import numpy as np
import pytest

import attn
from conftest import needs_compiler, reference_attention, relative_error

pytestmark = needs_compiler

# score_mod regions with their value and derivative in numpy.
SCORE_MODS = {
    "none": ("", None, None),
    "softcap": ("""
        %c = arith.constant 2.0e+01 : f32
        %x = arith.divf %s, %c : f32
        %t = math.tanh %x : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32""",
                lambda s, b, h, i, j: 20 * np.tanh(s / 20),
                lambda s, b, h, i, j: 1 - np.tanh(s / 20) ** 2),
    # ALiBi-like bias times a smooth gate: products, exp and a max.
    "mixed": ("""
        %qi = arith.index_cast %q : index to i64
        %ki = arith.index_cast %kv : index to i64
        %d = arith.subi %qi, %ki : i64
        %df = arith.sitofp %d : i64 to f32
        %c = arith.constant 1.250000e-01 : f32
        %bias = arith.mulf %df, %c : f32
        %e = math.exp %s : f32
        %half = arith.constant 5.000000e-01 : f32
        %g = arith.mulf %e, %half : f32
        %m = arith.maximumf %s, %g : f32
        %r = arith.subf %m, %bias : f32
        attn.yield %r : f32""",
              lambda s, b, h, i, j: np.maximum(s, 0.5 * np.exp(s))
              - (i - j) / 8,
              lambda s, b, h, i, j: np.where(s >= 0.5 * np.exp(s), 1.0,
                                             0.5 * np.exp(s))),
    # maxnumf skips a NaN operand, and so does its derivative: sqrt of a
    # negative score is NaN, and the constant wins with slope 0.
    "maxnum-sqrt": ("""
        %c = arith.constant -2.000000e+00 : f32
        %r0 = math.sqrt %s : f32
        %r = arith.maxnumf %c, %r0 : f32
        attn.yield %r : f32""",
                    lambda s, b, h, i, j: np.fmax(
                        -2.0, np.sqrt(np.where(s >= 0, s, np.nan))),
                    lambda s, b, h, i, j: np.where(
                        s > 0, 0.5 / np.sqrt(np.maximum(s, 1e-300)), 0.0)),
}

# mask_mod regions with their numpy predicate.
MASKS = {
    "none": ("", None),
    "window": ("""
        %d = arith.subi %q, %kv : index
        %w = arith.constant 5 : index
        %near = arith.cmpi ule, %d, %w : index
        attn.yield %near : i1""", lambda b, h, i, j: (i - j >= 0) & (i - j <= 5)),
}


def grad_module(d, causal, score_mod, mask):
    t = f"tensor<?x?x?x{d}xf32>"
    lse = "tensor<?x?x?xf32>"
    regions = ""
    if SCORE_MODS[score_mod][0]:
        regions += ("\n  score_mod {\n  ^bb0(%s: f32, %b: index, %h: index, "
                    "%q: index, %kv: index):" + SCORE_MODS[score_mod][0]
                    + "\n  }")
    if MASKS[mask][0]:
        regions += ("\n  mask_mod {\n  ^bb0(%b: index, %h: index, %q: index, "
                    "%kv: index):" + MASKS[mask][0] + "\n  }")
    attrs = " {causal}" if causal else ""
    return f"""func.func @grad(%Q: {t}, %K: {t}, %V: {t}, %O: {t}, %dO: {t},
    %L: {lse}, %dQ: {t}, %dK: {t}, %dV: {t}) -> ({t}, {t}, {t}) {{
  %r:3 = attn.attention_grad ins(%Q, %K, %V, %O, %dO, %L : {t}, {t}, {t},
      {t}, {t}, {lse}) outs(%dQ, %dK, %dV : {t}, {t}, {t}){attrs}{regions}
      -> {t}, {t}, {t}
  return %r#0, %r#1, %r#2 : {t}, {t}, {t}
}}"""


def reference_grad(q, k, v, do, causal, keep, mod, slope):
    """float64 dQ, dK, dV from the definition (docs/Backward.md)."""
    q, k, v, do = (np.asarray(x, np.float64) for x in (q, k, v, do))
    b, hq, m, d = q.shape
    hkv, n = k.shape[1], k.shape[2]
    g = hq // hkv
    kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    scale = 1 / np.sqrt(d)
    s = np.einsum("bhid,bhjd->bhij", q, kr) * scale
    idx = np.meshgrid(np.arange(b), np.arange(hq), np.arange(m), np.arange(n),
                      indexing="ij")
    s2 = mod(s, *idx) if mod else s
    factor = slope(s, *idx) if slope else np.ones_like(s)
    visible = np.ones_like(s, dtype=bool)
    if causal:
        visible &= idx[3] <= idx[2]
    if keep:
        visible &= keep(*idx)
    s2 = np.where(visible, s2, -np.inf)
    mx = s2.max(axis=-1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0)
    p = np.where(visible, np.exp(s2 - mx), 0)
    total = p.sum(axis=-1, keepdims=True)
    p = p / np.where(total > 0, total, 1)
    o = np.einsum("bhij,bhjd->bhid", p, vr)
    dv = np.einsum("bhij,bhid->bhjd", p, do)
    dp = np.einsum("bhid,bhjd->bhij", do, vr)
    delta = (do * o).sum(axis=-1, keepdims=True)
    ds = p * (dp - delta) * factor * scale
    dq = np.einsum("bhij,bhjd->bhid", ds, kr)
    dk = np.einsum("bhij,bhid->bhjd", ds, q)
    fold = lambda x: x.reshape(b, hkv, g, n, x.shape[-1]).sum(axis=2)
    return dq, fold(dk), fold(dv)


def run_grad(kernel, q, k, v, do, causal, keep, mod):
    out, lse = reference_attention(q, k, v, causal=causal, keep=keep,
                                   score_mod=mod)
    grads = [np.full_like(x, np.nan) for x in (q, k, v)]
    kernel(q, k, v, out.astype(np.float32), do,
           lse.astype(np.float32), *grads)
    return grads


def inputs(shape_q, shape_kv, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(shape_q).astype(np.float32)
    k = rng.standard_normal(shape_kv).astype(np.float32)
    v = rng.standard_normal(shape_kv).astype(np.float32)
    do = rng.standard_normal(shape_q).astype(np.float32)
    return q, k, v, do


@pytest.mark.parametrize("score_mod", ["none", "softcap", "mixed",
                                       "maxnum-sqrt"])
@pytest.mark.parametrize("mask", ["none", "window"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [(4, 4), (8, 2), (8, 1)])
def test_gradients_match_float64(score_mod, mask, causal, heads):
    kernel = attn.compile_cpu(attn.Module.parse(
        grad_module(16, causal, score_mod, mask)), kv_tile=8)
    _, mod, slope = SCORE_MODS[score_mod]
    keep = MASKS[mask][1]
    q, k, v, do = inputs((2, heads[0], 19, 16), (2, heads[1], 23, 16))
    got = run_grad(kernel, q, k, v, do, causal, keep, mod)
    want = reference_grad(q, k, v, do, causal, keep, mod, slope)
    # sqrt's slope is unbounded near 0: there the f32 rounding of s alone
    # moves dS by more than elsewhere.
    bound = 1e-4 if score_mod == "maxnum-sqrt" else 1e-5
    for name, g, w in zip(("dQ", "dK", "dV"), got, want):
        assert relative_error(g, w) < bound, name


def test_reference_matches_finite_differences():
    """The numpy backward is the derivative of the float64 forward's
    <O, dO>, along random directions (central differences)."""
    q, k, v, do = inputs((1, 4, 9, 16), (1, 2, 11, 16), seed=3)
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    _, mod, slope = SCORE_MODS["mixed"]
    keep = MASKS["window"][1]

    def loss(q, k, v):
        out, _ = reference_attention(q, k, v, keep=keep, score_mod=mod)
        return (out * do).sum()

    grads = reference_grad(q, k, v, do, False, keep, mod, slope)
    rng = np.random.default_rng(4)
    h = 1e-5
    for i, grad in enumerate(grads):
        direction = rng.standard_normal(grad.shape)
        plus = [q, k, v]
        minus = [q, k, v]
        plus[i] = plus[i] + h * direction
        minus[i] = minus[i] - h * direction
        numeric = (loss(*plus) - loss(*minus)) / (2 * h)
        assert abs(numeric - (grad * direction).sum()) < 1e-7 * max(
            1, abs(numeric))


def test_empty_rows_and_keys_get_zero_gradients():
    """Rows no key reaches (causal with M > N is fine; a window that
    excludes everything is not) give dQ = 0, and keys nobody sees dK = dV =
    0, never NaN."""
    never = """
        %f = arith.constant false
        attn.yield %f : i1"""
    MASKS["never"] = (never, lambda b, h, i, j: np.zeros_like(i, dtype=bool))
    try:
        kernel = attn.compile_cpu(attn.Module.parse(
            grad_module(16, False, "none", "never")))
    finally:
        del MASKS["never"]
    q, k, v, do = inputs((1, 2, 5, 16), (1, 2, 7, 16))
    out = np.zeros_like(q)
    lse = np.full(q.shape[:3], -np.inf, np.float32)
    grads = [np.full_like(x, np.nan) for x in (q, k, v)]
    kernel(q, k, v, out, do, lse, *grads)
    for g in grads:
        assert np.all(g == 0)


def test_verifier_refuses_a_score_mod_without_derivative():
    good = grad_module(16, False, "softcap", "none")
    assert "attn.attention_grad" in str(attn.Module.parse(good))
    bad = good.replace("%t = math.tanh %x : f32", "%t = math.floor %x : f32")
    with pytest.raises(ValueError, match="'math.floor' on the path from it"):
        attn.Module.parse(bad)


def test_sizes_that_disagree_are_refused_before_running():
    kernel = attn.compile_cpu(attn.Module.parse(
        grad_module(16, False, "none", "none")))
    q, k, v, do = inputs((1, 2, 5, 16), (1, 2, 7, 16))
    out = np.zeros_like(q)
    lse = np.zeros(q.shape[:3], np.float32)
    dq, dv = np.zeros_like(q), np.zeros_like(v)
    short_dk = np.zeros((1, 2, 6, 16), np.float32)
    with pytest.raises(ValueError, match="kv length"):
        kernel(q, k, v, out, do, lse, dq, short_dk, dv)
    with pytest.raises(ValueError, match="query length"):
        kernel(q, k, v, out, do[:, :, :4].copy(), lse, dq, np.zeros_like(k),
               dv)


@pytest.mark.parametrize("causal", [False, True])
def test_builder_makes_the_backward_of_a_builtin(causal):
    """attn.attention_grad(...) takes attention(...)'s arguments: here the
    document mask, whose ids are the captured argument after dv."""
    kernel = attn.compile_cpu(attn.attention_grad(mask="document",
                                                  causal=causal, head_dim=32,
                                                  heads=(4, 2)))
    q, k, v, do = inputs((2, 4, 21, 32), (2, 2, 21, 32), seed=5)
    doc = (np.arange(21) // 8).astype(np.int32)
    keep = lambda b, h, i, j: (doc[i] == doc[j]) & (j <= i)
    out, lse = reference_attention(q, k, v, causal=causal, keep=keep)
    grads = [np.full_like(x, np.nan) for x in (q, k, v)]
    kernel(q, k, v, out.astype(np.float32), do, lse.astype(np.float32),
           *grads, doc)
    want = reference_grad(q, k, v, do, causal, keep, None, None)
    for name, g, w in zip(("dQ", "dK", "dV"), grads, want):
        assert relative_error(g, w) < 1e-5, name
    with pytest.raises(ValueError, match="mask= must be one of"):
        attn.attention_grad(mask="diagonal")


def score_gradients(q, k, v, do, causal, mod):
    """float64 dS' = P (dP - Delta), the gradient of the modified scores,
    [B, Hq, M, N]."""
    q, k, v, do = (np.asarray(x, np.float64) for x in (q, k, v, do))
    g = q.shape[1] // k.shape[1]
    kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    b, hq, m, n = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    idx = np.meshgrid(np.arange(b), np.arange(hq), np.arange(m), np.arange(n),
                      indexing="ij")
    s = mod(np.einsum("bhid,bhjd->bhij", q, kr) / np.sqrt(q.shape[3]), *idx)
    if causal:
        s = np.where(idx[3] <= idx[2], s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p, vr)
    dp = np.einsum("bhid,bhjd->bhij", do, vr)
    return p * (dp - (do * o).sum(axis=-1, keepdims=True)), idx


def sum_error(got, want, magnitudes):
    """The error of a sum that cancels, relative to its terms' sizes."""
    return np.linalg.norm(np.asarray(got, np.float64) - want) / \
        np.linalg.norm(magnitudes)


@pytest.mark.parametrize("causal", [False, True])
def test_alibi_slopes_gradient(causal):
    """attention_grad(score_mod='alibi', capture_grads=True) also returns
    d loss / d slopes: sum over (b, i, j) of dS' * (i - j) per head."""
    kernel = attn.compile_cpu(attn.attention_grad(
        score_mod="alibi", causal=causal, head_dim=16, heads=(4, 2),
        capture_grads=True), kv_tile=8)
    q, k, v, do = inputs((2, 4, 13, 16), (2, 2, 13, 16), seed=7)
    slopes = attn.alibi_slopes(4)
    mod = lambda s, b, h, i, j: s + slopes[h] * (i - j)
    out, lse = reference_attention(q, k, v, causal=causal, score_mod=mod)
    grads = [np.full_like(x, np.nan) for x in (q, k, v)]
    dslopes = np.full(4, np.nan, np.float32)
    kernel(q, k, v, out.astype(np.float32), do, lse.astype(np.float32),
           *grads, dslopes, slopes)
    ds, idx = score_gradients(q, k, v, do, causal, mod)
    terms = ds * (idx[2] - idx[3])
    want = terms.sum(axis=(0, 2, 3))
    assert sum_error(dslopes, want, np.abs(terms).sum(axis=(0, 2, 3))) < 1e-6
    # The same through the float64 forward: central differences.
    h = 1e-6
    for head in range(4):
        moved = [slopes.astype(np.float64) for _ in range(2)]
        moved[0][head] += h
        moved[1][head] -= h
        losses = [(reference_attention(
            q, k, v, causal=causal,
            score_mod=lambda s, b, hh, i, j, sl=sl: s + sl[hh] * (i - j))[0]
            * do).sum() for sl in moved]
        assert abs((losses[0] - losses[1]) / (2 * h) - want[head]) < 1e-6 * \
            max(1.0, abs(want[head]))


BIAS_MODULE = """
func.func @grad(%Q: {t}, %K: {t}, %V: {t}, %O: {t}, %dO: {t}, %L: {lse},
    %dQ: {t}, %dK: {t}, %dV: {t}, %dgain: tensor<?xf32>,
    %dbias: tensor<?x?xf32>, %gain: tensor<?xf32>, %bias: tensor<?x?xf32>)
    -> ({t}, {t}, {t}, tensor<?xf32>, tensor<?x?xf32>) {{
  %r:5 = attn.attention_grad ins(%Q, %K, %V, %O, %dO, %L : {t}, {t}, {t},
      {t}, {t}, {lse}) wrt(%gain, %bias : tensor<?xf32>, tensor<?x?xf32>)
      outs(%dQ, %dK, %dV, %dgain, %dbias : {t}, {t}, {t}, tensor<?xf32>,
           tensor<?x?xf32>)
      score_mod {{
      ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):
        %g = tensor.extract %gain[%h] : tensor<?xf32>
        %gs = arith.mulf %s, %g : f32
        %d1 = arith.subi %q, %kv : index
        %d2 = arith.subi %kv, %q : index
        %d = arith.maxsi %d1, %d2 : index
        %bd = tensor.extract %bias[%h, %d] : tensor<?x?xf32>
        %r = arith.addf %gs, %bd : f32
        attn.yield %r : f32
      }} -> {t}, {t}, {t}, tensor<?xf32>, tensor<?x?xf32>
  return %r#0, %r#1, %r#2, %r#3, %r#4 : {t}, {t}, {t}, tensor<?xf32>,
      tensor<?x?xf32>
}}""".format(t="tensor<?x?x?x16xf32>", lse="tensor<?x?x?xf32>")


def test_gain_and_relative_bias_gradients():
    """Two wrt tensors, one read per head and one by every (q, kv) pair at
    |q - kv|: the bias's gradient adds dS' over the positions that share
    an element (np.add.at), deterministically."""
    kernel = attn.compile_cpu(attn.Module.parse(BIAS_MODULE), kv_tile=8)
    q, k, v, do = inputs((1, 4, 11, 16), (1, 2, 17, 16), seed=9)
    rng = np.random.default_rng(10)
    gain = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    bias = rng.standard_normal((4, 24)).astype(np.float32)
    mod = lambda s, b, h, i, j: s * gain[h] + bias[h, np.abs(i - j)]
    out, lse = reference_attention(q, k, v, score_mod=mod)
    dq, dk, dv = (np.full_like(x, np.nan) for x in (q, k, v))
    dgain = np.full_like(gain, np.nan)
    dbias = np.full_like(bias, np.nan)
    args = (q, k, v, out.astype(np.float32), do, lse.astype(np.float32), dq,
            dk, dv, dgain, dbias, gain, bias)
    kernel(*args)
    ds, idx = score_gradients(q, k, v, do, False, mod)
    s = np.einsum("bhid,bhjd->bhij", q.astype(np.float64),
                  np.repeat(k, 2, axis=1).astype(np.float64)) / 4
    gain_terms = ds * s
    want_gain = gain_terms.sum(axis=(0, 2, 3))
    assert sum_error(dgain, want_gain,
                     np.abs(gain_terms).sum(axis=(0, 2, 3))) < 1e-6
    want_bias = np.zeros(bias.shape)
    magnitudes = np.zeros(bias.shape)
    where = (idx[1], np.abs(idx[2] - idx[3]))
    np.add.at(want_bias, where, ds)
    np.add.at(magnitudes, where, np.abs(ds))
    assert sum_error(dbias, want_bias, magnitudes) < 1e-6
    # Distances past 16, which no (q, kv) pair has, keep a zero gradient.
    assert np.all(dbias[:, 17:] == 0)
    # A second run gives the same bits.
    again = [np.full_like(x, np.nan) for x in (dq, dk, dv, dgain, dbias)]
    kernel(*args[:6], *again, gain, bias)
    assert np.array_equal(again[3], dgain) and np.array_equal(again[4], dbias)


def test_a_read_out_of_bounds_is_reported_not_written():
    """A bias table too short for the distances read: the call raises after
    the kernel, naming the region, and nothing is written past the table."""
    kernel = attn.compile_cpu(attn.Module.parse(BIAS_MODULE), kv_tile=8)
    q, k, v, do = inputs((1, 4, 9, 16), (1, 2, 9, 16), seed=11)
    out = np.zeros_like(q)
    lse = np.zeros(q.shape[:3], np.float32)
    gain = np.ones(4, np.float32)
    bias = np.zeros((4, 3), np.float32)
    # dbias is the head of a larger buffer: its tail must stay untouched.
    backing = np.full(24, 7.0, np.float32)
    dbias = backing[:12].reshape(4, 3)
    with pytest.raises(RuntimeError, match="score_mod"):
        kernel(q, k, v, out, do, lse, np.zeros_like(q), np.zeros_like(k),
               np.zeros_like(v), np.zeros(4, np.float32), dbias, gain, bias)
    assert np.all(backing[12:] == 7.0)


def test_verifier_refuses_a_bias_read_through_floor():
    bad = BIAS_MODULE.replace(
        "%bd = tensor.extract %bias[%h, %d] : tensor<?x?xf32>",
        "%bd0 = tensor.extract %bias[%h, %d] : tensor<?x?xf32>\n"
        "        %bd = math.floor %bd0 : f32")
    with pytest.raises(ValueError, match="with respect to what it reads of "
                       "wrt #1, but 'math.floor'"):
        attn.Module.parse(bad)
    with pytest.raises(TypeError, match="capture_grads"):
        attn.attention_grad(score_mod="alibi", capture_grads=1)
    with pytest.raises(ValueError, match="reads a float tensor"):
        attn.attention_grad(score_mod="softcap:20", capture_grads=True)


def test_a_wrt_gradient_of_another_shape_is_refused_before_running():
    kernel = attn.compile_cpu(attn.Module.parse(BIAS_MODULE))
    q, k, v, do = inputs((1, 4, 5, 16), (1, 2, 5, 16))
    out = np.zeros_like(q)
    lse = np.zeros(q.shape[:3], np.float32)
    grads = [np.zeros_like(x) for x in (q, k, v)]
    gain, bias = np.ones(4, np.float32), np.zeros((4, 8), np.float32)
    with pytest.raises(ValueError, match="wrt tensor's dims"):
        kernel(q, k, v, out, do, lse, *grads, np.zeros(4, np.float32),
               np.zeros((4, 7), np.float32), gain, bias)


def test_given_block_mask_has_flexattention_semantics():
    # A sliding window's block mask, once as built and once with its full
    # blocks left out: unlisted blocks contribute nothing, partial ones
    # apply the mask, full ones keep every element.
    m = n = 70
    window = 36
    bm = attn.create_block_mask(f"sliding-window:{window}", m, n,
                                q_block=16, kv_block=16)
    assert bm.full_kv_num_blocks.sum() > 0
    zeros = np.zeros_like
    partial_only = attn.BlockMask(
        bm.kv_num_blocks, bm.kv_indices, zeros(bm.full_kv_num_blocks),
        zeros(bm.full_kv_indices), bm.q_num_blocks, bm.q_indices,
        zeros(bm.full_q_num_blocks), zeros(bm.full_q_indices), q_block=16,
        kv_block=16, q_len=m, kv_len=n)
    kernel = attn.compile_cpu(attn.attention_grad(
        head_dim=16, heads=(2, 1), mask=f"sliding-window:{window}",
        given_block_mask=16), kv_tile=8)
    q, k, v, do = inputs((1, 2, m, 16), (1, 1, n, 16))
    for mask in (bm, partial_only):
        classes = mask.classes()[0, 0]

        def keep(b, h, i, j, classes=classes):
            kept = classes[i // 16, j // 16]
            in_window = (j <= i) & (i - j <= window)
            return (kept == 2) | ((kept == 1) & in_window)

        out, lse = reference_attention(q, k, v, keep=keep)
        grads = [np.full_like(x, np.nan) for x in (q, k, v)]
        kernel(q, k, v, out.astype(np.float32), do, lse.astype(np.float32),
               *grads, *mask.lists())
        want = reference_grad(q, k, v, do, False, keep, None, None)
        for name, g, w in zip(("dQ", "dK", "dV"), grads, want):
            assert relative_error(g, w) < 1e-5, name


def test_block_mask_sides_must_agree_on_full_blocks():
    # A block full on the kv side but partial on the q side would be masked
    # by one backward kernel and not by the other.
    bm = attn.create_block_mask("sliding-window:36", 70, 70, q_block=16,
                                kv_block=16)
    with pytest.raises(ValueError, match="q-side partial lists are not"):
        attn.BlockMask(*bm.kv_lists(), bm.full_q_num_blocks,
                       bm.full_q_indices, bm.q_num_blocks, bm.q_indices,
                       q_block=16, kv_block=16, q_len=70, kv_len=70)


def test_given_block_mask_needs_the_q_side():
    bm = attn.create_block_mask("sliding-window:20", 40, 40, q_block=16,
                                kv_block=16)
    with pytest.raises(ValueError, match="has none"):
        attn.BlockMask(*bm.kv_lists(), q_block=16, kv_block=16).lists()


@needs_compiler
@pytest.mark.parametrize("mask,launches", [(None, 3), ("document", 4)])
def test_compile_gpu_writes_the_backward_kernels(tmp_path, mask, launches):
    """The GPU backward's bundle: dQ, dK/dV and the launch that zeroes
    Delta again, after the block mask's build where there is a mask_mod;
    its arguments are the builder's."""
    module = attn.attention_grad("bf16", head_dim=64, causal=True, mask=mask,
                                 heads=(8, 2))
    kernel = attn.compile_gpu(module, "sm_80", str(tmp_path))
    assert kernel.function == "attention_grad"
    assert len(kernel.launches) == launches
    names = [name for name, _, _ in
             attn._runtime.Bundle(str(tmp_path / "bundle.json")).args(
                 "attention_grad")]
    assert len(names) == len(kernel.arg_types) == 9 + (mask == "document")
    # The bundle records what the backward computes.
    (computes,) = kernel.computes
    assert computes["op"] == "attention_grad" and computes["causal"]
    assert computes["dtype"] == "bf16" and computes["head_dim"] == 64
    assert "logsumexp" not in computes
    assert (computes["mask_mod"] or {}).get("name") == mask


@needs_compiler
def test_compile_gpu_writes_capture_gradients(tmp_path):
    """ALiBi's learnt slopes on the GPU: the dQ kernel adds their terms,
    and one more launch turns the exact sums into the f32 gradient."""
    module = attn.attention_grad("f16", head_dim=64, score_mod="alibi",
                                 capture_grads=True, heads=(8, 2))
    kernel = attn.compile_gpu(module, "sm_90a", str(tmp_path))
    assert len(kernel.launches) == 4
    ptx = "".join(p.read_text() for p in tmp_path.glob("*.ptx"))
    assert "red.add.u64" in ptx


@needs_compiler
@pytest.mark.parametrize("kwargs,message", [
    ({"dtype": "f32"}, "needs f16 or bf16 inputs"),
    ({"dtype": "bf16", "head_dim": 40}, "not multiples of 16 up to 256"),
])
def test_compile_gpu_refuses_what_the_backward_kernel_cannot_run(kwargs,
                                                                  message):
    with pytest.raises(RuntimeError, match=message):
        attn.compile_gpu(attn.attention_grad(**kwargs), "sm_90a")
