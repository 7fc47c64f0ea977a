"""Looks for races in rows split across blocks: places x and y at random
16-byte aligned offsets of one buffer (y YOFF elements off a 16-byte
boundary), runs input A, then B, then A again in the same place, and
requires A's two outputs to be equal bit for bit (the kernel's order of
operations does not depend on timing: a block that merged a partial before
it was published would merge a zero or B's) and within the tolerance of
gpu_check.softmax_error.

usage: python3 bench/softmax_repro.py gpu-bundles TRIALS [VARIANT]
  SOFTMAX_REPRO_SHAPES=dtype:rows:N,... (default below)
  SOFTMAX_REPRO_YOFF=elements (1)
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import (Driver, load_softmax, softmax_error,  # noqa: E402
                       softmax_launch, softmax_reference)

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
directory, trials = sys.argv[1], int(sys.argv[2])
variant = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "default" else ""
shapes = os.environ.get("SOFTMAX_REPRO_SHAPES",
                        "bf16:3:100003,f16:3:100003,f16:1:4194304,f16:5:65539")
yoff = int(os.environ.get("SOFTMAX_REPRO_YOFF", "1"))
drv = Driver()
kernels = {name: load_softmax(drv, directory, variant, name)
           for name in DTYPES}
big = torch.empty(1 << 26, dtype=torch.float32, device="cuda")
gen = torch.Generator().manual_seed(1)
total_failures = 0
for name, rows, n in ((a, int(b), int(c)) for a, b, c in
                      (t.split(":") for t in shapes.split(","))):
    dtype = DTYPES[name]
    ints = torch.int32 if name == "f32" else torch.int16
    allowed = 1e-6 if name == "f32" else 1e-3
    flat = big.view(dtype)
    failures = worst = 0
    for trial in range(trials):
        offx = int(torch.randint(0, 1 << 16, (1,), generator=gen)) * 8
        offy = offx + rows * n + 8 * int(
            torch.randint(1, 1 << 12, (1,), generator=gen)) + yoff
        x = flat[offx:offx + rows * n].view(rows, n)
        y = flat[offy:offy + rows * n].view(rows, n)
        a, b = (torch.randn(rows, n, device="cuda").to(dtype) for _ in "ab")
        go, _ = softmax_launch(drv, kernels[name], x, y)
        outputs = []
        for source in (a, b, a):
            x.copy_(source)
            y.fill_(float("nan"))
            go()
            outputs.append(y.clone())
        err = softmax_error(outputs[0], softmax_reference(a))
        worst = max(worst, err)
        same = torch.equal(outputs[0].view(ints), outputs[2].view(ints))
        if not (err <= allowed and same):
            failures += 1
            print(f"FAIL softmax{variant and ' ' + variant} {name} "
                  f"[{rows}, {n}] x at element {offx}, y at {offy}: error "
                  f"{err:.3e}, same output again: {same}", flush=True)
    total_failures += failures
    print(f"softmax{variant and ' ' + variant} {name} [{rows}, {n}]: "
          f"{trials - failures} of {trials} random placements pass (worst "
          f"error {worst:.2e})", flush=True)
sys.exit(1 if total_failures else 0)
