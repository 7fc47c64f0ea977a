"""bench/reference.py on the CPU with numpy: the float64 attention the GPU
benchmarks check every timed output against (chunked over batch-heads and
query rows), the masks they give FlexAttention, and their error rules.
The scripts themselves need PyTorch and a GPU; this needs neither (the
PyTorch parity test runs only where torch is installed)."""

import importlib.util
import math
import pathlib
import py_compile

import numpy as np
import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"
_spec = importlib.util.spec_from_file_location("bench_reference",
                                               BENCH / "reference.py")
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)


def naive(q, k, v, scale, keep=None, score_mod=None):
    """One row at a time, straight from the definition: keep(b, h, i, j)
    and score_mod(s, b, h, i, j) on plain ints."""
    bsz, hq, m, _ = q.shape
    hkv, n, dv = k.shape[1], k.shape[2], v.shape[3]
    out = np.zeros((bsz, hq, m, dv))
    lse = np.full((bsz, hq, m), -np.inf)
    for b in range(bsz):
        for h in range(hq):
            g = h // (hq // hkv)
            for i in range(m):
                scores = []
                for j in range(n):
                    if keep is not None and not keep(b, h, i, j):
                        continue
                    s = float(np.dot(q[b, h, i], k[b, g, j])) * scale
                    if score_mod is not None:
                        s = score_mod(s, b, h, i, j)
                    scores.append((s, j))
                if not scores:
                    continue
                top = max(s for s, _ in scores)
                weights = [(math.exp(s - top), j) for s, j in scores]
                total = sum(w for w, _ in weights)
                out[b, h, i] = sum(w * v[b, g, j] for w, j in weights) / total
                lse[b, h, i] = top + math.log(total)
    return out, lse


def inputs(bsz, hq, hkv, m, n, d, dv, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (bsz, hq, m, d)),
            rng.uniform(-1, 1, (bsz, hkv, n, d)),
            rng.uniform(-1, 1, (bsz, hkv, n, dv)))


@pytest.mark.parametrize("shape", [(1, 1, 1, 5, 5, 4, 4),
                                   (2, 4, 2, 9, 13, 8, 8),
                                   (2, 6, 1, 17, 11, 4, 6),
                                   (1, 2, 2, 3, 20, 8, 8)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("chunk", [1, 13, 64, 1 << 26])
def test_attention_matches_naive(shape, causal, chunk):
    """GQA, M != N, causal (kv <= q), and chunks that split batch-heads
    and query rows every which way."""
    q, k, v = inputs(*shape)
    scale = 1 / math.sqrt(shape[5])
    out, lse = ref.attention(q, k, v, scale, causal=causal, chunk=chunk)
    want, want_lse = naive(q, k, v, scale,
                           (lambda b, h, i, j: j <= i) if causal else None)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=0, atol=1e-12)


@pytest.mark.parametrize("spec,causal", [("sliding-window:3", False),
                                         ("sliding-window:3", True),
                                         ("document", False),
                                         ("prefix:4", False),
                                         ("sasa:4:3", False),
                                         ("natten:4:4:3", True)])
@pytest.mark.parametrize("chunk", [7, 1 << 26])
def test_masks_match_naive(spec, causal, chunk):
    q, k, v = inputs(2, 2, 1, 16, 16, 8, 8, seed=1)
    doc = np.arange(16) // 5
    mask = ref.mask_mod(spec, doc)
    out, lse = ref.attention(q, k, v, 0.5, causal=causal, mask=mask,
                             chunk=chunk)

    def keep(b, h, i, j):
        return bool(mask(b, h, np.int64(i), np.int64(j))) and (
            not causal or j <= i)
    want, want_lse = naive(q, k, v, 0.5, keep)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=0, atol=1e-12)


def test_score_mod_and_heads():
    """score_mod(s, b, h, q, kv) sees each chunk's batch and head."""
    q, k, v = inputs(2, 4, 2, 7, 9, 4, 4, seed=2)

    def mod(s, b, h, i, j):
        return s * 0.5 + 0.1 * h - 0.2 * b + 0.01 * (i - j)
    out, lse = ref.attention(q, k, v, 0.3, score_mod=mod, chunk=5)
    want, want_lse = naive(q, k, v, 0.3, None, mod)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(lse, want_lse, rtol=0, atol=1e-12)


def test_fully_masked_rows_are_zero():
    q, k, v = inputs(1, 2, 2, 6, 4, 4, 4, seed=3)
    out, lse = ref.attention(q, k, v, 1.0,
                             mask=lambda b, h, i, j: j > i + 1, chunk=3)
    assert np.all(out[:, :, 2:] == 0) and np.all(lse[:, :, 2:] == -np.inf)
    assert np.all(np.isfinite(lse[:, :, :2]))
    empty, empty_lse = ref.attention(q, k[:, :, :0], v[:, :, :0], 1.0)
    assert np.all(empty == 0) and np.all(empty_lse == -np.inf)


