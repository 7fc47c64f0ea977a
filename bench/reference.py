"""Float64 references and the error rules of the GPU checks and benchmarks
(bench/gpu_check.py, bench/bench_peers.py, bench/block_masks.py,
bench/softmax_bench.py; docs/Benchmarking.md, "Correct first").

Every function here takes PyTorch tensors (on the GPU, where the scripts
run) or numpy arrays (on the CPU, where python/tests/test_bench_reference.py
checks them against a plain float64 attention); this module imports
neither library itself, so it loads without PyTorch.
"""

import math

# --- tolerances ------------------------------------------------------------

# Attention: relative Frobenius error against the float64 reference rounded
# to the output type (what a correctly rounded kernel stores). f16's 2e-3 is
# about four units of its roundoff (2^-11); bf16's 1.6e-2 allows P entering
# P V in bf16 on the tensor cores, as FlashAttention does, which costs up to
# about one unit of bf16's roundoff (2^-8); attn_runtime::attentionTolerance.
TOLERANCE = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}
# The worst row's relative error (one query row of one batch and head, over
# its Dv values) may read ROW_FACTOR times TOLERANCE. The worst row of a
# correct kernel reads 1.5 to 2.5 times its Frobenius error (the same
# roundings, measured over Dv values: SDPA's flash backend and a
# FlashAttention-style P rounding alike, bf16 and f16, N = 2048 and 4096 on
# the CPU), far under the bound; a wrong row (a q-tile never written, a
# kv-tile skipped, a mask off by one key) reads 0.05 to 1. At N = 16384 one wrong row in 2^18 moves the
# Frobenius error by only 2e-3, under bf16's tolerance: the row measure
# catches what the norm averages away.
ROW_FACTOR = 4
# attn next to a peer on the same inputs (SDPA's flash backend; where SDPA
# cannot express the problem, FlexAttention or a float32 kernel rounded as
# attn's is): attn's Frobenius error may be at most PEER_FACTOR times the
# peer's plus PEER_FLOOR, half the output type's unit roundoff (two
# kernels' roundings differ, and on small or sharply peaked outputs a few
# of them decide the error: a correct kernel must not fail a peer that
# happened to round luckier, down to an error of 0). Both
# round P to the input type before P V, so a correct kernel errs as the
# peer does; a fixed bound as loose as bf16's TOLERANCE would pass an error
# seven times theirs.
PEER_FACTOR = 1.25
PEER_FLOOR = {"f32": 2.0**-25, "f16": 2.0**-12, "bf16": 2.0**-9}

# Softmax: gpu_check.softmax_error (the error beyond what storing in the
# output type must cost).
SOFTMAX_TOLERANCE = {"f32": 1e-6, "f16": 1e-3, "bf16": 1e-3}

# Score elements in one chunk of the reference (float64: 512 MiB; the
# chunk's temporaries take a few times that).
CHUNK_ELEMENTS = 1 << 26


# --- array libraries ---------------------------------------------------------

class _Library:
    """What numpy and PyTorch spell alike, on `self.lib`."""

    def exp(self, x):
        return self.lib.exp(x)

    def log(self, x):
        return self.lib.log(x)

    def sqrt(self, x):
        return self.lib.sqrt(x)

    def isinf(self, x):
        return self.lib.isinf(x)

    def isfinite(self, x):
        return self.lib.isfinite(x)


class _Numpy(_Library):
    def __init__(self):
        import numpy
        self.np = self.lib = numpy

    def f64(self, x):
        return self.np.asarray(x, dtype=self.np.float64)

    def arange(self, n, like):
        return self.np.arange(n)

    def zeros(self, shape, like):
        return self.np.zeros(shape, self.np.float64)

    def full(self, shape, value, like):
        return self.np.full(shape, value, self.np.float64)

    def transpose(self, x):
        return self.np.swapaxes(x, -1, -2)

    def rowmax(self, x):
        return x.max(axis=-1, keepdims=True)

    def sum(self, x, axis=None, keepdims=False):
        return x.sum(axis=axis, keepdims=keepdims)

    def where(self, c, a, b):
        return self.np.where(c, a, b)

    def item(self, x):
        return float(x)

    def size(self, x):
        return int(x.size)

    def all(self, x):
        return bool(self.np.all(x))

    def equal(self, a, b):
        return bool(self.np.array_equal(a, b))


