#!/usr/bin/env python3
"""Runs each benchmark bundle's function a few times at one length, on the
benchmark shapes of bench_peers.py, so that a profiler can time its kernels
one by one (scripts/gpu/kernel-times.sh: the block-mask build next to the
attention kernel).

  python3 bench/kernel_times.py N gpu-bundles/bench-bf16-d128-window1024-bundle.json
"""

import json
import os
import sys

import torch

import block_masks
from bench_peers import DTYPES, MASK_SPECS, describe, attn


def main():
    n = int(sys.argv[1])
    for path in sys.argv[2:]:
        kernel = attn.Kernel(path)
        name, d, kind = describe(kernel)
        b, h = max(1, 16384 // n), 2048 // d
        q, k, v = (torch.empty(b, h, n, d, device="cuda",
                               dtype=DTYPES[name]).uniform_(-1, 1)
                   for _ in range(3))
        args = [q, k, v, torch.empty_like(q)]
        if kind == "document512":
            args.append(torch.arange(n, device="cuda", dtype=torch.int32) // 512)
        steps = []
        if len(kernel.arg_types) == len(args) + 4:
            # Built with --given-block-mask: its @block_mask bundle first.
            manifest = os.path.join(os.path.dirname(path), "block-masks.json")
            case = block_masks.find(json.load(open(manifest)),
                                    MASK_SPECS[kind], n)
            lists, build = block_masks.build(case, os.path.dirname(manifest))
            args += lists[:4]
            steps.append(build)
        steps.append(kernel.prepare(*args))
        for _ in range(5):
            for step in steps:
                step()
        torch.cuda.synchronize()
        print(f"{path}: ran 5 times at N = {n}", flush=True)


if __name__ == "__main__":
    main()
