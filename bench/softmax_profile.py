"""One attn.softmax launch per (dtype, N) at M * N = 2^26, for a profiler:

  ncu --kernel-name softmax_kernel python3 bench/softmax_profile.py \
      gpu-bundles f32:4096 f16:1048576 sv8-f16:65536 ...

A name is a bundle's: softmax-NAME-bundle.json; its dtype is its last part.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import Driver, load_softmax, softmax_launch  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
directory = sys.argv[1]
drv = Driver()
for case in sys.argv[2:]:
    name, n = case.split(":")
    n = int(n)
    kernel = load_softmax(drv, directory, "", name)
    m = (1 << 26) // n
    x = torch.randn(m, n, device="cuda").to(DTYPES[name.split("-")[-1]])
    y = torch.empty_like(x)
    softmax_launch(drv, kernel, x, y)[0]()
    torch.cuda.synchronize()
    print(case, "launched", flush=True)
