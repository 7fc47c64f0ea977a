#!/usr/bin/env python3
"""Times attn's backward (attn.attention_grad on the GPU) next to the
backward of PyTorch's SDPA (flash and cuDNN backends) and of compiled
FlexAttention, in one process, on the benchmark shapes of
docs/Benchmarking.md (B*N = 16384, H*D = 2048), and checks every timed
gradient first. Prints a table last and writes every row as JSON to
$OUT/backward-bench.json.

  python3 bench/backward_bench.py gpu-bundles/grad-bf16-d128-causal-bundle.json ...

Each bundle (scripts/gpu/make-bundles.sh) holds @attention (the forward,
with its logsumexp) and @attention_grad of one dtype, head dim and mask.
attn's forward gives O and L; the backward's dQ, dK and dV start as NaN
and after do_bench hold the last timed call's. The peers' gradients are
those of their own forward (autograd, retain_graph, timed alone).

Every gradient is compared with the float64 gradients of the same inputs
(reference.attention_grad, on batch 0 and up to REF_HEADS heads, which
every implementation is measured on alike): reference.grad_verdict, and
attn's also against its peer on the same inputs (SDPA flash; Flex where
SDPA cannot express the mask). A gradient that fails prints FAIL and why
in place of its time, and the script exits 1. Backward FLOPs are 2.5 times
the forward's 4 B H N^2 D, counting only the pairs the mask keeps
(useful TFLOP/s).
"""

import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(__file__))
import reference  # noqa: E402
from bench_peers import DTYPES, MASK_SPECS, MASKS, bench, shapes  # noqa: E402
from gpu_check import attn  # noqa: E402

REF_HEADS = 4
GRADS = ("dq", "dk", "dv")
PEERS = ("flash", "cudnn", "flex")
LABELS = {"attn": "attn", "flash": "SDPA flash", "cudnn": "SDPA cuDNN",
          "flex": "Flex"}


def describe(kernel):
    """(dtype name, D, mask kind) of the bundle's forward."""
    shape, name = kernel.arg_types[0]
    computes = kernel.computes[0]
    mask = (computes["mask_mod"] or {}).get("name")
    if computes.get("score_mod") or mask not in MASKS:
        sys.exit(f"backward_bench: no reference for {computes}")
    return name, shape[3], MASKS[mask] or (
        "causal" if computes["causal"] else "full")


def nan_like(t):
    return torch.full_like(t, float("nan"))


