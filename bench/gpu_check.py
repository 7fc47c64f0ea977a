#!/usr/bin/env python3
"""Runs attn kernel bundles on the GPU and checks them against PyTorch.

The GPU machine has CUDA and PyTorch but no MLIR: this loads a bundle
written by `attn-opt ... --attn-write-kernel-bundle` with the runtime-only
attn Python package (attn.Kernel: the runtime's reader and launcher, built
with -DATTN_RUNTIME_ONLY=ON, see scripts/gpu/round.sh), runs it on PyTorch
tensors for each problem size, and compares the output with a float64
PyTorch reference: f16/bf16 outputs may err at most 1.25 times what an
FA2-class peer errs on the same inputs, plus half a unit roundoff of the
output type (reference.verdict; SDPA flash, or a
float32 kernel that rounds P as attn does where flash cannot run the
problem). Inputs are fresh random tensors, the output is poisoned with NaN
first. The dtype, causal, the sliding window and the logsumexp come
from what the bundle records; the flags, when given, must agree with it.

  python3 bench/gpu_check.py BUNDLE_DIR/NAME-bundle.json [--causal] ...
"""

import argparse
import itertools
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import (PEER_FACTOR, PEER_FLOOR, TOLERANCE,  # noqa: E402
                       attention, errors, lse_errors, mask_mod, verdict)

try:
    import attn
except ImportError as e:
    sys.exit(f"gpu_check: cannot import attn ({e}); put the runtime-only "
             "package on PYTHONPATH (scripts/gpu/round.sh builds it)")


# --- reference -----------------------------------------------------------

# Significand bits and least normal exponent of each output type.
_FORMATS = {torch.float32: (23, -126), torch.float16: (10, -14),
            torch.bfloat16: (7, -126)}


def softmax_reference(x):
    """Softmax of x in float64; rows of only -inf are defined as 0."""
    return torch.nan_to_num(torch.softmax(x.double(), dim=-1), nan=0.0)


def softmax_error(y, ref):
    """The error of softmax output y (f32, f16 or bf16, [rows, N]) against
    the float64 reference `ref`, beyond what storing in y's type must cost:
    the larger of
      || max(|y - ref| - step(ref) / 2, 0) || / ||ref||, step(ref) the
        spacing of y's type at ref (subnormals included): 0 when every
        element is ref correctly rounded;
      each row's |sum(y) - sum(ref rounded)| less one step of its largest
        element, over sum(ref) (infinite for anything in a row of -inf,
        whose softmax is defined as 0): a scale error too small to move
        single elements past their rounding (a row sum off by 1e-3 in a
        row of subnormals) still moves the row's sum.
    A plain norm against ref rounded to y's type is no measure for long f16
    rows: their values are subnormal (one step is up to the value itself),
    and a last-bit difference of a correct f32 result moves every element
    of one input value across a rounding boundary at once (f16 [1, 2^24]:
    4e-3 from a row sum off by 1e-5)."""
    if y.numel() == 0:
        return 0.0
    bits, least = _FORMATS[y.dtype]
    _, exponent = torch.frexp(ref)  # ref = m * 2^exponent, 0.5 <= |m| < 1
    power = torch.where(ref == 0, least, (exponent - 1).clamp(min=least))
    step = torch.ldexp(torch.ones_like(ref), power - bits)
    got = y.double()
    excess = ((got - ref).abs() - step / 2).clamp(min=0)
    norm = ref.norm().item()
    elements = excess.norm().item() / (norm if norm else 1.0)
    rounded = ref.to(y.dtype).double()
    mass = ref.sum(dim=-1)
    bias = ((got - rounded).sum(dim=-1).abs() - step.max(dim=-1).values)
    bias = bias.clamp(min=0)
    # A row of -inf has no mass: anything in it is wrong.
    bias = torch.where(mass > 0, bias / torch.where(mass > 0, mass, 1.0),
                       torch.where(bias > 0, math.inf, 0.0))
    return max(elements, bias.max().item())


def reference(q, k, v, causal, window, scale):
    """float64 (out, lse) (bench/reference.py, which chunks the problem);
    the window is FlexAttention's sliding window: causal, q - kv <= W."""
    mask = mask_mod(f"sliding-window:{window}") if window else None
    return attention(q, k, v, scale, causal=causal, mask=mask)


