#!/usr/bin/env python3
"""Times attn's kernels next to PyTorch's SDPA (flash and cuDNN backends) and
compiled FlexAttention, in one process, on the benchmark shapes of
docs/Benchmarking.md: B*N = 16384, H*D = 2048, N in {512, ..., 16384}.
Prints a table last and writes every row as JSON to $OUT/bench-peers.json.

  python3 bench/bench_peers.py gpu-bundles/bench-bf16-d128-causal-bundle.json ...

The bundles come from scripts/gpu/make-bundles.sh; what each computes
(dtype, D, causal, its mask, its scale, a logsumexp) is read from it
(attn.Kernel).

Every time printed is of a call whose output was checked (docs/
Benchmarking.md, "Correct first"): outputs start as NaN, and after
do_bench they hold the last timed call's result, which is compared with a
float64 reference of the same inputs computed on the GPU
(bench/reference.py): attn's output (and logsumexp), the dense kernel's of
a masked row, SDPA flash's, SDPA cuDNN's and Flex's, and the block-mask
lists built on the GPU. An output that fails reference.verdict prints FAIL
and why in place of its time, and the script exits 1.
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
import reference  # noqa: E402
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
    if computes.get("score_mod"):
        sys.exit(f"bench_peers: no reference for the score_mod "
                 f"{computes['score_mod']}")
    mask = (computes["mask_mod"] or {}).get("name")
    if mask not in MASKS:
        sys.exit(f"bench_peers: no FlexAttention mask for mask_mod {mask}")
    kind = MASKS[mask] or ("causal" if computes["causal"] else "full")
    return name, shape[3], kind


# What each checked output is called in a row: {key}_ms, {key}_err,
# {key}_row_err, {key}_fail.
CHECKED = ("attn", "dense_attn", "flash", "cudnn", "flex")
LABELS = {"attn": "attn", "dense_attn": "attn dense", "flash": "SDPA flash",
          "cudnn": "SDPA cuDNN", "flex": "Flex"}


def shapes(kind, d):
    """(B, H, N) of each row (docs/Benchmarking.md): B * N = 16384,
    H * D = 2048; N up to 16384 dense and causal, 2048 and 8192 masked."""
    lengths = ((512, 1024, 2048, 4096, 8192, 16384)
               if kind in ("causal", "full") else (2048, 8192))
    return [(max(1, 16384 // n), 2048 // d, n) for n in lengths]


def bench(fn, warmup=25, rep=100):
    """do_bench's median (ms), the GPU idle after it: the outputs then hold
    the last timed call's result."""
    ms = do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
    torch.cuda.synchronize()
    return ms


def outputs(kernel, q, v):
    """out (and lse, where the bundle computes one) for q, v, filled with
    NaN: an element a kernel never writes fails its check."""
    b, h, n, _ = q.shape
    o = torch.full((b, h, n, v.shape[3]), float("nan"), device="cuda",
                   dtype=q.dtype)
    lse = (torch.full((b, h, n), float("nan"), device="cuda")
           if "lse" in kernel.arg_names else None)
    return o, lse


def measure(o, lse, want):
    """reference.errors (and lse_errors) of o (and lse) against want, the
    reference's (rounded out, lse)."""
    measured = reference.errors(o, want[0])
    if lse is not None:
        measured.update(reference.lse_errors(lse, want[1]))
    return measured


def expected(q, k, v, scale, causal, mask, dtype):
    """The float64 reference of these inputs, out rounded to the output
    type (what a correctly rounded kernel stores), lse as is."""
    ro, rl = reference.attention(q, k, v, scale, causal=causal, mask=mask)
    return ro.to(dtype).double(), rl


