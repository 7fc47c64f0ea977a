"""attn.softmax on the GPU: correctness against a float64 reference, then
bandwidth next to torch.softmax, a torch.compile'd softmax and a
device-to-device copy, in one process.

usage: python3 bench/softmax_bench.py gpu-bundles [VARIANT ...]
  (softmax-{f32,f16,bf16} bundles made by scripts/gpu/make-bundles.sh; a
  VARIANT names softmax-VARIANT-{f32,f16,bf16} bundles, compiled with other
  pass options, measured after the default)

GB/s counts one read and one write of the M x N input (M * N = 2^26, or
2^SOFTMAX_TOTAL_LOG2; docs/Benchmarking.md); the copy reads and writes the
same bytes. Every figure is triton's do_bench median, for attn and the peers
alike, and is printed only for an output checked after timing: what the
last timed call wrote (attn's buffer, filled with NaN first) or returned
(the peers) against a float64 softmax of the same input
(gpu_check.softmax_error within reference.SOFTMAX_TOLERANCE); one that
fails prints FAIL in place of its figure, and the script exits 1.
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import attn, softmax_error, softmax_reference  # noqa: E402
from reference import SOFTMAX_TOLERANCE  # noqa: E402
from triton.testing import do_bench  # noqa: E402


def median_ms(fn):
    """triton's do_bench, the same for attn and every peer: CUDA events
    around each call, L2 flushed before each (so the cache is not measured,
    and the GPU is busy while the next launch is queued: a launch through
    Python is slower than PyTorch's), median after warm-up."""
    return do_bench(fn, warmup=25, rep=200, return_mode="median")

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
directory = sys.argv[1]
variants = [""] + sys.argv[2:]


def load(variant, name):
    """The bundle softmax[-VARIANT]-NAME in `directory`
    (scripts/gpu/make-bundles.sh)."""
    prefix = f"softmax-{variant}-{name}" if variant else f"softmax-{name}"
    return attn.Kernel(os.path.join(directory, f"{prefix}-bundle.json"))


kernels = {(variant, name): load(variant, name)
           for variant in variants for name in DTYPES}


def run(variant, name, x, y):
    """A call that queues the kernel on x -> y (the runtime's launch,
    evaluated once)."""
    return kernels[variant, name].prepare(x, y)


def workspace_dirty_words():
    """Non-zero words of the runtime's workspace: kernels leave it zeroed."""
    return int(np.count_nonzero(attn.runtime.workspace_words()))


def view(rows, n, dtype, offset):
    """A [rows, n] tensor `offset` elements into its allocation: rows then
    start at any alignment."""
    return torch.empty(rows * n + offset, dtype=dtype,
                       device="cuda")[offset:].view(rows, n)


# --- correctness -----------------------------------------------------------
CASES = ((3, 1), (5, 7), (4, 1000), (3, 1024), (2, 4097), (2, 65536),
         (3, 100003), (2, 1 << 20), (1, 1 << 24), (300, 262147),
         (3, 0), (0, 100003))  # empty rows, no rows: nothing to do


REPEATS = int(os.environ.get("SOFTMAX_CHECK_REPEATS", "20"))


def far_above_usual(name, err, allowed):
    """Whether a passing error (gpu_check.softmax_error) is far above what
    a correct kernel shows (worst f32 about 3e-7, f16/bf16 about 1e-5):
    worth a NOTE line."""
    return allowed / (2 if name == "f32" else 10) < err <= allowed


def check(variant):
    failures = cases = 0
    worst = {n: 0.0 for n in DTYPES}
    for name, dtype in DTYPES.items():
        allowed = SOFTMAX_TOLERANCE[name]
        for (rows, n), scale in ((c, s) for c in CASES
                                 for s in (1.0, 30.0, 3e3 if name == "f16" else 1e4)):
            # Misaligned input and output (the input's alignment differing
            # from the output's too) on every other case.
            x = view(rows, n, dtype, cases % 3)
            x.copy_((torch.randn(rows, n, device="cuda") * scale).to(dtype))
            if n > 3 and rows:
                x[0, ::3] = float("-inf")  # -inf entries
            if rows > 2:
                x[-1, :] = float("-inf")  # a row of -inf
            y = view(rows, n, dtype, (cases // 2) % 2)
            y.fill_(float("nan"))
            try:
                run(variant, name, x, y)()
            except RuntimeError as e:  # a launch expression's error
                if "division by zero" not in str(e):
                    raise
                cases += 1
                failures += 1
                print(f"FAIL softmax{variant and ' ' + variant} {name} "
                      f"rows={rows} N={n}: a launch expression divides by 0")
                continue
            torch.cuda.synchronize()
            err = softmax_error(y, softmax_reference(x))
            ok = err <= allowed and torch.isfinite(y).all().item()
            if ok and far_above_usual(name, err, allowed):
                print(f"NOTE softmax{variant and ' ' + variant} {name} "
                      f"rows={rows} N={n} scale={scale} offsets "
                      f"{cases % 3},{(cases // 2) % 2}: error {err:.3e}")
            cases += 1
            failures += not ok
            worst[name] = max(worst[name], err)
            if not ok:
                print(f"FAIL softmax{variant and ' ' + variant} {name} "
                      f"rows={rows} N={n} scale={scale}: error {err:.3e}")
    # Split rows again and again, alternating two inputs in one buffer: the
    # kernel's order of operations does not depend on timing, so each
    # input's output must come back bit for bit every time. A block that
    # merged another's partial before it was published (a race) would
    # merge a zero or the other input's, and change the output.
    # (dtype, rows, N, input and output offsets in elements)
    for name, rows, n, offsets in (("f16", 1, 1 << 24, (0, 0)),
                                   ("f16", 1, 1 << 24, (1, 1)),
                                   ("f16", 1, 1 << 24, (0, 1)),
                                   ("f32", 3, 100003, (0, 0)),
                                   ("bf16", 3, 100003, (8, 72)),
                                   ("f16", 5, 65539, (0, 3)),
                                   ("f16", 292, 229379, (0, 0)),
                                   ("f16", 2, 1 << 20, (1, 1))):
        dtype = DTYPES[name]
        ints = torch.int32 if name == "f32" else torch.int16
        x = view(rows, n, dtype, offsets[0])
        inputs = [torch.randn(rows, n, device="cuda").to(dtype)
                  for _ in range(2)]
        refs = [softmax_reference(a) for a in inputs]
        allowed = SOFTMAX_TOLERANCE[name]
        y = view(rows, n, dtype, offsets[1])
        go = run(variant, name, x, y)
        first = [None, None]
        for r in range(REPEATS):
            which = r % 2
            x.copy_(inputs[which])
            y.fill_(float("nan"))
            dirty = workspace_dirty_words()
            go()
            torch.cuda.synchronize()
            cases += 1
            if first[which] is None:
                first[which] = y.clone()
                err = softmax_error(y, refs[which])
                worst[name] = max(worst[name], err)
                if far_above_usual(name, err, allowed):
                    print(f"NOTE softmax{variant and ' ' + variant} {name} "
                          f"rows={rows} N={n} offsets {offsets}: error "
                          f"{err:.3e}")
                if err <= allowed:
                    continue
                failures += 1
                print(f"FAIL softmax{variant and ' ' + variant} {name} "
                      f"rows={rows} N={n} offsets {offsets}: error {err:.3e}")
                continue
            differ = (y.view(ints) != first[which].view(ints)).nonzero()
            if differ.numel():
                failures += 1
                print(f"FAIL softmax{variant and ' ' + variant} {name} "
                      f"rows={rows} N={n} offsets {offsets} repeat {r}: "
                      f"{differ.shape[0]} elements differ from the first "
                      f"launch on the same input (rows "
                      f"{differ[:, 0].unique().tolist()[:8]}), error "
                      f"{softmax_error(y, refs[which]):.3e}; workspace "
                      f"words non-zero before: {dirty}; x at "
                      f"{x.data_ptr() % 4096}, y at {y.data_ptr() % 4096} "
                      f"(mod 4096)")
    zeroed = workspace_dirty_words() == 0
    if not zeroed:
        failures += 1
        print("FAIL the kernels left the workspace non-zero")
    print(f"softmax{variant and ' ' + variant} correctness: "
          f"{cases - failures} of {cases} cases pass "
          f"(worst f32 {worst['f32']:.2e}, f16 {worst['f16']:.2e}, "
          f"bf16 {worst['bf16']:.2e}: error beyond rounding, "
          f"gpu_check.softmax_error; tolerance 1e-6 f32, 1e-3 f16/bf16; "
          f"workspace left zeroed: {zeroed})", flush=True)
    return failures


# SOFTMAX_CHECK=0 skips the correctness round (exploratory timing only: a
# figure quoted anywhere comes from a round that checked); the timed
# outputs below are checked either way.
failures = (sum(check(v) for v in variants)
            if os.environ.get("SOFTMAX_CHECK", "1") != "0" else 0)

# --- bandwidth ---------------------------------------------------------------
# Row lengths; SOFTMAX_BENCH_N="98304,100003" measures others.
SIZES = [int(n) for n in os.environ.get(
    "SOFTMAX_BENCH_N", "1024,1000,4096,16384,65536,100003,262144,1048576").split(",")]
# M * N = 2^26 (docs/Benchmarking.md); SOFTMAX_TOTAL_LOG2=28 measures 4x the bytes
# (what a fixed cost per launch, a ramp or a tail, weighs).
TOTAL_LOG2 = int(os.environ.get("SOFTMAX_TOTAL_LOG2", "26"))
# SOFTMAX_PEERS=0 leaves torch.softmax and torch.compile out (faster A/B).
PEERS = os.environ.get("SOFTMAX_PEERS", "1") != "0"
compiled = torch.compile(lambda t: torch.softmax(t, dim=-1))
rows_out = []


def checked(row, key, y, ref, name, gbs):
    """Stores the error of output y (what the last timed call wrote or
    returned) against the float64 softmax `ref` as row[key + "_err"], and
    gbs as row[key + "_gbs"] only if the error is within
    SOFTMAX_TOLERANCE[name]: otherwise row[key + "_fail"], a FAIL line and
    no figure. Returns 1 for a failure."""
    err = softmax_error(y, ref)
    row[key + "_err"] = err
    allowed = SOFTMAX_TOLERANCE[name]
    if err <= allowed and torch.isfinite(y).all().item():
        row[key + "_gbs"] = gbs
        return 0
    row[key + "_fail"] = f"error {err:.2e} > {allowed:.0e}"
    print(f"FAIL {key} {name} M={row['M']} N={row['N']} (timed): "
          f"{row[key + '_fail']}", flush=True)
    return 1


# Every figure is of a call whose output is checked after timing: the
# output buffer (attn, filled with NaN first) or the tensor the last timed
# call returned (the peers) against a float64 softmax of the same input.
for name in ("f32", "f16"):
    dtype = DTYPES[name]
    total = 1 << TOTAL_LOG2
    x0 = torch.randn(total, device="cuda").to(dtype)
    y0 = torch.empty_like(x0)
    copy_ms = median_ms(lambda: y0.copy_(x0))
    bytes_moved = 2 * total * x0.element_size()
    copy = bytes_moved / copy_ms / 1e6
    if not torch.equal(y0, x0):
        failures += 1
        print(f"FAIL copy {name}: the copy differs from its input")
        copy = float("nan")
    for n in SIZES:
        m = total // n
        x = x0[: m * n].view(m, n)
        y = torch.empty_like(x)
        ref = softmax_reference(x)
        moved = 2 * m * n * x.element_size()
        row = {"dtype": name, "N": n, "M": m, "copy_gbs": copy}
        for variant in variants:
            y.fill_(float("nan"))
            ours = median_ms(run(variant, name, x, y))
            torch.cuda.synchronize()
            failures += checked(row, f"attn{variant and '_' + variant}", y,
                                ref, name, moved / ours / 1e6)
        if PEERS:
            last = {}

            def eager():
                last["torch"] = torch.softmax(x, dim=-1)

            def comp():
                last["compiled"] = compiled(x)
            ms = median_ms(eager)
            torch.cuda.synchronize()
            failures += checked(row, "torch", last.pop("torch"), ref, name,
                                moved / ms / 1e6)
            try:
                ms = median_ms(comp)
                torch.cuda.synchronize()
                failures += checked(row, "compiled", last.pop("compiled"),
                                    ref, name, moved / ms / 1e6)
            except Exception as e:  # noqa: BLE001
                print(f"torch.compile failed for N={n}: {e}")
        if "attn_gbs" in row:
            row["attn_of_copy"] = row["attn_gbs"] / copy
        del ref
        rows_out.append(row)
        print(json.dumps(row), flush=True)


def cell(r, key, fmt="{:.0f}"):
    """A figure, FAIL for an output that failed its check, nan for none
    (SOFTMAX_PEERS=0, or torch.compile failed)."""
    if key + "_fail" in r:
        return "FAIL"
    return fmt.format(r.get(key + "_gbs", float("nan")))


errs = ["attn"] + [f"attn_{v}" for v in variants[1:]] + ["torch", "compiled"]
print("\n| dtype | N | M | attn GB/s | torch.softmax | torch.compile | copy | "
      "attn/copy |" + "".join(f" {v} |" for v in variants[1:])
      + " err " + "/".join(["attn"] + variants[1:] + ["torch", "compile"])
      + " |")
print("|---|---|---|---|---|---|---|---|" + "---|" * (len(variants) - 1)
      + "---|")
for r in rows_out:
    print(f"| {r['dtype']} | {r['N']} | {r['M']} | {cell(r, 'attn')} | "
          f"{cell(r, 'torch')} | {cell(r, 'compiled')} | "
          f"{r['copy_gbs']:.0f} | "
          + (f"{r['attn_of_copy']:.2f}" if "attn_of_copy" in r else "n/a")
          + " |"
          + "".join(f" {cell(r, k)} ({r[k + '_gbs'] / r['copy_gbs']:.2f}) |"
                    if k + "_gbs" in r else f" {cell(r, k)} |"
                    for k in errs[1:len(variants)])
          + " " + "/".join(f"{r[k + '_err']:.1e}" if k + "_err" in r
                           else "-" for k in errs) + " |")
print("softmax_bench: every figure above checked after timing "
      "(gpu_check.softmax_error; tolerance 1e-6 f32, 1e-3 f16/bf16)"
      + (f"; {failures} FAIL" if failures else ""))
sys.exit(1 if failures else 0)
