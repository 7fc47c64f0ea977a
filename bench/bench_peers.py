#!/usr/bin/env python3
"""Times attn's kernels next to PyTorch's SDPA (flash and cuDNN backends) and
compiled FlexAttention, in one process, on the benchmark shapes of
docs/Benchmarking.md: B*N = 16384, H*D = 2048, N in {512, ..., 16384}.
Prints a table last and writes every row as JSON to $OUT/bench-peers.json.

  python3 bench/bench_peers.py gpu-bundles/bench-bf16-d128-causal-bundle.json ...

The bundles come from scripts/gpu/make-bundles.sh; what each computes
(dtype, D, causal, its mask) is read from it (attn.Kernel).
"""

import json
import math
import os
import re
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

sys.path.insert(0, os.path.dirname(__file__))
import block_masks  # noqa: E402
from gpu_check import attn  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
# The bundle's mask_mod by name -> the mask this benchmark gives Flex.
MASKS = {None: None, "sliding-window:1024": "window1024",
         "document": "document512"}
MASK_SPECS = {kind: spec for spec, kind in MASKS.items() if spec}


def describe(kernel):
    """(dtype name, D, mask kind) of a benchmark bundle, as it records
    them."""
    shape, name = kernel.arg_types[0]
    computes = kernel.computes[0]
    mask = (computes["mask_mod"] or {}).get("name")
    if mask not in MASKS:
        sys.exit(f"bench_peers: no FlexAttention mask for mask_mod {mask}")
    kind = MASKS[mask] or ("causal" if computes["causal"] else "full")
    return name, shape[3], kind