def main():
    out_dir = os.environ.get("OUT", "/tmp")
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 1000
    torch._dynamo.config.recompile_limit = 1000
    flex = torch.compile(flex_attention, dynamic=False)
    rows, failures, checked = [], 0, 0
    for path in sys.argv[1:]:
        forward = attn.Kernel(path, "attention")
        backward = attn.Kernel(path, "attention_grad")
        name, d, kind = describe(forward)
        dtype, causal = DTYPES[name], kind == "causal"
        scale = forward.computes[0]["scale"]
        spec = MASK_SPECS.get(kind)
        for b, h, n in shapes(kind, d):
            q, k, v, do = (torch.empty(b, h, n, d, device="cuda", dtype=dtype)
                           .uniform_(-1, 1) for _ in range(4))
            docs = torch.arange(n, device="cuda", dtype=torch.int32) // 512
            captures = [docs] if kind == "document512" else []
            o = torch.full_like(q, float("nan"))
            lse = torch.full((b, h, n), float("nan"), device="cuda")
            forward(q, k, v, o, lse, *captures)
            grads = [nan_like(q), nan_like(k), nan_like(v)]
            run_attn = backward.prepare(q, k, v, o, do, lse, *grads, *captures)
            mask_mod = reference.mask_mod(spec, docs) if spec else None
            if causal:
                mask_mod = lambda b_, h_, qi, kv: qi >= kv
            density = 1.0
            if mask_mod is not None:
                idx = torch.arange(n, device="cuda")
                density = mask_mod(0, 0, idx[:, None], idx[None, :]).float().mean().item()
            row = {"bundle": os.path.basename(path), "dtype": name, "D": d,
                   "mask": kind, "density": density, "B": b, "H": h, "N": n}
            times, got = {"attn": bench(run_attn)}, {"attn": grads}

            def run_peer(key, call):
                """Times the backward of `call`'s output alone; keeps the
                last timed call's gradients."""
                leaves = [t.detach().requires_grad_() for t in (q, k, v)]
                out = call(*leaves)

                def step():
                    got[key] = torch.autograd.grad(out, leaves, do,
                                                   retain_graph=True)
                step()
                times[key] = bench(step)

            if kind in ("full", "causal"):
                for key, backend in (("flash", SDPBackend.FLASH_ATTENTION),
                                     ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                    try:
                        with sdpa_kernel([backend]):
                            run_peer(key, lambda q_, k_, v_: F.scaled_dot_product_attention(
                                q_, k_, v_, is_causal=causal, scale=scale))
                    except Exception as e:  # a backend may not take this shape
                        row[key + "_error"] = repr(e)[:120]
            else:
                try:
                    block_mask = create_block_mask(mask_mod, None, None, n, n,
                                                   device="cuda")
                    run_peer("flex", lambda q_, k_, v_: flex(
                        q_, k_, v_, block_mask=block_mask, scale=scale))
                except Exception as e:
                    row["flex_error"] = repr(e)[:120]

            # The reference on batch 0's first heads, for everyone alike.
            heads = min(h, REF_HEADS)
            part = lambda t: t[:1, :heads]
            want = reference.attention_grad(
                part(q), part(k), part(v), part(do), scale,
                causal=causal or spec is not None,
                mask=reference.mask_mod(spec, docs) if spec else None)
            want = [w.to(dtype).double() for w in want]
            measured = {key: [reference.errors(part(g), w)
                              for g, w in zip(got[key], want)]
                        for key in got}
            peer = next((key for key in ("flash", "flex") if key in measured
                         and all(reference.grad_verdict(name, m) is None
                                 for m in measured[key])), None)
            for key, per_grad in measured.items():
                whys = []
                for grad, m, i in zip(GRADS, per_grad, range(3)):
                    row[f"{key}_{grad}_err"] = m["err"]
                    why = reference.grad_verdict(
                        name, m,
                        measured[peer][i] if key == "attn" and peer else None,
                        LABELS.get(peer))
                    if why:
                        whys.append(f"{grad} {why}")
                checked += 1
                if whys:
                    failures += 1
                    row[key + "_fail"] = "; ".join(whys)
                    print(f"FAIL {row['bundle']} N={n} {LABELS[key]}: "
                          f"{row[key + '_fail']}", flush=True)
                else:
                    row[key + "_ms"] = times[key]
                    row[key + "_tflops"] = (2.5 * 4.0 * b * h * n * n * d * density
                                            / times[key] / 1e9)
            rows.append(row)
            print(json.dumps(row), flush=True)
            del q, k, v, do, o, lse, grads, got, want
    json.dump(rows, open(os.path.join(out_dir, "backward-bench.json"), "w"),
              indent=1)
    print_table(rows)
    print(f"backward_bench: {checked - failures} of {checked} gradient sets "
          "match the float64 reference (bench/reference.py)"
          + (f"; {failures} FAIL, timed but not reported" if failures else ""))
    return 1 if failures else 0


def print_table(rows):
    def t(r, key):
        if key + "_fail" in r:
            return "FAIL"
        return f"{r[key + '_tflops']:.1f}" if key + "_tflops" in r else "n/a"

    def ratio(r, key):
        return (f"{r['attn_tflops'] / r[key + '_tflops']:.3f}"
                if key + "_tflops" in r and "attn_tflops" in r else "n/a")

    def errs(r, key):
        return "/".join(reference.short(r.get(f"{key}_{g}_err")) for g in GRADS)

    print("\n| dtype | D | mask | B | H | N | attn | SDPA flash | SDPA cuDNN | Flex "
          "| attn/flash | attn/cuDNN | attn/Flex | dQ/dK/dV err attn | peer |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        peer = "flash" if "flash_dq_err" in r else "flex"
        print(f"| {r['dtype']} | {r['D']} | {r['mask']} | {r['B']} | {r['H']} "
              f"| {r['N']} | {t(r, 'attn')} | {t(r, 'flash')} | {t(r, 'cudnn')} "
              f"| {t(r, 'flex')} | {ratio(r, 'flash')} | {ratio(r, 'cudnn')} "
              f"| {ratio(r, 'flex')} | {errs(r, 'attn')} | {errs(r, peer)} |")


if __name__ == "__main__":
    sys.exit(main())
