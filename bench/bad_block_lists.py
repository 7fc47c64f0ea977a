#!/usr/bin/env python3
"""Block-mask lists with out-of-range kv-block indices, through a bundle
that takes its lists as arguments (--given-block-mask): the kernels must
skip a negative or too large index as the CPU kernel does, reading nothing
outside K and V, and so give exactly the output of the lists without them.

  python3 bench/bad_block_lists.py gpu-bundles/bench-bf16-d128-window1024-given-bundle.json

The bundle's mask_mod must keep every causal position below 1024 keys
back (the sliding window of 1024 does): with N = 1024 and 128 x 128
blocks, q-block i then lists block i as partial and blocks 0 to i - 1 as
full.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import attn  # noqa: E402

N, BLOCK = 1024, 128


def lists(extra_partial, extra_full):
    """The window's lists at N = 1024, each row with `extra_*` indices
    appended (and counted)."""
    blocks = N // BLOCK
    width = blocks + max(len(extra_partial), len(extra_full))
    counts = torch.zeros(1, 1, blocks, dtype=torch.int32)
    indices = torch.zeros(1, 1, blocks, width, dtype=torch.int32)
    full_counts = torch.zeros_like(counts)
    full_indices = torch.zeros_like(indices)
    for i in range(blocks):
        partial = [i] + extra_partial
        full = list(range(i)) + extra_full
        counts[0, 0, i] = len(partial)
        indices[0, 0, i, :len(partial)] = torch.tensor(partial)
        full_counts[0, 0, i] = len(full)
        full_indices[0, 0, i, :len(full)] = torch.tensor(full)
    return [t.cuda() for t in (counts, indices, full_counts, full_indices)]


def main():
    kernel = attn.Kernel(sys.argv[1])
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, N, 128, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    expected = torch.empty_like(q)
    kernel(q, k, v, expected, *lists([], []))
    failures = 0
    for partial, full in [([-1], []), ([], [-5]), ([-(2**31)], [-1, -7]),
                          ([N // BLOCK + 3], [2**31 - 1])]:
        out = torch.full_like(q, float("nan"))
        kernel(q, k, v, out, *lists(partial, full))
        torch.cuda.synchronize()
        same = torch.equal(out, expected)
        failures += not same
        print(f"bad_block_lists partial {partial} full {full}: "
              f"{'PASS' if same else 'FAIL: output differs'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
