"""attn.softmax on the GPU: correctness against a float64 reference, then
bandwidth next to torch.softmax, a torch.compile'd softmax and a
device-to-device copy, in one process.

usage: python3 bench/softmax_bench.py gpu-bundles   (softmax-{f32,f16,bf16}
bundles made by scripts/make-gpu-bundles.sh)

GB/s counts one read and one write of the M x N input (M * N = 2^26), as
BENCHMARKS.md asks; the copy reads and writes the same bytes.
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import Driver, evaluate, kernel_params, median_ms  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
directory = sys.argv[1]
drv = Driver()
kernels = {}
for name in DTYPES:
    with open(os.path.join(directory, f"softmax-{name}-bundle.json")) as f:
        bundle = json.load(f)
    binary = bundle["binaries"][0]
    with open(os.path.join(directory, binary["file"]), "rb") as f:
        module = drv.load(f.read() + b"\0")
    launch = bundle["functions"][0]["launches"][0]
    kernels[name] = (drv.function(module, launch["kernel"]), launch)


def run(name, x, y):
    fn, launch = kernels[name]
    args = [x, y]
    grid = [evaluate(e, args) for e in launch["grid"]]
    block = [evaluate(e, args) for e in launch["block"]]
    shared = evaluate(launch.get("shared_memory_bytes", "0"), args)
    params = kernel_params(launch["operands"], args)
    return lambda: drv.launch(fn, grid, block, params, shared)


# --- correctness -----------------------------------------------------------
failures = 0
cases = 0
worst = {n: 0.0 for n in DTYPES}
for name, dtype in DTYPES.items():
    allowed = 1e-6 if name == "f32" else 1e-3
    for rows, n in ((3, 1), (5, 7), (4, 1000), (3, 1024), (2, 4097), (2, 65536),
                    (2, 1 << 20), (1, 1 << 24)):
        for scale in (1.0, 30.0, 1e4 if name != "f16" else 3e3):
            x = (torch.randn(rows, n, device="cuda") * scale).to(dtype)
            if n > 3:
                x[0, ::3] = float("-inf")  # -inf entries
            x[-1, :] = float("-inf") if rows > 2 else x[-1, :]  # a row of -inf
            y = torch.full_like(x, float("nan"))
            run(name, x, y)()
            torch.cuda.synchronize()
            ref = torch.softmax(x.double(), dim=-1)
            ref = torch.nan_to_num(ref, nan=0.0)  # all -inf rows: defined as 0
            ref = ref.to(dtype).double()  # what a correctly rounded kernel stores
            err = ((y.double() - ref).norm() / ref.norm()).item()
            ok = err <= allowed and torch.isfinite(y).all().item()
            cases += 1
            failures += not ok
            worst[name] = max(worst[name], err)
            if not ok:
                print(f"FAIL softmax {name} rows={rows} N={n} scale={scale}: "
                      f"error {err:.3e}")
print(f"softmax correctness: {cases - failures} of {cases} cases pass "
      f"(worst f32 {worst['f32']:.2e}, f16 {worst['f16']:.2e}, "
      f"bf16 {worst['bf16']:.2e}; tolerance 1e-6 f32, 1e-3 f16/bf16)",
      flush=True)

# --- bandwidth ---------------------------------------------------------------
compiled = torch.compile(lambda t: torch.softmax(t, dim=-1))
rows_out = []
for name in ("f32", "f16"):
    dtype = DTYPES[name]
    total = 1 << 26
    x0 = torch.randn(total, device="cuda").to(dtype)
    y0 = torch.empty_like(x0)
    copy_ms = median_ms(lambda: y0.copy_(x0))
    bytes_moved = 2 * total * x0.element_size()
    copy = bytes_moved / copy_ms / 1e6
    for n in (1024, 1000, 4096, 16384, 65536, 100003, 262144, 1 << 20):
        m = total // n
        x = x0[: m * n].view(m, n)
        y = torch.empty_like(x)
        moved = 2 * m * n * x.element_size()
        ours = median_ms(run(name, x, y))
        eager = median_ms(lambda: torch.softmax(x, dim=-1))
        try:
            comp = median_ms(lambda: compiled(x))
        except Exception as e:  # noqa: BLE001
            comp = float("nan")
            print(f"torch.compile failed for N={n}: {e}")
        row = {"dtype": name, "N": n, "M": m,
               "attn_gbs": moved / ours / 1e6, "torch_gbs": moved / eager / 1e6,
               "compiled_gbs": moved / comp / 1e6, "copy_gbs": copy}
        row["attn_of_copy"] = row["attn_gbs"] / copy
        rows_out.append(row)
        print(json.dumps(row), flush=True)

print("\n| dtype | N | M | attn GB/s | torch.softmax | torch.compile | copy | attn/copy |")
print("|---|---|---|---|---|---|---|---|")
for r in rows_out:
    print(f"| {r['dtype']} | {r['N']} | {r['M']} | {r['attn_gbs']:.0f} | "
          f"{r['torch_gbs']:.0f} | {r['compiled_gbs']:.0f} | "
          f"{r['copy_gbs']:.0f} | {r['attn_of_copy']:.2f} |")
sys.exit(1 if failures else 0)