def main():
    out_dir = os.environ.get("OUT", "/tmp")
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 1000
    torch._dynamo.config.recompile_limit = 1000
    flex = torch.compile(flex_attention, dynamic=False)
    rows = []
    failures = checked = 0
    for path in sys.argv[1:]:
        kernel = attn.Kernel(path)
        name, d, kind = describe(kernel)
        dtype, causal = DTYPES[name], kind == "causal"
        scale = kernel.computes[0]["scale"]
        for b, h, n in shapes(kind, d):
            q, k, v = (torch.empty(b, h, n, d, device="cuda", dtype=dtype).uniform_(-1, 1)
                       for _ in range(3))
            o, lse = outputs(kernel, q, v)
            args = [q, k, v, o] + ([lse] if lse is not None else [])
            docs = torch.arange(n, device="cuda", dtype=torch.int32) // 512
            if kind == "document512":
                args.append(docs)  # the captured document ids
            # Masks as attn-run builds them (docs/Masks.md; FlexAttention
            # gets the same mask_mod): causal; causal within 1024 keys back
            # (q - kv <= 1024); causal within 512-token documents.
            spec = MASK_SPECS.get(kind)
            if kind == "causal":
                mask_mod = lambda b_, h_, qi, kv: qi >= kv
            elif spec:
                mask_mod = reference.mask_mod(spec, docs)
            else:
                mask_mod = None
            if mask_mod is None:
                density = 1.0
            else:
                idx = torch.arange(n, device="cuda")
                density = mask_mod(0, 0, idx[:, None], idx[None, :]).float().mean().item()
            row = {"bundle": os.path.basename(path), "dtype": name, "D": d,
                   "mask": kind, "causal": causal, "density": density,
                   "B": b, "H": h, "N": n}
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
                # The lists start zeroed: those checked, and those the
                # attention then reads, are the last timed build's.
                build_ms = bench(build)
                wrong = [field for field, got, want in
                         zip(block_masks.FIELDS, lists,
                             block_masks.expected_lists(case))
                         if not torch.equal(got, want)]
                checked += 1
                if wrong:
                    failures += 1
                    row["attn_mask_fail"] = "lists differ: " + ", ".join(wrong)
                    print(f"FAIL {row['bundle']} N={n} block mask build: "
                          f"{row['attn_mask_fail']}", flush=True)
                else:
                    row["attn_mask_ms"] = build_ms
                args += lists[:4]
            run_attn = kernel.prepare(*args)
            flops = 4.0 * b * h * n * n * d * density  # useful FLOPs
            times, measured = {}, {}
            times["attn"] = bench(run_attn)
            # The reference: the bundle's causal flag and mask (both
            # benchmark masks keep only kv <= q, so the reference reads
            # only the keys up to each chunk's last row).
            want = expected(q, k, v, scale, causal or spec is not None,
                            reference.mask_mod(spec, docs) if spec else None,
                            dtype)
            measured["attn"] = measure(o, lse, want)
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
                od, dense_lse = outputs(dense, q, v)
                times["dense_attn"] = bench(dense.prepare(
                    q, k, v, od, *([dense_lse] if dense_lse is not None else [])))
                measured["dense_attn"] = measure(
                    od, dense_lse, expected(q, k, v, dense.computes[0]["scale"],
                                            False, None, dtype))
                del od, dense_lse
            backends = ((("flash", SDPBackend.FLASH_ATTENTION),
                         ("cudnn", SDPBackend.CUDNN_ATTENTION))
                        if kind in ("causal", "full") else ())
            result = {}
            for peer, backend in backends:
                try:
                    with sdpa_kernel([backend]):
                        def run(peer=peer):
                            result[peer] = F.scaled_dot_product_attention(
                                q, k, v, is_causal=causal, scale=scale)
                        run()
                        times[peer] = bench(run)
                    measured[peer] = measure(result.pop(peer), None, want)
                except Exception as e:  # a backend may not take this shape
                    row[peer + "_error"] = repr(e)[:120]
            try:
                block_mask = None
                if mask_mod is not None:
                    def make():
                        result["mask"] = create_block_mask(
                            mask_mod, None, None, n, n, device="cuda")
                    make()
                    times["flex_mask"] = bench(make, warmup=5, rep=50)
                    # The last timed build's: Flex's check covers it.
                    block_mask = result.pop("mask")
                t0 = time.time()

                def run():
                    result["flex"] = flex(q, k, v, block_mask=block_mask,
                                          scale=scale)
                run()
                torch.cuda.synchronize()
                row["flex_first_call_s"] = time.time() - t0
                times["flex"] = bench(run)
                measured["flex"] = measure(result.pop("flex"), None, want)
            except Exception as e:
                row["flex_error"] = repr(e)[:120]
            del want
            # attn is held to its peer on the same inputs too: SDPA flash,
            # or Flex where SDPA does not run (masks), if that one passed.
            peer = next((key for key in ("flash", "flex") if key in measured
                         and reference.verdict(name, measured[key]) is None),
                        None)
            for key in CHECKED:
                if key not in measured:
                    continue
                m = measured[key]
                row[key + "_err"], row[key + "_row_err"] = m["err"], m["row"]
                if "lse_err" in m:
                    row[key + "_lse_err"] = m["lse_err"]
                why = reference.verdict(
                    name, m, measured[peer] if key == "attn" and peer else None,
                    LABELS.get(peer))
                checked += 1
                if why:
                    failures += 1
                    row[key + "_fail"] = why
                    print(f"FAIL {row['bundle']} N={n} {LABELS[key]}: {why}",
                          flush=True)
                else:  # a time only for a checked result
                    row[key + "_ms"] = times[key]
            if "flex_ms" in row and "flex_mask" in times:
                row["flex_mask_ms"] = times["flex_mask"]
            if "attn_ms" in row and "dense_attn_ms" in row:
                row["skip_efficiency"] = (density * row["dense_attn_ms"]
                                          / row["attn_ms"])
            for key in ("attn", "flash", "cudnn", "flex"):
                if key + "_ms" in row:
                    row[key + "_tflops"] = flops / row[key + "_ms"] / 1e9
            rows.append(row)
            print(json.dumps(row), flush=True)
            del q, k, v, o, lse, result
    json.dump(rows, open(os.path.join(out_dir, "bench-peers.json"), "w"), indent=1)
    print_tables(rows)
    print(f"bench_peers: {checked - failures} of {checked} outputs match the "
          f"float64 reference (bench/reference.py)"
          + (f"; {failures} FAIL, timed but not reported" if failures else ""))
    return 1 if failures else 0