def peer_output(q, k, v, causal, window, scale):
    """What an FA2-class kernel computes on these inputs, and its name: SDPA's
    flash backend where it can express the problem (no window, D = Dv), else
    a float32 kernel rounded as ours is (P rounded to the input type before
    P V, the row sum kept in float32)."""
    g = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    if not window and q.shape[-1] == v.shape[-1]:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        try:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(
                    q, kk, vv, is_causal=causal, scale=scale), "SDPA flash"
        except RuntimeError:  # a head dim or shape flash does not take
            pass
    s = (q.float() @ kk.float().transpose(-1, -2)) * scale
    m, n = q.shape[2], k.shape[2]
    qi = torch.arange(m, device=q.device)[:, None]
    kv = torch.arange(n, device=q.device)[None, :]
    keep = torch.ones(m, n, dtype=torch.bool, device=q.device)
    if causal or window:
        keep &= kv <= qi
    if window:
        keep &= qi - kv <= window
    s = s.masked_fill(~keep, -math.inf)
    top = s.amax(-1, keepdim=True).nan_to_num(neginf=0.0)
    p = torch.exp(s - top)
    total = p.sum(-1, keepdim=True)
    o = (p.to(q.dtype).float() @ vv.float()) / total.clamp_min(1e-30)
    return o.to(q.dtype), "float32 rounded as attn"


