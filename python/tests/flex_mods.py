"""Mods written with operators alone, over arrays given to `mods`: numpy
ones trace to the same regions (and cache keys) as torch ones, so kernels
compiled where there is no torch serve a torch machine."""

N = 200


def mods(doc, bias):
    """(name, mask_mod, score_mod) with `doc` int32 [N] document ids and
    `bias` float32 [4, 2N - 1] a relative-position table."""
    return [
        ("causal", lambda b, h, q, kv: q >= kv, None),
        ("document + bias",
         lambda b, h, q, kv: (doc[q] == doc[kv]) & (q >= kv),
         lambda s, b, h, q, kv: s + bias[h, q - kv + N - 1]),
        ("dense softcap", None,
         lambda s, b, h, q, kv: s * (1.0 / (1.0 + abs(s) / 20.0))),
    ]


if __name__ == "__main__":
    # python3 flex_mods.py CHIP: compiles the kernels test_torch_frontend.py
    # runs into $ATTN_CACHE_DIR, for a GPU machine whose attn has no compiler.
    import sys

    import numpy as np

    import attn.cache

    doc = np.zeros(N, np.int32)
    bias = np.zeros((4, 2 * N - 1), np.float32)
    for dtype in ("f16", "bf16"):
        for name, mask_mod, score_mod in mods(doc, bias):
            attn.cache.forward_kernel(dtype, 64, 64, sys.argv[1], mask_mod,
                                      score_mod)
            learnt = attn.trace.trace(mask_mod, score_mod).learnable
            for learn in ((), (1,)) if learnt else ((),):
                attn.cache.backward_kernel(dtype, 64, 64, sys.argv[1],
                                           mask_mod, score_mod, learn=learn)
    print(f"flex_mods: compiled into {attn.cache.cache_dir()}")