def test_mask_definitions():
    """docs/Masks.md: the sliding window keeps W + 1 keys (kv <= q and
    q - kv <= W), as attn's sliding-window:W and FlexAttention's example
    do; documents are causal within each; natten keeps K x K keys."""
    q = np.arange(3000)[:, None]
    kv = np.arange(3000)[None, :]
    window = ref.mask_mod("sliding-window:1024")(None, None, q, kv)
    assert window[2000].sum() == 1025 and window[2000, 976] and not window[2000, 975]
    assert not window[5, 6] and window[5].sum() == 6
    doc = np.arange(3000) // 512
    docs = ref.mask_mod("document", doc)(None, None, q, kv)
    assert docs[600].sum() == 600 - 512 + 1 and not docs[600, 511]
    prefix = ref.mask_mod("prefix:10")(None, None, q, kv)
    assert prefix[3].sum() == 11 and prefix[100].sum() == 101
    n = np.arange(36)
    natten = ref.mask_mod("natten:6:6:3")(None, None, n[:, None], n[None, :])
    assert np.all(natten.sum(axis=1) == 9)
    sasa = ref.mask_mod("sasa:6:3")(None, None, n[:, None], n[None, :])
    assert sasa[0].sum() == 4 and sasa[7].sum() == 9
    for bad in ("alibi", "sliding-window:x", "jagged:3"):
        with pytest.raises(ValueError):
            ref.mask_mod(bad)
    with pytest.raises(ValueError):
        ref.mask_mod("document")


def test_errors():
    rng = np.random.default_rng(4)
    want = rng.uniform(-1, 1, (2, 3, 2048, 16))
    assert ref.errors(want.copy(), want) == {"err": 0.0, "row": 0.0,
                                             "finite": True}
    got = want * (1 + 1e-3)
    e = ref.errors(got, want)
    assert e["err"] == pytest.approx(1e-3) and e["row"] == pytest.approx(1e-3)
    # One wrong row of 12288: the norm averages it away, the row does not.
    got = want.copy()
    got[1, 2, 5] = 0
    e = ref.errors(got, want)
    assert e["row"] == pytest.approx(1.0)
    assert e["err"] < ref.TOLERANCE["bf16"]
    assert ref.verdict("bf16", e).startswith("row err")
    # A row whose reference is 0 is measured absolutely.
    want0 = want.copy()
    want0[0, 0, 0] = 0
    got = want0.copy()
    got[0, 0, 0, 0] = 0.5
    assert ref.errors(got, want0)["row"] == pytest.approx(0.5)
    got = want.copy()
    got[0, 1, 2, 3] = np.nan
    e = ref.errors(got, want)
    assert not e["finite"] and e["err"] == math.inf
    assert ref.verdict("f16", e) == "NaN or inf"


def test_lse_errors():
    want = np.array([[1.0, 2.0, -np.inf]])
    assert ref.lse_errors(np.array([[1.0, 2.0, -np.inf]]), want) == {
        "lse_err": 0.0, "lse_inf": True}
    e = ref.lse_errors(np.array([[1.0, 2.002, -np.inf]]), want)
    assert e["lse_inf"] and e["lse_err"] == pytest.approx(0.002 / math.sqrt(5))
    for wrong in ([[1.0, 2.0, 0.0]], [[1.0, np.nan, -np.inf]],
                  [[1.0, 2.0, np.nan]], [[-np.inf, 2.0, -np.inf]]):
        e = ref.lse_errors(np.array(wrong), want)
        assert not e["lse_inf"] and e["lse_err"] == math.inf
        assert ref.verdict("f32", dict(err=0.0, row=0.0, finite=True, **e))


def test_verdict_rules():
    tol = ref.TOLERANCE
    assert tol == {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}
    ok = {"err": 2.6e-3, "row": 5e-3, "finite": True}
    assert ref.verdict("bf16", ok) is None
    assert ref.verdict("f16", ok).startswith("err 2.60e-03 > 2.0e-03")
    assert ref.verdict("bf16", dict(ok, row=0.07)).startswith("row err")
    assert ref.verdict("bf16", dict(ok, row=0.06)) is None
    # Next to a peer on the same inputs: at most PEER_FACTOR times its
    # error plus PEER_FLOOR, half a unit roundoff (2^-9 for bf16).
    peer = {"err": 2.6e-3, "row": 5e-3, "finite": True}
    assert ref.PEER_FACTOR == 1.25
    assert ref.PEER_FLOOR == {"f32": 2.0**-25, "f16": 2.0**-12,
                              "bf16": 2.0**-9}
    assert ref.verdict("bf16", dict(ok, err=5.2e-3), peer) is None
    why = ref.verdict("bf16", dict(ok, err=5.3e-3), peer, "SDPA flash")
    assert why == "err 5.30e-03 > 1.25x SDPA flash's 2.60e-03 + 2.0e-03"
    exact_peer = dict(peer, err=0.0)
    assert ref.verdict("bf16", dict(ok, err=1.9e-3), exact_peer) is None
    assert ref.verdict("bf16", dict(ok, err=2e-3), exact_peer)
    small = {"err": 1.3e-4, "row": 2e-4, "finite": True}
    assert ref.verdict("f16", small, exact_peer) is None
    assert ref.verdict("f16", dict(small, err=2.5e-4), exact_peer)
    assert ref.verdict("bf16", dict(ok, lse_err=1e-6, lse_inf=True)) is None
    assert ref.verdict("bf16", dict(ok, lse_err=0.02, lse_inf=True))
    assert ref.SOFTMAX_TOLERANCE == {"f32": 1e-6, "f16": 1e-3, "bf16": 1e-3}
    assert ref.short(None) == "-" and ref.short(2.6e-3) == "2.60e-03"