def median_ms(run, repeats=20, warmup=1):
    """Median of CUDA-event timings after `warmup` runs."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def bench(kernel, a, dtype, d, dv, causal, lse, scale):
    """Times the --bench shape next to SDPA, then checks both timed
    outputs (what the last timed call wrote or returned) against the
    float64 reference (reference.verdict, attn also next to SDPA): times
    only for results that pass. Returns 1 for a failure."""
    b, h, n = (int(x) for x in a.bench.split(","))
    q = torch.empty(b, h, n, d, device="cuda", dtype=dtype).uniform_(-1, 1)
    k = torch.empty(b, h, n, d, device="cuda", dtype=dtype).uniform_(-1, 1)
    v = torch.empty(b, h, n, dv, device="cuda", dtype=dtype).uniform_(-1, 1)
    o = torch.full((b, h, n, dv), float("nan"), device="cuda", dtype=dtype)
    args = [q, k, v, o]
    if lse:
        args.append(torch.full((b, h, n), float("nan"), device="cuda"))
    flops = 4.0 * b * h * n * n * d / (2 if causal else 1)
    ours = median_ms(kernel.prepare(*args), repeats=5)
    last = {}

    def sdpa_call():
        last["sdpa"] = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=scale)
    sdpa = median_ms(sdpa_call)
    ro, rl = reference(q, k, v, causal, 0, scale)
    ro = ro.to(dtype).double()
    mine = errors(o, ro)
    if lse:
        mine.update(lse_errors(args[4], rl))
    theirs = errors(last.pop("sdpa"), ro)
    name = a.dtype
    peer_ok = verdict(name, theirs) is None
    why = verdict(name, mine, theirs if peer_ok else None, "SDPA")
    shape = f"B={b} H={h} N={n} D={d} {name} causal={causal}"
    errs = f"error attn {mine['err']:.2e}, SDPA {theirs['err']:.2e}"
    problems = (([f"attn: {why}"] if why else [])
                + ([] if peer_ok else [f"SDPA: {verdict(name, theirs)}"]))
    if problems:
        print(f"bench {shape}: FAIL, no times ({'; '.join(problems)}); "
              f"{errs}")
        return 1
    print(f"bench {shape}: "
          f"attn {ours:.3f} ms ({flops / ours / 1e9:.2f} TFLOP/s), "
          f"torch SDPA {sdpa:.3f} ms ({flops / sdpa / 1e9:.2f} TFLOP/s), "
          f"ratio {sdpa / ours:.4f}; {errs}")
    return 0


def problem(kernel, a):
    """dtype, causal, window and lse of the bundle's attention, from what it
    records (attn.Kernel.computes); flags given must agree with it."""
    dtype, lse = kernel.arg_types[0][1], len(kernel.arg_types) == 5
    causal, window = a.causal, a.window
    if kernel.computes:
        c = kernel.computes[0]
        if c["op"] != "attention" or c["score_mod"]:
            sys.exit("gpu_check: the bundle computes something other than "
                     f"(masked) attention: {c}")
        mask = c["mask_mod"]
        name = (mask or {}).get("name") or ""
        recorded = (int(name.split(":")[1])
                    if name.startswith("sliding-window:") else 0)
        if mask and not recorded:
            sys.exit(f"gpu_check: no reference for the bundle's mask_mod "
                     f"{name or 'digest ' + mask['digest']}")
        if (a.causal and not c["causal"]) or (a.window and a.window != recorded):
            sys.exit(f"gpu_check: --causal/--window do not agree with the "
                     f"bundle (causal={c['causal']}, window={recorded})")
        causal, window = c["causal"], recorded
    if (a.dtype and a.dtype != dtype) or (a.lse and not lse):
        sys.exit(f"gpu_check: --dtype/--lse do not agree with the bundle "
                 f"(dtype={dtype}, lse={lse})")
    return dtype, causal, window, lse


DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--dtype", default="")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--window", type=int, default=0)
    ap.add_argument("--lse", action="store_true")
    ap.add_argument("--batch", default="1,2")
    ap.add_argument("--heads", default="4:4,8:2,8:1")
    ap.add_argument("--lens", default="1,17,64,130,257")
    ap.add_argument("--bench", default="",
                    help="B,H,N: after the checks, time this shape (Hq = "
                         "Hkv = H, M = N) next to PyTorch SDPA, and check "
                         "both timed outputs")
    a = ap.parse_args()

    kernel = attn.Kernel(a.bundle)
    name, causal, window, lse = problem(kernel, a)
    if a.bench and window:
        sys.exit("gpu_check: --bench times SDPA, which has no sliding window")
    a.dtype = name
    dtype = DTYPES[name]
    d, dv = kernel.arg_types[0][0][3], kernel.arg_types[2][0][3]
    # attn_runtime::attentionTolerance (bench/reference.py says why).
    tol = TOLERANCE[name]
    scale = (kernel.computes[0]["scale"] if kernel.computes
             else 1 / math.sqrt(d))
    torch.manual_seed(0)
    cases = failures = 0
    worst = worst_ratio = 0.0
    peers = set()
    for b, hp, m, n in itertools.product(
            [int(x) for x in a.batch.split(",")], a.heads.split(","),
            [int(x) for x in a.lens.split(",")],
            [int(x) for x in a.lens.split(",")]):
        hq, hkv = (int(x) for x in hp.split(":"))
        q = torch.randn(b, hq, m, d, device="cuda").uniform_(-1, 1).to(dtype)
        k = torch.randn(b, hkv, n, d, device="cuda").uniform_(-1, 1).to(dtype)
        v = torch.randn(b, hkv, n, dv, device="cuda").uniform_(-1, 1).to(dtype)
        o = torch.full((b, hq, m, dv), float("nan"), device="cuda", dtype=dtype)
        args = [q, k, v, o]
        if lse:
            args.append(torch.full((b, hq, m), float("nan"), device="cuda"))
        kernel(*args)
        ro, rl = reference(q, k, v, causal, window, scale)
        ro = ro.to(dtype).double()  # what a correctly rounded kernel stores
        mine = errors(o, ro)
        if lse:
            mine.update(lse_errors(args[4], rl))
        # f16/bf16: next to what an FA2-class kernel loses on these inputs
        # (reference.verdict); f32 against the tolerance alone.
        peer = None
        if name != "f32":
            out, peer_name = peer_output(q, k, v, causal, window, scale)
            peer = errors(out, ro)
            peers.add(peer_name)
            if peer["err"] > 0:
                worst_ratio = max(worst_ratio, mine["err"] / peer["err"])
        why = verdict(name, mine, peer, "the peer")
        cases += 1
        failures += why is not None
        err = max(mine["err"], mine.get("lse_err", 0.0))
        worst = max(worst, err)
        if why:
            print(f"  FAIL B={b} Hq={hq} Hkv={hkv} M={m} N={n}: {why}")
    if peers:
        print(f"gpu_check: next to {' and '.join(sorted(peers))} on the same "
              f"inputs: worst error ratio {worst_ratio:.3f} (at most "
              f"{PEER_FACTOR:g}x theirs + {PEER_FLOOR[name]:.1e})")
    bench_failed = (bench(kernel, a, dtype, d, dv, causal, lse, scale)
                    if a.bench else 0)
    print(f"gpu_check {os.path.basename(a.bundle)} dtype={name} D={d} "
          f"causal={causal} window={window}: {cases - failures} of {cases} "
          f"cases pass (worst error {worst:.3e}, tolerance {tol:.1e})")
    return 1 if failures or bench_failed else 0


if __name__ == "__main__":
    sys.exit(main())