class _Torch(_Library):
    def __init__(self, torch):
        self.torch = self.lib = torch

    def f64(self, x):
        return x.double()

    def arange(self, n, like):
        return self.torch.arange(n, device=like.device)

    def zeros(self, shape, like):
        return self.torch.zeros(shape, dtype=self.torch.float64,
                                device=like.device)

    def full(self, shape, value, like):
        return self.torch.full(shape, value, dtype=self.torch.float64,
                               device=like.device)

    def transpose(self, x):
        return x.transpose(-1, -2)

    def rowmax(self, x):
        return x.amax(dim=-1, keepdim=True)

    def sum(self, x, axis=None, keepdims=False):
        return (x.sum() if axis is None
                else x.sum(dim=axis, keepdim=keepdims))

    def where(self, c, a, b):
        t = self.torch
        like = next(x for x in (a, b, c) if isinstance(x, t.Tensor))
        a, b = (x if isinstance(x, t.Tensor)
                else t.tensor(x, dtype=t.float64, device=like.device)
                for x in (a, b))
        return t.where(c, a, b)

    def item(self, x):
        return float(x.item())

    def size(self, x):
        return x.numel()

    def all(self, x):
        return bool(x.all().item())

    def equal(self, a, b):
        return bool(self.torch.equal(a, b))


def _ops(x):
    """The operations for x's library: PyTorch for a tensor, else numpy."""
    module = type(x).__module__
    if module.startswith("torch"):
        import torch
        return _Torch(torch)
    return _Numpy()


# --- masks -------------------------------------------------------------------

