#!/usr/bin/env python3
"""Block masks built on the GPU: runs the @block_mask bundles of
scripts/gpu/make-bundles.sh (listed with their masks and sizes in
gpu-bundles/block-masks.json), checks all eight lists (kv side and q side)
against the lists of the mask evaluated everywhere by PyTorch, and times
each build with do_bench (median), checking the lists the timed calls
wrote again after timing: a case whose lists are wrong prints FAIL in
place of its time, and the script exits 1. bench_peers.py uses `build` to
hand attention bundles built with --given-block-mask their lists.

  python3 bench/block_masks.py gpu-bundles/block-masks.json
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import attn  # noqa: E402
from reference import mask_mod  # noqa: E402


def document_ids(length, size):
    """Ids of consecutive documents of `size` positions."""
    return torch.arange(length, device="cuda", dtype=torch.int32) // size


def captures(mask, length):
    """The arrays a built-in mask reads: documents of 512 positions."""
    return (document_ids(length, 512),) if mask == "document" else ()


def keep(mask, m, n, doc=None):
    """[M, N] positions a built-in mask keeps (docs/Masks.md; the mask_mod
    of bench/reference.py, which the attention checks use too)."""
    q = torch.arange(m, device="cuda")[:, None]
    kv = torch.arange(n, device="cuda")[None, :]
    try:
        return mask_mod(mask, doc)(None, None, q, kv)
    except ValueError as e:
        sys.exit(f"block_masks: {e}")


def expected_lists(case):
    """The eight lists of `case`, as attn.create_block_mask defines them:
    blocks in increasing order, 0 past each count."""
    m, n, qb, kb = (case[x] for x in ("q_len", "kv_len", "q_block",
                                      "kv_block"))
    rows, cols = -(-m // qb), -(-n // kb)
    kept = torch.zeros(rows * qb, cols * kb, dtype=torch.int32, device="cuda")
    inside = torch.zeros_like(kept)
    kept[:m, :n] = keep(case["mask"], m, n, *captures(case["mask"],
                                                      max(m, n))).int()
    inside[:m, :n] = 1
    per_block = lambda x: x.view(rows, qb, cols, kb).sum(dim=(1, 3))
    kept_count, inside_count = per_block(kept), per_block(inside)
    classes = torch.where(kept_count == 0, 0,
                          torch.where(kept_count == inside_count, 2, 1))
    lists = []
    for pattern in (classes, classes.t()):
        for kind in (1, 2):
            chosen = pattern == kind
            counts = chosen.sum(dim=1).int()
            # Chosen block indices first, in order; zeros after.
            order = torch.sort((~chosen).int(), dim=1, stable=True).indices
            indices = torch.where(
                torch.arange(pattern.shape[1], device="cuda")[None, :]
                < counts[:, None], order, 0).int()
            shape = (case["batch"], case["heads"])
            lists += [counts.expand(*shape, -1).contiguous(),
                      indices.expand(*shape, -1, -1).contiguous()]
    return lists


def build(case, bundle_dir):
    """(lists, run): eight zeroed lists and the prepared call of `case`'s
    bundle that fills them."""
    kernel = attn.Kernel(os.path.join(bundle_dir, case["bundle"]))
    lists = [torch.zeros(shape, device="cuda", dtype=torch.int32)
             for shape, _ in kernel.arg_types[:8]]
    run = kernel.prepare(*lists, *captures(case["mask"],
                                           max(case["q_len"],
                                               case["kv_len"])))
    return lists, run


def find(cases, mask, n):
    """The case of `mask` over n x n positions, or None."""
    return next((c for c in cases if c["mask"] == mask and
                 c["q_len"] == n and c["kv_len"] == n), None)


FIELDS = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks",
          "full_kv_indices", "q_num_blocks", "q_indices",
          "full_q_num_blocks", "full_q_indices")


def main():
    from triton.testing import do_bench
    manifest = sys.argv[1]
    cases = json.load(open(manifest))
    failures = 0
    print("| mask | B x H x M x N | blocks | density | lists | build ms |")
    print("|---|---|---|---|---|---|")
    for case in cases:
        lists, run = build(case, os.path.dirname(manifest))
        want = expected_lists(case)

        def differ(got):
            return [name for name, x, y in zip(FIELDS, got, want)
                    if not torch.equal(x, y)]
        run()
        torch.cuda.synchronize()
        wrong = differ(lists)
        # The lists are built in the runtime's scratch buffer, which holds
        # the last call's: a second call must give the same lists.
        again = [x.clone() for x in lists]
        run()
        torch.cuda.synchronize()
        if any(not torch.equal(x, y) for x, y in zip(again, lists)):
            wrong.append("second call differs")
        # The timed calls' lists, checked after timing: zeroed first (as
        # build hands them out), so that what is checked is what the timed
        # calls wrote.
        for x in lists:
            x.zero_()
        ms = do_bench(run, warmup=25, rep=100, return_mode="median")
        torch.cuda.synchronize()
        timed = differ(lists)
        if timed:
            wrong.append("after timing " + ", ".join(timed))
        failures += bool(wrong)
        visited = (lists[0].sum() + lists[2].sum()).item()
        density = visited / lists[1].numel()
        sizes = "x".join(str(case[x]) for x in ("batch", "heads", "q_len",
                                               "kv_len"))
        # No time for lists that are wrong.
        print(f"| {case['mask']} | {sizes} | {case['q_block']} x "
              f"{case['kv_block']} | {density:.4f} | "
              f"{'PASS' if not wrong else 'FAIL ' + ', '.join(wrong)} | "
              f"{'FAIL' if wrong else f'{ms:.4f}'} |", flush=True)
    print(f"block_masks: {len(cases) - failures} of {len(cases)} block masks "
          "match")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
