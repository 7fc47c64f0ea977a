"""The masks and score mods bench/flex_frontend_bench.py times, written
with operators alone over the arrays given, so that numpy and torch
spell the same kernels: `python3 bench/flex_frontend_mods.py CHIP`
compiles them into $ATTN_CACHE_DIR where attn has a compiler, for a GPU
machine whose attn has none."""


def cases(doc, slopes):
    """(name, mask_mod, score_mod): `doc` int32 document ids of each
    position (512-token documents), `slopes` float32 ALiBi slopes per
    head."""
    return [
        ("causal", lambda b, h, q, kv: q >= kv, None),
        ("window 1024", lambda b, h, q, kv: (q >= kv) & (q - kv <= 1024),
         None),
        ("documents 512", lambda b, h, q, kv: (doc[q] == doc[kv]) & (q >= kv),
         None),
        ("ALiBi causal", lambda b, h, q, kv: q >= kv,
         lambda s, b, h, q, kv: s + slopes[h] * (kv - q)),
    ]


HEAD_DIM = 128

if __name__ == "__main__":
    import sys

    import numpy as np

    import attn.cache

    doc, slopes = np.zeros(8, np.int32), np.zeros(8, np.float32)
    for name, mask_mod, score_mod in cases(doc, slopes):
        attn.cache.forward_kernel("bf16", HEAD_DIM, HEAD_DIM, sys.argv[1],
                                  mask_mod, score_mod)
        attn.cache.backward_kernel("bf16", HEAD_DIM, HEAD_DIM, sys.argv[1],
                                   mask_mod, score_mod)
    print(f"flex_frontend_mods: compiled into {attn.cache.cache_dir()}")
