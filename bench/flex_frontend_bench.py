#!/usr/bin/env python3
"""attn.torch.flex_attention next to compiled FlexAttention, forward and
forward + backward, through each one's PyTorch call, in one process
(do_bench medians): bf16, D = 128, H = 16, B = 16384 / N, for the masks
and score mods of bench/flex_frontend_mods.py at N = 2048 and 8192.
Flex's block mask is built before timing. Each output and gradient of
attn is compared with Flex's first (relative Frobenius error under 2e-2,
bf16), else the row prints FAIL and the script exits 1. The kernels come
from attn.cache (scripts/gpu/bench.sh frontend says how to fill it).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_peers import bench  # noqa: E402
from flex_frontend_mods import HEAD_DIM, cases  # noqa: E402

from attn.torch import flex_attention as attn_flex  # noqa: E402


class BlockMask:
    def __init__(self, mask_mod):
        self.mask_mod = mask_mod


def main():
    from torch.nn.attention.flex_attention import (create_block_mask,
                                                   flex_attention)
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 1000
    flex = torch.compile(flex_attention, dynamic=False)
    failed = False
    print("| case | N | attn fwd ms | Flex fwd ms | fwd ratio | attn fwd+bwd "
          "ms | Flex fwd+bwd ms | fwd+bwd ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (2048, 8192):
        b, h = 16384 // n, 16
        doc = (torch.arange(n, device="cuda") // 512).to(torch.int32)
        slopes = torch.exp2(-8 * torch.arange(1, h + 1, device="cuda") / h)
        for name, mask_mod, score_mod in cases(doc, slopes):
            q, k, v, do = (torch.randn(b, h, n, HEAD_DIM, device="cuda",
                                       dtype=torch.bfloat16)
                           for _ in range(4))
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            peers = [t.clone().requires_grad_() for t in (q, k, v)]
            block_mask = create_block_mask(mask_mod, None, None, n, n,
                                           device="cuda")

            def mine():
                return attn_flex(*leaves, score_mod=score_mod,
                                 block_mask=BlockMask(mask_mod))

            def theirs():
                return flex(*peers, score_mod=score_mod,
                            block_mask=block_mask)

            ours, peer = mine(), theirs()
            ours.backward(do)
            peer.backward(do)
            errors = [((x.float() - y.float()).norm() / y.float().norm()).item()
                      for x, y in [(ours, peer)] + [
                          (a.grad, p.grad) for a, p in zip(leaves, peers)]]
            if max(errors) > 2e-2:
                failed = True
                print(f"| {name} | {n} | FAIL: errors against Flex "
                      f"{['%.2e' % e for e in errors]} |", flush=True)
                continue
            with torch.no_grad():
                fwd = [bench(mine), bench(theirs)]
            both = [bench(lambda: mine().backward(do)),
                    bench(lambda: theirs().backward(do))]
            print(f"| {name} | {n} | {fwd[0]:.3f} | {fwd[1]:.3f} | "
                  f"{fwd[1] / fwd[0]:.2f} | {both[0]:.3f} | {both[1]:.3f} | "
                  f"{both[1] / both[0]:.2f} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
