#!/usr/bin/env python3
"""Times the causal backward with learnt captured tensors, a per-head gain
and a relative-position bias (score * gain[h] + bias[h, |q - kv|], the
learnable biases FlexAttention's users train), next to compiled
FlexAttention's, in one process; and each without them (attn's plain
causal backward, Flex's with no score_mod): what learning them costs.

  python3 bench/capture_grad_bench.py gpu-bundles/grad-learned-bias-bf16-d64-bundle.json \\
      gpu-bundles/grad-bf16-d64-causal-bundle.json

The first bundle holds the learnt-bias @attention_grad
(test/Integration/Inputs/learned-bias-grad.mlir at bf16, D = 64), the
second the plain causal @attention and @attention_grad of the same dtype
and D (scripts/gpu/make-bundles.sh). O and the logsumexp the learnt-bias
backward takes are those of Flex's forward, so that both backwards see
the same inputs.

First, on one small shape, both gain and bias gradients of attn and Flex
are compared with float64 autograd on the same inputs: attn's relative
error (Frobenius) must be at most 1.25 times Flex's plus 1e-6, or the
script prints FAIL and exits 1. Times are do_bench medians.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_peers import bench  # noqa: E402
from gpu_check import attn  # noqa: E402


# Flex's tiles where its defaults need more shared memory than a block has.
SMALL_TILES = {"BLOCK_M": 64, "BLOCK_N": 64, "num_stages": 1}


def scores(q, k, gain, bias, scale):
    """score * gain[h] + bias[h, |q - kv|], causal, in q's dtype."""
    n = q.shape[2]
    idx = torch.arange(n, device=q.device)
    distance = (idx[:, None] - idx[None, :]).abs()
    s = (q @ k.transpose(-1, -2)) * scale
    s = s * gain[None, :, None, None] + bias[:, distance][None]
    return s.masked_fill(idx[None, :] > idx[:, None], float("-inf"))


def main():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 1000
    torch._dynamo.config.recompile_limit = 1000
    flex = torch.compile(flex_attention, dynamic=False)
    learnt = attn.Kernel(sys.argv[1], "attention_grad")
    plain_forward = attn.Kernel(sys.argv[2], "attention")
    plain = attn.Kernel(sys.argv[2], "attention_grad")
    shape, name = plain_forward.arg_types[0]
    d, dtype = shape[3], {"f16": torch.float16, "bf16": torch.bfloat16}[name]
    scale = learnt.computes[0]["scale"]

    def inputs(b, h, n):
        q, k, v, do = (torch.empty(b, h, n, d, device="cuda", dtype=dtype)
                       .uniform_(-1, 1) for _ in range(4))
        gain = torch.empty(h, device="cuda").uniform_(0.5, 1.5)
        bias = torch.empty(h, n, device="cuda").uniform_(-1, 1)
        return q, k, v, do, gain, bias

    def flex_call(*args, **kwargs):
        """Flex, again with smaller tiles where its defaults do not fit."""
        try:
            return flex(*args, **kwargs)
        except Exception as e:
            lines = str(e).splitlines() or [repr(e)]
            why = next((line for line in lines if "resource" in line), lines[0])
            print(f"capture_grad_bench: Flex at {tuple(args[0].shape)}: "
                  f"{why.strip()[:160]}; again with {SMALL_TILES}", flush=True)
            return flex(*args, **kwargs, kernel_options=SMALL_TILES)

    def causal_mask(n):
        return create_block_mask(lambda b, h, i, j: i >= j, None, None, n, n,
                                 device="cuda")

    def run_attn(q, k, v, do, gain, bias):
        """The prepared learnt-bias backward and its gradients (NaN), on
        the output and logsumexp of Flex's forward: the inputs Flex's
        backward has."""
        with torch.no_grad():
            o, lse = flex_call(
                q, k, v, block_mask=causal_mask(q.shape[2]), scale=scale,
                score_mod=lambda s, b, h, i, j: s * gain[h] + bias[h, (i - j).abs()],
                return_lse=True)
        grads = [torch.full(t.shape, float("nan"), device="cuda")
                 for t in (q, k, v, gain, bias)]
        return learnt.prepare(q, k, v, o, do, lse, *grads, gain, bias), grads

    def run_flex(q, k, v, do, gain, bias, learn):
        """A step of Flex's backward (of its own forward) and its grads."""
        block_mask = causal_mask(q.shape[2])
        leaves = [t.detach().requires_grad_() for t in (q, k, v)]
        captures = [gain.detach().requires_grad_(learn),
                    bias.detach().requires_grad_(learn)]

        def score_mod(s, b, h, i, j):
            return s * captures[0][h] + captures[1][h, (i - j).abs()]

        out = flex_call(*leaves, score_mod=score_mod if learn else None,
                        block_mask=block_mask, scale=scale)
        wrt = leaves + (captures if learn else [])
        got = {}

        def step():
            got["grads"] = torch.autograd.grad(out, wrt, do, retain_graph=True)
        return step, got

    # Correct first: gain and bias gradients against float64 autograd.
    q, k, v, do, gain, bias = inputs(2, 4, 1000)
    call, grads = run_attn(q, k, v, do, gain, bias)
    call()
    torch.cuda.synchronize()
    step, got = run_flex(q, k, v, do, gain, bias, learn=True)
    step()
    leaves = [t.double().requires_grad_() for t in (q, k, v, gain, bias)]
    s = scores(*leaves[:2], *leaves[3:], scale)
    out = torch.softmax(s, dim=-1) @ leaves[2]
    want = torch.autograd.grad(out, leaves[3:], do.double())
    failed = False
    for i, what in enumerate(("gain", "bias")):
        def err(t):
            return ((t.double() - want[i]).norm() / want[i].norm()).item()
        mine, theirs = err(grads[3 + i]), err(got["grads"][3 + i])
        verdict = "PASS" if mine <= 1.25 * theirs + 1e-6 else "FAIL"
        failed |= verdict == "FAIL"
        print(f"capture_grad_bench: d{what} error attn {mine:.3e}, Flex "
              f"{theirs:.3e}: {verdict}", flush=True)

    print("\n| dtype | D | B | H | N | attn plain ms | attn learnt ms "
          "| Flex plain ms | Flex learnt ms | attn learnt / plain "
          "| Flex learnt / plain | Flex learnt / attn learnt |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (1024, 2048, 4096):
        b, h = 16384 // n, 2048 // d
        q, k, v, do, gain, bias = inputs(b, h, n)
        o = torch.full_like(q, float("nan"))
        lse = torch.full((b, h, n), float("nan"), device="cuda")
        plain_forward(q, k, v, o, lse)
        nans = [torch.full_like(t, float("nan")) for t in (q, k, v)]
        times = {"attn plain": bench(plain.prepare(q, k, v, o, do, lse, *nans))}
        call, _ = run_attn(q, k, v, do, gain, bias)
        times["attn learnt"] = bench(call)
        for learn in (False, True):
            step, _ = run_flex(q, k, v, do, gain, bias, learn)
            step()
            times["Flex learnt" if learn else "Flex plain"] = bench(step)
        t = times
        print(f"| {name} | {d} | {b} | {h} | {n} | {t['attn plain']:.3f} "
              f"| {t['attn learnt']:.3f} | {t['Flex plain']:.3f} "
              f"| {t['Flex learnt']:.3f} "
              f"| {t['attn learnt'] / t['attn plain']:.2f} "
              f"| {t['Flex learnt'] / t['Flex plain']:.2f} "
              f"| {t['Flex learnt'] / t['attn learnt']:.2f} |", flush=True)
        del q, k, v, do, o, lse, nans
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