def main():
    out_dir = os.environ.get("OUT", "/tmp")
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 1000
    torch._dynamo.config.recompile_limit = 1000
    flex = torch.compile(flex_attention, dynamic=False)
    rows = []
    for path in sys.argv[1:]:
        kernel = attn.Kernel(path)
        name, d, kind = describe(kernel)
        dtype, causal = DTYPES[name], kind == "causal"
        lengths = ((512, 1024, 2048, 4096, 8192, 16384)
                   if kind in ("causal", "full") else (2048, 8192))
        for n in lengths:
            b, h = max(1, 16384 // n), 2048 // d
            q, k, v = (torch.empty(b, h, n, d, device="cuda", dtype=dtype).uniform_(-1, 1)
                       for _ in range(3))
            o = torch.empty_like(q)
            args = [q, k, v, o]
            docs = torch.arange(n, device="cuda", dtype=torch.int32) // 512
            if kind == "document512":
                args.append(docs)  # the captured document ids
            attn_mask_ms = None
            if len(kernel.arg_types) == len(args) + 4:
                # Built with --given-block-mask: the lists come from the
                # @block_mask bundle of the same mask and length, timed
                # apart, as Flex's create_block_mask is.
                manifest = os.path.join(os.path.dirname(path),
                                        "block-masks.json")
                case = block_masks.find(json.load(open(manifest)),
                                        MASK_SPECS[kind], n)
                if case is None:
                    sys.exit(f"bench_peers: no block mask of {kind} at {n}")
                lists, build = block_masks.build(case,
                                                 os.path.dirname(manifest))
                build()
                args += lists[:4]
                attn_mask_ms = do_bench(build, warmup=25, rep=100,
                                        return_mode="median")
            run_attn = kernel.prepare(*args)
            # Masks as attn-run builds them (and as FlexAttention gets them):
            # causal; causal within 1024 keys; causal within 512-token documents.
            if kind == "causal":
                mask_mod = lambda b_, h_, qi, kv: qi >= kv
            elif kind == "window1024":
                mask_mod = lambda b_, h_, qi, kv: (qi >= kv) & (qi - kv < 1024)
            elif kind == "document512":
                mask_mod = lambda b_, h_, qi, kv: (docs[qi] == docs[kv]) & (qi >= kv)
            else:
                mask_mod = None
            if mask_mod is None:
                density = 1.0
            else:
                idx = torch.arange(n, device="cuda")
                density = mask_mod(0, 0, idx[:, None], idx[None, :]).float().mean().item()
            flops = 4.0 * b * h * n * n * d * density  # useful FLOPs
            row = {"bundle": os.path.basename(path), "dtype": name, "D": d,
                   "mask": kind, "causal": causal, "density": density,
                   "B": b, "H": h, "N": n}
            row["attn_ms"] = do_bench(run_attn, warmup=25, rep=100,
                                      return_mode="median")
            if attn_mask_ms is not None:
                row["attn_mask_ms"] = attn_mask_ms
            if mask_mod is not None and kind != "causal":
                # Skipping efficiency: the same kernel family without the
                # mask, to compare useful TFLOP/s with dense TFLOP/s.
                # bench-<dtype>-d<D>-<mask>[-<variant>...]-bundle.json:
                # the dense bundle of the same dtype and D, default tiles;
                # a -ws<variant> (warp specialization) one's dense
                # -ws<variant> bundle.
                ws = re.search(r"(-ws[a-z0-9]*)-bundle\.json$", path)
                kernel_kind = ws.group(1) if ws else ""
                dense = attn.Kernel(re.sub(rf"-{kind}(-[a-z0-9]+)*-bundle",
                                           f"-full{kernel_kind}-bundle", path))
                row["dense_attn_ms"] = do_bench(dense.prepare(q, k, v, o),
                                                warmup=25, rep=100,
                                                return_mode="median")
                row["skip_efficiency"] = (density * row["dense_attn_ms"]
                                          / row["attn_ms"])
            backends = ((("flash", SDPBackend.FLASH_ATTENTION),
                         ("cudnn", SDPBackend.CUDNN_ATTENTION))
                        if kind in ("causal", "full") else ())
            for peer, backend in backends:
                try:
                    with sdpa_kernel([backend]):
                        run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        run()
                        row[peer + "_ms"] = do_bench(run, warmup=25, rep=100, return_mode="median")
                except Exception as e:  # a backend may not take this shape
                    row[peer + "_error"] = repr(e)[:120]
            try:
                mask = (create_block_mask(mask_mod, None, None, n, n, device="cuda")
                        if mask_mod is not None else None)
                if mask_mod is not None:
                    row["flex_mask_ms"] = do_bench(
                        lambda: create_block_mask(mask_mod, None, None, n, n,
                                                  device="cuda"),
                        warmup=5, rep=50, return_mode="median")
                t0 = time.time()
                run = lambda: flex(q, k, v, block_mask=mask)
                run()
                torch.cuda.synchronize()
                row["flex_first_call_s"] = time.time() - t0
                row["flex_ms"] = do_bench(run, warmup=25, rep=100, return_mode="median")
            except Exception as e:
                row["flex_error"] = repr(e)[:120]
            for key in ("attn", "flash", "cudnn", "flex"):
                if key + "_ms" in row:
                    row[key + "_tflops"] = flops / row[key + "_ms"] / 1e9
            rows.append(row)
            print(json.dumps(row), flush=True)
            del q, k, v, o
    json.dump(rows, open(os.path.join(out_dir, "bench-peers.json"), "w"), indent=1)

    print("\n| dtype | D | mask | B | H | N | attn | SDPA flash | SDPA cuDNN | Flex | attn/flash | attn/cuDNN | attn/Flex |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        def t(key):
            return f"{r[key + '_tflops']:.2f}" if key + "_tflops" in r else "n/a"

        def ratio(key):
            return (f"{r['attn_tflops'] / r[key + '_tflops']:.4f}"
                    if key + "_tflops" in r else "n/a")
        print(f"| {r['dtype']} | {r['D']} | {r['mask']} | {r['B']} | {r['H']} | {r['N']} "
              f"| {t('attn')} | {t('flash')} | {t('cudnn')} | {t('flex')} "
              f"| {ratio('flash')} | {ratio('cudnn')} | {ratio('flex')} |")

    masked = [r for r in rows if "skip_efficiency" in r]
    if masked:
        print("\n| bundle | mask | N | density | attn useful | attn dense | skipping efficiency | Flex useful | attn mask build ms | Flex mask build ms | attn/Flex |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in masked:
        dense = 4.0 * r["B"] * r["H"] * r["N"] ** 2 * r["D"] / r["dense_attn_ms"] / 1e9
        flex = r.get("flex_tflops")
        print(f"| {r['bundle']} | {r['mask']} | {r['N']} | {r['density']:.4f} | {r['attn_tflops']:.1f} "
              f"| {dense:.1f} | {r['skip_efficiency']:.3f} "
              f"| {flex:.1f} | {r.get('attn_mask_ms', float('nan')):.3f} "
              f"| {r.get('flex_mask_ms', float('nan')):.3f} "
              f"| {r['attn_tflops'] / flex:.3f} |" if flex else
              f"| {r['bundle']} | {r['mask']} | {r['N']} | {r['density']:.4f} | {r['attn_tflops']:.1f} "
              f"| {dense:.1f} | {r['skip_efficiency']:.3f} | n/a "
              f"| {r.get('attn_mask_ms', float('nan')):.3f} | n/a | n/a |")


if __name__ == "__main__":
    main()