def mask_mod(spec, doc=None):
    """FlexAttention's mask_mod(b, h, q, kv) of the built-in mask `spec`
    (docs/Masks.md: "sliding-window:W", "prefix:P", "document", "sasa:W:K",
    "natten:H:W:K"), on broadcastable integer tensors or arrays: what the
    reference keeps, and what bench_peers.py gives FlexAttention. `doc`:
    the document ids that "document" captures. Raises ValueError for any
    other mask."""
    kind, *params = spec.split(":")
    try:
        params = [int(p) for p in params]
    except ValueError:
        raise ValueError(f"no reference for mask {spec}") from None
    if kind == "sliding-window" and len(params) == 1:
        w = params[0]
        return lambda b, h, q, kv: (kv <= q) & (q - kv <= w)
    if kind == "prefix" and len(params) == 1:
        p = params[0]
        return lambda b, h, q, kv: (kv <= p) | (kv <= q)
    if kind == "document" and not params:
        if doc is None:
            raise ValueError("the document mask needs its document ids")
        return lambda b, h, q, kv: (doc[q] == doc[kv]) & (kv <= q)
    if (kind, len(params)) in (("sasa", 2), ("natten", 3)):
        height, width, k = ([None] + params if kind == "sasa" else params)
        r = k // 2

        def neighbourhood(b, h, q, kv):
            cx, cy = q // width, q % width
            if kind == "natten":
                cx = cx.clip(r, height - 1 - r)
                cy = cy.clip(r, width - 1 - r)
            return (abs(cx - kv // width) <= r) & (abs(cy - kv % width) <= r)
        return neighbourhood
    raise ValueError(f"no reference for mask {spec}")


# --- attention ---------------------------------------------------------------

def _score_chunks(q, k, v, scale, causal, mask, score_mod, chunk):
    """The masked float64 scores of attention's semantics (see attention),
    chunk by chunk of batch-heads [h0, h1) and query rows [r0, r1) of at
    most `chunk` score elements: yields (h0, h1, r0, r1, kc, vc, s), kc and
    vc the chunk's heads' K and V (float64, [h1 - h0, N, D]) and s their
    scores against keys 0..top-1 (causal rows read up to r1 - 1 only),
    -inf where masked. Nothing for empty problems."""
    x = _ops(q)
    bsz, hq, m, d = q.shape
    hkv, n, dv = k.shape[1], k.shape[2], v.shape[3]
    if min(bsz, hq, m) == 0 or n == 0:
        return
    group = hq // hkv
    qf = q.reshape(bsz * hq, m, d)
    kf, vf = k.reshape(bsz * hkv, n, d), v.reshape(bsz * hkv, n, dv)
    rows = max(1, min(m, chunk // n))
    heads = max(1, min(bsz * hq, chunk // (rows * n)))
    positions = x.arange(max(m, n), q)
    for h0 in range(0, bsz * hq, heads):
        h1 = min(bsz * hq, h0 + heads)
        bh = list(range(h0, h1))
        kvh = [(i // hq) * hkv + (i % hq) // group for i in bh]
        kc, vc = x.f64(kf[kvh]), x.f64(vf[kvh])
        flat = x.arange(bsz * hq, q)[h0:h1].reshape(-1, 1, 1)
        b_idx, h_idx = flat // hq, flat % hq
        for r0 in range(0, m, rows):
            r1 = min(m, r0 + rows)
            # Causal rows r0..r1-1 read keys 0..r1-1 only.
            top = min(n, r1) if causal else n
            qi = positions[r0:r1].reshape(1, -1, 1)
            ki = positions[:top].reshape(1, 1, -1)
            s = (x.f64(qf[h0:h1, r0:r1]) @ x.transpose(kc[:, :top])) * scale
            if score_mod is not None:
                s = score_mod(s, b_idx, h_idx, qi, ki)
            keep = None
            if causal:
                keep = ki <= qi
            if mask is not None:
                kept = mask(b_idx, h_idx, qi, ki)
                keep = kept if keep is None else keep & kept
            if keep is not None:
                s = x.where(keep, s, -math.inf)
            yield h0, h1, r0, r1, kc, vc, s


def _probabilities(x, s):
    """(p, total, top): the rows' exp(s - top) with top their max (0 for a
    row with nothing kept) and their sums."""
    top = x.rowmax(s)
    safe = x.where(x.isinf(top), 0.0, top)
    p = x.exp(s - safe)
    return p, x.sum(p, axis=-1, keepdims=True), safe


def attention(q, k, v, scale, causal=False, mask=None, score_mod=None,
              chunk=CHUNK_ELEMENTS):
    """(out, lse) in float64 of attention on q [B, Hq, M, D], k [B, Hkv, N,
    D], v [B, Hkv, N, Dv] (Hq a multiple of Hkv: query head h reads kv head
    h // (Hq / Hkv)), computed on q's device in chunks of batch-heads and
    query rows of at most `chunk` score elements, so that N = 16384 fits.
    The score is q . k * scale, then score_mod(s, b, h, q, kv) where given;
    causal keeps kv <= q, mask(b, h, q, kv) (FlexAttention's mask_mod, see
    mask_mod) what it is true on. A row with nothing kept is 0 and its lse
    -inf; lse is the natural-log logsumexp of the row's scores."""
    x = _ops(q)
    bsz, hq, m, _ = q.shape
    dv = v.shape[3]
    out = x.zeros((bsz * hq, m, dv), q)
    lse = x.full((bsz * hq, m), -math.inf, q)
    for h0, h1, r0, r1, _, vc, s in _score_chunks(q, k, v, scale, causal,
                                                  mask, score_mod, chunk):
        p, total, safe = _probabilities(x, s)
        some = total > 0
        divisor = x.where(some, total, 1.0)
        out[h0:h1, r0:r1] = (p @ vc[:, :s.shape[-1]]) / divisor
        lse[h0:h1, r0:r1] = x.where(some, safe + x.log(divisor),
                                    -math.inf)[..., 0]
    return out.reshape(bsz, hq, m, dv), lse.reshape(bsz, hq, m)


def attention_grad(q, k, v, do, scale, causal=False, mask=None,
                   chunk=CHUNK_ELEMENTS):
    """(dq, dk, dv) in float64: the gradients of sum(attention(q, k, v) *
    do) (attention's semantics above, without a score_mod), from the
    float64 forward of the same inputs (its own output and logsumexp, not
    a kernel's), in the same chunks of batch-heads and query rows. Under
    GQA a kv head's dk and dv sum its query heads'. Rows with nothing kept
    contribute nothing."""
    x = _ops(q)
    bsz, hq, m, d = q.shape
    hkv, n, dv_ = k.shape[1], k.shape[2], v.shape[3]
    dq = x.zeros((bsz * hq, m, d), q)
    dk = x.zeros((bsz * hq, n, d), q)
    dv = x.zeros((bsz * hq, n, dv_), q)
    qf, dof = q.reshape(bsz * hq, m, d), do.reshape(bsz * hq, m, dv_)
    for h0, h1, r0, r1, kc, vc, s in _score_chunks(q, k, v, scale, causal,
                                                   mask, None, chunk):
        top = s.shape[-1]
        kc, vc = kc[:, :top], vc[:, :top]
        qc, doc = x.f64(qf[h0:h1, r0:r1]), x.f64(dof[h0:h1, r0:r1])
        p, total, _ = _probabilities(x, s)
        p = p / x.where(total > 0, total, 1.0)
        o = p @ vc
        dp = doc @ x.transpose(vc)
        delta = x.sum(doc * o, axis=-1, keepdims=True)
        ds = p * (dp - delta)
        dq[h0:h1, r0:r1] = (ds @ kc) * scale
        dk[h0:h1, :top] += (x.transpose(ds) @ qc) * scale
        dv[h0:h1, :top] += x.transpose(p) @ doc
    group = hq // max(hkv, 1)
    dk = dk.reshape(bsz, hkv, group, n, d).sum(2)
    dv = dv.reshape(bsz, hkv, group, n, dv_).sum(2)
    return dq.reshape(bsz, hq, m, d), dk, dv


# --- errors and verdicts -----------------------------------------------------

def errors(got, want):
    """How far output `got` (any float type, [..., rows, Dv]) is from
    `want`, the float64 reference rounded to got's type: {"err": relative
    Frobenius error, "row": the worst row's relative error (a row whose
    reference is 0 measured absolutely), "finite": no NaN or inf in got}.
    NaN and inf read as infinite errors."""
    x = _ops(got)
    finite = x.all(x.isfinite(got))
    if not finite:
        return {"err": math.inf, "row": math.inf, "finite": False}
    diff = x.f64(got) - want
    d2 = x.sum(diff * diff, axis=-1)
    w2 = x.sum(want * want, axis=-1)
    total = x.item(x.sum(w2))
    err = math.sqrt(x.item(x.sum(d2)) / (total if total > 0 else 1.0))
    row = x.sqrt(d2 / x.where(w2 > 0, w2, 1.0))
    worst = x.item(row.max()) if x.size(row) else 0.0
    return {"err": err, "row": worst, "finite": True}


def lse_errors(got, want):
    """The logsumexp `got` (f32) against the float64 reference `want`:
    {"lse_err": relative Frobenius error over the elements where want is
    finite, "lse_inf": whether got is finite exactly where want is and
    equals it (-inf) elsewhere: a NaN reads False}."""
    x = _ops(got)
    g = x.f64(got)
    finite = x.isfinite(want)
    same = (x.equal(finite, x.isfinite(g))
            and x.all((g == want) | finite))
    ref = x.where(finite, want, 0.0)
    diff = x.where(finite & x.isfinite(g), g, 0.0) - ref
    norm = x.item(x.sqrt(x.sum(ref * ref)))
    err = x.item(x.sqrt(x.sum(diff * diff))) / (norm if norm > 0 else 1.0)
    return {"lse_err": err if same else math.inf, "lse_inf": same}


def verdict(dtype, measured, peer=None, peer_name="the peer"):
    """Why `measured` (errors(), with lse_errors() merged in where there is
    a logsumexp) fails the rule for outputs of `dtype` ("f32", "f16",
    "bf16"), or None when it passes:
      every element finite (outputs start as NaN: one never written fails);
      Frobenius error <= TOLERANCE[dtype]; worst row <= ROW_FACTOR times it;
      the logsumexp's error <= TOLERANCE[dtype], -inf exactly where the
        reference's is;
      with `peer` (the errors of a peer on the same inputs, which passed):
        Frobenius error <= PEER_FACTOR * the peer's + PEER_FLOOR[dtype]."""
    tol = TOLERANCE[dtype]
    if not measured.get("finite", True):
        return "NaN or inf"
    if measured["err"] > tol:
        return f"err {measured['err']:.2e} > {tol:.1e}"
    if measured["row"] > ROW_FACTOR * tol:
        return f"row err {measured['row']:.2e} > {ROW_FACTOR * tol:.1e}"
    if "lse_err" in measured:
        if not measured["lse_inf"]:
            return "lse NaN, or not -inf where the reference's is"
        if measured["lse_err"] > tol:
            return f"lse err {measured['lse_err']:.2e} > {tol:.1e}"
    if peer is not None:
        floor = PEER_FLOOR[dtype]
        if measured["err"] > PEER_FACTOR * peer["err"] + floor:
            return (f"err {measured['err']:.2e} > {PEER_FACTOR:g}x "
                    f"{peer_name}'s {peer['err']:.2e} + {floor:.1e}")
    return None


def grad_verdict(dtype, measured, peer=None, peer_name="the peer"):
    """verdict's rule for a gradient (dq, dk or dv): every element finite,
    Frobenius error <= TOLERANCE[dtype] and, with `peer`, <= PEER_FACTOR
    times the peer's + PEER_FLOOR[dtype]. The worst row is reported but
    not bounded: a key that a single query sees (the causal diagonal's
    last) has a gradient of one product, whose relative error is any
    kernel's rounding of it."""
    return verdict(dtype, dict(measured, row=0.0), peer, peer_name)


def short(value):
    """An error for a table cell: 2.61e-03, or - for none."""
    return "-" if value is None else f"{value:.2e}"