def print_tables(rows):
    def t(r, key):
        if key + "_fail" in r:
            return f"FAIL {r[key + '_fail']}"
        return f"{r[key + '_tflops']:.2f}" if key + "_tflops" in r else "n/a"

    def ratio(r, key):
        return (f"{r['attn_tflops'] / r[key + '_tflops']:.4f}"
                if key + "_tflops" in r and "attn_tflops" in r else "n/a")

    def errors(r, keys):
        return "/".join(reference.short(r.get(key + "_err")) for key in keys)

    print("\n| dtype | D | mask | B | H | N | attn | SDPA flash | SDPA cuDNN | Flex | attn/flash | attn/cuDNN | attn/Flex | err attn/flash/cuDNN/Flex |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dtype']} | {r['D']} | {r['mask']} | {r['B']} | {r['H']} | {r['N']} "
              f"| {t(r, 'attn')} | {t(r, 'flash')} | {t(r, 'cudnn')} | {t(r, 'flex')} "
              f"| {ratio(r, 'flash')} | {ratio(r, 'cudnn')} | {ratio(r, 'flex')} "
              f"| {errors(r, ('attn', 'flash', 'cudnn', 'flex'))} |")

    masked = [r for r in rows if "dense_attn_err" in r]
    if masked:
        print("\n| bundle | mask | N | density | attn useful | attn dense | skipping efficiency | Flex useful | attn mask build ms | Flex mask build ms | attn/Flex | err attn/dense/Flex |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in masked:
        dense = (f"{4.0 * r['B'] * r['H'] * r['N'] ** 2 * r['D'] / r['dense_attn_ms'] / 1e9:.1f}"
                 if "dense_attn_ms" in r else f"FAIL {r['dense_attn_fail']}")
        useful = (f"{r['attn_tflops']:.1f}" if "attn_tflops" in r
                  else f"FAIL {r['attn_fail']}")
        skip = (f"{r['skip_efficiency']:.3f}" if "skip_efficiency" in r
                else "n/a")
        flex = r.get("flex_tflops")
        build = ("FAIL" if "attn_mask_fail" in r
                 else f"{r.get('attn_mask_ms', float('nan')):.3f}")
        print(f"| {r['bundle']} | {r['mask']} | {r['N']} | {r['density']:.4f} "
              f"| {useful} | {dense} | {skip} "
              + (f"| {flex:.1f} " if flex else
                 f"| FAIL {r['flex_fail']} " if "flex_fail" in r else "| n/a ")
              + f"| {build} "
              + (f"| {r.get('flex_mask_ms', float('nan')):.3f} " if flex
                 else "| n/a ")
              + (f"| {r['attn_tflops'] / flex:.3f} " if flex and "attn_tflops" in r
                 else "| n/a ")
              + f"| {errors(r, ('attn', 'dense_attn', 'flex'))} |")


if __name__ == "__main__":
    sys.exit(main())
