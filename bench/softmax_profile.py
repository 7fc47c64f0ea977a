"""One attn.softmax launch per (dtype, N) at M * N = 2^26, for a profiler:

  ncu --kernel-name softmax_kernel python3 bench/softmax_profile.py \
      gpu-bundles f32:4096 f16:1048576 sv8-f16:65536 ...

A name is a bundle's: softmax-NAME-bundle.json; its dtype is its last part.
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import Driver, evaluate, kernel_params, reserve_workspace  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
directory = sys.argv[1]
drv = Driver()
for case in sys.argv[2:]:
    name, n = case.split(":")
    n = int(n)
    with open(os.path.join(directory, f"softmax-{name}-bundle.json")) as f:
        bundle = json.load(f)
    with open(os.path.join(directory, bundle["binaries"][0]["file"]), "rb") as f:
        module = drv.load(f.read() + b"\0")
    launch = bundle["functions"][0]["launches"][0]
    fn = drv.function(module, launch["kernel"])
    m = (1 << 26) // n
    x = torch.randn(m, n, device="cuda").to(DTYPES[name.split("-")[-1]])
    y = torch.empty_like(x)
    args = [x, y]
    reserve_workspace(evaluate(launch.get("workspace_bytes", "0"), args))
    drv.launch(fn, [evaluate(e, args) for e in launch["grid"]],
               [evaluate(e, args) for e in launch["block"]],
               kernel_params(launch["operands"], args),
               evaluate(launch.get("shared_memory_bytes", "0"), args))
    torch.cuda.synchronize()
    print(case, "launched", flush=True)
