"""Where a softmax kernel's blocks spend their time (a profiling aid).

usage: python3 bench/softmax_timeline.py gpu-bundles VARIANT dtype:N ...

VARIANT names softmax-VARIANT-{dtype} bundles compiled with the pass's
timeline stamps, e.g. here
  build/bin/attn-opt gpu-bundles/softmax-f16.mlir \
    --attn-softmax-to-gpu=timeline --attn-lower-to-nvvm=chip=sm_90 \
    --attn-write-kernel-bundle=prefix=gpu-bundles/softmax-tl-f16- -o /dev/null
(thread 0 of each block writes %globaltimer.lo when the block starts, ends
its first pass, has published its (max, sum) and seen the row's, passes the
barrier after that, has the row's statistics and ends, and its SM: 8
workspace words per block after the kernel's own, see SoftmaxToGpu.cpp).
Prints, per case: do_bench's time and the stamped spans, the mean block
phases, how long a row's blocks wait for its last arrival and what the
exchange takes after it, when the blocks at a row's ends arrive against
the others, and resident / loading / merging blocks per 2 us.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import Driver, load_softmax, softmax_launch  # noqa: E402
import gpu_check  # noqa: E402
from triton.testing import do_bench  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
directory, variant = sys.argv[1], sys.argv[2]
drv = Driver()
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")


for case in sys.argv[3:]:
    name, n = case.split(":")
    n = int(n)
    dtype = DTYPES[name]
    m = (1 << 26) // n
    # Padded: hack variants may read and write past the last row.
    pad = 1 << 16
    x = torch.randn(m * n + pad, device="cuda").to(dtype)[:m * n].view(m, n)
    y = torch.empty(m * n + pad, device="cuda", dtype=dtype)[:m * n].view(m, n)
    go, blocks = softmax_launch(drv, load_softmax(drv, directory, variant, name),
                                x, y)
    ms = do_bench(go, warmup=25, rep=100, return_mode="median")
    spans = []
    for repeat in range(5):
        flush.zero_()
        go()
        torch.cuda.synchronize()
        w = gpu_check._workspace[0].view(torch.int32).cpu().long()
        base = 2 * (m + blocks)
        s = w[base:base + 8 * blocks].view(blocks, 8)
        t = s[:, :7] & 0xFFFFFFFF
        t = (t - t[:, 0].min().item()) % (1 << 32)  # ns from the first start
        t = t.double() / 1000.0  # us
        sm = s[:, 7]
        spans.append(t[:, 3].max().item())
    splits = blocks // m
    load, merge, write = (t[:, 1] - t[:, 0], t[:, 2] - t[:, 1],
                          t[:, 3] - t[:, 2])
    last = t[:, 1].view(m, splits).max(dim=1).values.repeat_interleave(splits)
    waiting = (last - t[:, 1]).clamp(min=0)
    after = t[:, 2] - last
    start_spread = (t[:, 0].view(m, splits).max(1).values -
                    t[:, 0].view(m, splits).min(1).values)
    span = t[:, 3].max().item()
    moved = 2 * x.numel() * x.element_size()
    print(f"== {variant} {name} N={n} M={m} blocks={blocks} splits={splits} "
          f"do_bench {ms * 1000:.1f} us ({moved / ms / 1e6:.0f} GB/s); "
          f"stamped spans {', '.join(f'{v:.1f}' for v in spans)} us")
    print(f"   per block (us, mean/p90): load {load.mean():.2f}/"
          f"{load.quantile(.9):.2f}  merge {merge.mean():.2f}/"
          f"{merge.quantile(.9):.2f} (waiting for the row's last arrival "
          f"{waiting.mean():.2f}, after it {after.mean():.2f}/"
          f"{after.quantile(.9):.2f})  write {write.mean():.2f}/"
          f"{write.quantile(.9):.2f}  life {(t[:, 3] - t[:, 0]).mean():.2f}")
    if t[:, 4].abs().sum() > 0:  # the exchange's own stamps
        published = t[:, 4].view(m, splits).max(1).values.repeat_interleave(
            splits)
        parts = {"reduce": t[:, 4] - t[:, 1],
                 "poll after the last publish": t[:, 5] - published,
                 "barrier": t[:, 6] - t[:, 5], "gather": t[:, 2] - t[:, 6]}
        print("   exchange (us, mean/p90): " + "  ".join(
            f"{k} {v.mean():.2f}/{v.quantile(.9):.2f}"
            for k, v in parts.items()))
    # By the block's place in its row: the first and last hold the row's
    # ends (the checked warps of odd lengths).
    arrival = (t[:, 1].view(m, splits) -
               t[:, 0].view(m, splits).min(1, keepdim=True).values)
    places = sorted({0, min(1, splits - 1), splits // 2, splits - 1})
    print("   arrival after the row's first start by split (us): " + "  ".join(
        f"{p}: {arrival[:, p].mean():.2f}" for p in places) +
          "; load by split: " + "  ".join(
        f"{p}: {load.view(m, splits)[:, p].mean():.2f}" for p in places))
    print(f"   row start spread mean {start_spread.mean():.2f} us, p90 "
          f"{start_spread.quantile(.9):.2f}; last block starts at "
          f"{t[:, 0].max():.1f} us of {span:.1f}; distinct SMs "
          f"{sm.unique().numel()}")
    # Resident blocks and blocks in each phase, per 2 us step.
    steps = int(span // 2) + 1
    line = []
    for k in range(steps):
        a, b = 2.0 * k, 2.0 * k + 2
        resident = ((t[:, 0] < b) & (t[:, 3] > a)).sum().item()
        loading = ((t[:, 0] < b) & (t[:, 1] > a)).sum().item()
        merging = ((t[:, 1] < b) & (t[:, 2] > a)).sum().item()
        line.append(f"{a:.0f}:{resident}/{loading}/{merging}")
    print("   t:resident/loading/merging " + " ".join(line))
