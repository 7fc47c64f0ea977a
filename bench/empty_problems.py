#!/usr/bin/env python3
"""Empty problems through a bundle that builds its block mask in the call
(the document mask, whose captured array is its fifth argument): a batch,
query or key length of 0 must run (nothing to launch, no workspace or
scratch to reserve) and leave every output row 0, never raise.

  python3 bench/empty_problems.py gpu-bundles/bench-bf16-d128-document512-bundle.json
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import attn  # noqa: E402


def main():
    kernel = attn.Kernel(sys.argv[1])
    failures = 0
    for b, m, n in [(1, 0, 256), (1, 256, 0), (1, 0, 0), (0, 128, 128)]:
        def rows(length):
            return torch.randn(b, 2, length, 128, device="cuda",
                               dtype=torch.bfloat16)
        q, k, v = rows(m), rows(n), rows(n)
        out = torch.full((b, 2, m, 128), float("nan"), device="cuda",
                         dtype=torch.bfloat16)
        documents = torch.zeros(max(m, n, 1), device="cuda", dtype=torch.int32)
        try:
            kernel(q, k, v, out, documents)
            torch.cuda.synchronize()
            result = "PASS" if bool((out == 0).all()) else "FAIL: output not 0"
        except Exception as e:  # the failure this check exists to report
            result = f"FAIL: {type(e).__name__}: {e}"
        failures += not result.startswith("PASS")
        print(f"empty_problems B={b} M={m} N={n}: {result}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