def test_bench_scripts_compile(tmp_path):
    scripts = sorted(BENCH.glob("*.py"))
    assert len(scripts) > 5
    for script in scripts:
        py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"),
                           doraise=True)


def test_torch_matches_numpy():
    """The scripts run the reference on PyTorch tensors: the same results
    as numpy's (here on the CPU), bf16 inputs and document ids included."""
    torch = pytest.importorskip("torch")
    q, k, v = inputs(2, 4, 2, 37, 41, 16, 8, seed=5)
    tq, tk, tv = (torch.tensor(x).to(torch.bfloat16) for x in (q, k, v))
    q, k, v = (x.double().numpy() for x in (tq, tk, tv))
    doc = np.arange(41) // 9
    for spec in (None, "sliding-window:7", "document"):
        for causal in (False, True):
            mask = ref.mask_mod(spec, doc) if spec else None
            tmask = (ref.mask_mod(spec, torch.tensor(doc)) if spec
                     else None)
            out, lse = ref.attention(q, k, v, 0.25, causal, mask, chunk=50)
            tout, tlse = ref.attention(tq, tk, tv, 0.25, causal, tmask,
                                       chunk=50)
            assert tout.dtype == torch.float64
            np.testing.assert_allclose(tout.numpy(), out, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(np.isinf(tlse.numpy()),
                                          np.isinf(lse))
            rounded = tout.to(torch.bfloat16).double()
            got = tout.to(torch.bfloat16)
            assert ref.errors(got, rounded) == {"err": 0.0, "row": 0.0,
                                                "finite": True}
            noisy = (tout * 1.01).to(torch.bfloat16)
            assert ref.errors(noisy, rounded) == pytest.approx(
                ref.errors(noisy.double().numpy(), rounded.numpy()))
            assert ref.lse_errors(tlse.float(), tlse) == pytest.approx(
                ref.lse_errors(tlse.float().double().numpy(), lse))


@pytest.mark.parametrize("causal,hq,hkv,chunk", [
    (False, 2, 2, ref.CHUNK_ELEMENTS), (True, 4, 2, 40), (True, 2, 1, 7)])
def test_attention_grad_is_the_forward_s_derivative(causal, hq, hkv, chunk):
    """attention_grad (chunked over rows and heads, GQA sums) against
    central differences of sum(attention * do), with a mask that empties
    row 0 (its gradients 0)."""
    rng = np.random.default_rng(7)
    m, n, d = 6, 9, 4
    q = rng.uniform(-1, 1, (1, hq, m, d))
    k = rng.uniform(-1, 1, (1, hkv, n, d))
    v = rng.uniform(-1, 1, (1, hkv, n, d))
    do = rng.uniform(-1, 1, (1, hq, m, d))
    scale = 0.7
    mask = lambda b, h, i, j: (i > 0) & ((j % 3) != 1)
    dq, dk, dv = ref.attention_grad(q, k, v, do, scale, causal=causal,
                                    mask=mask, chunk=chunk)
    assert not dq[:, :, 0].any()

    def loss(q_, k_, v_):
        out, _ = ref.attention(q_, k_, v_, scale, causal=causal, mask=mask)
        return float((out * do).sum())

    step = 1e-6
    for grad, which in ((dq, 0), (dk, 1), (dv, 2)):
        inputs = [q, k, v]
        numeric = np.zeros_like(grad)
        for index in np.ndindex(grad.shape):
            plus = [a.copy() for a in inputs]
            minus = [a.copy() for a in inputs]
            plus[which][index] += step
            minus[which][index] -= step
            numeric[index] = (loss(*plus) - loss(*minus)) / (2 * step)
        np.testing.assert_allclose(grad, numeric, atol=1e-7)


def test_grad_verdict_bounds_the_norm_not_the_row():
    ok = {"err": 1e-3, "row": 0.5, "finite": True}
    assert ref.grad_verdict("bf16", ok) is None
    assert "err" in ref.grad_verdict("bf16", dict(ok, err=0.1))
    assert "1.25x" in ref.grad_verdict("f16", ok, {"err": 1e-4})
    assert ref.grad_verdict("f16", dict(ok, finite=False)) == "NaN or inf"
