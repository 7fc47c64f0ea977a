#!/usr/bin/env python3
"""How long a kernel takes to compile: attn's ahead-of-time compile next to
FlexAttention's first call.

    python3 bench/compile_time.py attn [--runs 5] [--chip sm_90a]
        On the build machine: for each variant below, the wall time of
        `attn-opt X.mlir --attn-lower-to-nvvm=chip=CHIP
        --attn-write-kernel-bundle=...` (attention IR to a written bundle,
        the process included), median of --runs runs. One compiled bundle
        serves every B, H and sequence length.

    python3 bench/compile_time.py flex [--runs 3]
        On the GPU machine (PyTorch): for the same variants, the wall time
        of compiled FlexAttention's first call (create_block_mask where
        there is a mask, then torch.compile(flex_attention) on B=2, H=16,
        N=4096), each run a fresh process with an empty Inductor cache, and
        of its next call at a new length (N=8192), which compiles again.

Both print a Markdown table (docs/Performance.md, "Compile time").
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, dtype, head dim, attn-run's mask flags (causal is the attribute).
VARIANTS = [
    ("f16 D=64", "f16", 64, []),
    ("bf16 D=128", "bf16", 128, []),
    ("bf16 D=128 causal", "bf16", 128, ["--causal"]),
    ("bf16 D=128 window 1024", "bf16", 128, ["--mask=sliding-window:1024"]),
    ("bf16 D=128 documents", "bf16", 128, ["--mask=document"]),
    ("bf16 D=256 causal", "bf16", 256, ["--causal"]),
]


def attn_times(args):
    build = os.path.join(ROOT, args.build, "bin")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, dtype, d, flags in VARIANTS:
            source = os.path.join(tmp, "variant.mlir")
            with open(source, "w") as f:
                subprocess.run([os.path.join(build, "attn-run"), "--emit-variant",
                                f"--dtype={dtype}", f"--head-dim={d}", *flags],
                               stdout=f, check=True)
            command = [os.path.join(build, "attn-opt"), source,
                       f"--attn-lower-to-nvvm=chip={args.chip}",
                       f"--attn-write-kernel-bundle=prefix={tmp}/out-",
                       "-o", os.devnull]
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                subprocess.run(command, check=True)
                times.append(time.perf_counter() - start)
            rows.append((name, statistics.median(times), min(times), max(times)))
    print(f"attn-opt to a written {args.chip} bundle, wall seconds, "
          f"{args.runs} runs, {os.cpu_count()} CPUs:\n")
    print("| kernel | median | min | max |")
    print("|---|---|---|---|")
    for name, median, low, high in rows:
        print(f"| {name} | {median:.2f} | {low:.2f} | {high:.2f} |")


FLEX_RUN = r"""
import sys, time, torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention
dtype, d, flags = getattr(torch, sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
flex = torch.compile(flex_attention, dynamic=False)

def call(n):
    q, k, v = (torch.randn(2, 16, n, d, device="cuda", dtype=dtype)
               for _ in range(3))
    docs = torch.arange(n, device="cuda") // 512
    masks = {"--causal": lambda b, h, qi, kv: qi >= kv,
             "--mask=sliding-window:1024":
                 lambda b, h, qi, kv: (kv <= qi) & (qi - kv <= 1024),
             "--mask=document":
                 lambda b, h, qi, kv: (docs[qi] == docs[kv]) & (kv <= qi)}
    torch.cuda.synchronize()
    start = time.perf_counter()
    block_mask = (create_block_mask(masks[flags[0]], None, None, n, n)
                  if flags else None)
    flex(q, k, v, block_mask=block_mask)
    torch.cuda.synchronize()
    return time.perf_counter() - start

torch.zeros(1, device="cuda")  # the CUDA context is not compile time
print(call(4096), call(8192))
"""


def flex_times(args):
    rows = []
    for name, dtype, d, flags in VARIANTS:
        first, again = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache,
                           TRITON_CACHE_DIR=os.path.join(cache, "triton"))
                out = subprocess.run(
                    [sys.executable, "-c", FLEX_RUN,
                     {"f16": "float16", "bf16": "bfloat16"}[dtype], str(d),
                     *flags],
                    env=env, check=True, capture_output=True, text=True)
            a, b = map(float, out.stdout.split()[-2:])
            first.append(a)
            again.append(b)
        rows.append((name, statistics.median(first), statistics.median(again)))
    print(f"compiled FlexAttention's first call and its call at a new length, "
          f"wall seconds, median of {args.runs} fresh processes:\n")
    print("| kernel | first call (N=4096) | new length (N=8192) |")
    print("|---|---|---|")
    for name, first, again in rows:
        print(f"| {name} | {first:.2f} | {again:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("who", choices=["attn", "flex"])
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--chip", default="sm_90a")
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    if args.who == "attn":
        args.runs = args.runs or 5
        attn_times(args)
    else:
        args.runs = args.runs or 3
        flex_times(args)


if __name__ == "__main__":
    main()
