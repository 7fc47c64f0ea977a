"""Hunts a sporadic split-row failure: runs f16 [1, 2^24] (and other
split-row shapes) many times per kernel and, on a wrong result, says
where the output is wrong and what the workspace held before the launch.

usage: python3 bench/softmax_repro.py gpu-bundles REPEATS VARIANT ...
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import Driver, load_softmax, softmax_launch  # noqa: E402
import gpu_check  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16}
directory, repeats = sys.argv[1], int(sys.argv[2])
variants = sys.argv[3:]
BUNDLE = {v: "" if v == "default" else v for v in variants}  # "default": softmax-DTYPE
drv = Driver()


big = torch.empty(1 << 26, dtype=torch.float32, device="cuda")
# SOFTMAX_REPRO_RANDOM=K: K more runs per shape at random element offsets of
# x and y in the buffer (16-byte aligned x, y SOFTMAX_REPRO_YOFF elements
# off), noting any error above a tenth of the tolerance, for the shapes of
# SOFTMAX_REPRO_SHAPES (dtype:rows:N,...).
RANDOM = int(os.environ.get("SOFTMAX_REPRO_RANDOM", "0"))
# SOFTMAX_REPRO_YOFF: y's offset from a 16-byte boundary, in elements (1).
YOFF = int(os.environ.get("SOFTMAX_REPRO_YOFF", "1"))
BF16 = torch.bfloat16
for v in variants[:1] if RANDOM else []:
    kernels = {name: load_softmax(drv, directory, BUNDLE[v], name)
               for name in ("f16", "bf16")}
    gen = torch.Generator().manual_seed(1)
    shapes = os.environ.get("SOFTMAX_REPRO_SHAPES", "bf16:3:100003,f16:3:100003,f16:1:4194304")
    for name, rows, n in ((a, int(b), int(c)) for a, b, c in
                          (t.split(":") for t in shapes.split(","))):
        dtype = BF16 if name == "bf16" else DTYPES[name]
        flat = big.view(dtype)
        noted = 0
        for trial in range(RANDOM):
            offx = int(torch.randint(0, 1 << 16, (1,), generator=gen)) * 8
            offy = offx + rows * n + 8 * int(
                torch.randint(1, 1 << 12, (1,), generator=gen)) + YOFF
            x = flat[offx:offx + rows * n].view(rows, n)
            y = flat[offy:offy + rows * n].view(rows, n)
            x.copy_(torch.randn(rows, n, device="cuda").to(dtype))
            ref = torch.softmax(x.double(), dim=-1).to(dtype).double()
            go, _ = softmax_launch(drv, kernels[name], x, y)
            y.fill_(float("nan"))
            go()
            err = ((y.double() - ref).norm() / ref.norm()).item()
            if not err <= 1e-4:
                noted += 1
                print(f"NOTE {v} {name} [{rows}, {n}] x at element {offx}, "
                      f"y at {offy}: error {err:.3e}", flush=True)
        print(f"{v} {name} [{rows}, {n}]: {noted} of {RANDOM} random "
              f"placements above 1e-4", flush=True)
for v in variants:
    kernels = {name: load_softmax(drv, directory, BUNDLE[v], name)
               for name in DTYPES}
    fails = total = 0
    for name, rows, n in (("f16", 1, 1 << 24), ("f16", 2, 1 << 20),
                          ("f32", 3, 100003), ("f16", 1, 1 << 22)):
        dtype = DTYPES[name]
        for offx, offy in ((0, 0), (1, 1), (0, 1), (3, 0), (8, 72)):
            # Views into one big buffer: x first, y after it.
            flat = big.view(dtype)
            x = flat[offx:offx + rows * n].view(rows, n)
            ystart = ((offx + rows * n + 4095) // 4096) * 4096 + offy
            y = flat[ystart:ystart + rows * n].view(rows, n)
            x.copy_(torch.randn(rows, n, device="cuda").to(dtype))
            ref = torch.softmax(x.double(), dim=-1).to(dtype).double()
            go, blocks = softmax_launch(drv, kernels[name], x, y)
            allowed = 1e-6 if name == "f32" else 1e-3
            for r in range(repeats):
                ws = gpu_check._workspace[0]
                before = ws.view(torch.int32)[:2 * (rows + blocks)].count_nonzero().item()
                y.fill_(float("nan"))
                go()
                torch.cuda.synchronize()
                err = ((y.double() - ref).norm() / ref.norm()).item()
                total += 1
                if not err <= allowed:
                    fails += 1
                    ratio = (y.double() / ref).flatten()
                    bad = ((ratio - 1).abs() > 1e-2).nonzero().flatten()
                    print(f"FAIL {v} {name} [{rows}, {n}] offsets {offx},{offy} "
                          f"repeat {r}: error {err:.3e}; workspace words "
                          f"non-zero before {before}; ratio median "
                          f"{ratio.nanmedian().item():.5f}; {bad.numel()} "
                          f"elements off >1%"
                          + (f" from {bad[0].item()} to {bad[-1].item()}"
                             if bad.numel() else ""), flush=True)
    print(f"{v}: {total - fails} of {total} pass", flush=True)
