"""One benchmark row through the Python package, next to torch's SDPA, in
one process on the GPU: attn.Kernel runs a prebuilt bundle on PyTorch CUDA
tensors in place (no copies).

usage: python3 bench/python_row.py BUNDLE.json [--batch B --heads H --n N]
"""

import argparse
import math
import os
import sys

import torch

import attn

sys.path.insert(0, os.path.dirname(__file__))
import reference  # noqa: E402
from gpu_check import median_ms  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("bundle")
parser.add_argument("--batch", type=int, default=8)
parser.add_argument("--heads", type=int, default=16)
parser.add_argument("--n", type=int, default=2048)
parser.add_argument("--causal", action="store_true")
a = parser.parse_args()

kernel = attn.Kernel(a.bundle)
dims, elem = kernel.arg_types[0]
d = dims[3]
dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[elem]
shape = (a.batch, a.heads, a.n, d)
q, k, v = (torch.empty(shape, device="cuda", dtype=dtype).uniform_(-1, 1)
           for _ in range(3))
out = torch.full_like(q, float("nan"))
scale = (kernel.computes[0]["scale"] if kernel.computes
         else 1 / math.sqrt(d))


ours = median_ms(lambda: kernel(q, k, v, out), repeats=5)
last = {}


def sdpa_call():
    last["sdpa"] = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=a.causal, scale=scale)


sdpa = median_ms(sdpa_call, repeats=20)
# Both timed outputs (what the last timed call wrote or returned) against
# the float64 reference rounded to the output type (what a correctly
# rounded kernel stores), as attn-run measures: bench/reference.py.
want = reference.attention(q, k, v, scale, causal=a.causal)[0]
want = want.to(dtype).double()
theirs = reference.errors(last.pop("sdpa"), want)
mine = reference.errors(out, want)
error = mine["err"]
problems = [f"{who}: {why}" for who, why in (
    ("SDPA", reference.verdict(elem, theirs)),
    ("attn", reference.verdict(elem, mine, theirs, "SDPA"))) if why]
flops = 4.0 * a.batch * a.heads * a.n * a.n * d / (2 if a.causal else 1)
if problems:
    sys.exit(f"python row: {elem} D={d} B={a.batch} H={a.heads} N={a.n} "
             f"causal={a.causal}: FAIL, no times ({'; '.join(problems)}); "
             f"error {error:.2e}, SDPA {theirs['err']:.2e}")
print(f"python row: {elem} D={d} B={a.batch} H={a.heads} N={a.n} "
      f"causal={a.causal} on {attn.chip()}: attn (via attn.Kernel on torch "
      f"tensors) {ours:.3f} ms = {flops / ours / 1e9:.2f} TFLOP/s, error "
      f"{error:.2e}; torch SDPA {sdpa:.3f} ms = {flops / sdpa / 1e9:.2f} "
      f"TFLOP/s, error {theirs['err']:.2e}; ratio {sdpa / ours:.4f}")
