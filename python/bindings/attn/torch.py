"""FlexAttention's entry point on attn's kernels (the forward, so far).

    from attn.torch import flex_attention
    out = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)

takes FlexAttention's arguments with its semantics: query [B, Hq, M, D],
key [B, Hkv, N, D] and value [B, Hkv, N, Dv], f16 or bf16 CUDA tensors;
`score_mod(score, b, h, q_idx, kv_idx)`; `block_mask`, a BlockMask whose
`mask_mod(b, h, q_idx, kv_idx)` says which scores to keep (attn derives
its own block lists from that function, so the BlockMask's lists are not
read); `scale` (default 1/sqrt(D)); `enable_gqa` (needed when Hq != Hkv);
`return_lse` (also the natural-log logsumexp of each row, f32). The mods
are traced (attn.trace) and compiled once per regions, dtype, head dims,
scale and chip (attn.cache: in memory and on disk); every batch size,
head count and length then runs on that kernel. The tensors they capture
must be on the query's GPU; they are read at each call. Inputs that are
not contiguous are copied.
"""

import torch

from .cache import forward_kernel

__all__ = ["flex_attention"]

_DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16"}


def _chip(device):
    major, minor = torch.cuda.get_device_capability(device)
    # Hopper's wgmma kernels need the architecture-specific target.
    return f"sm_{major}{minor}" + ("a" if major == 9 else "")


def flex_attention(query, key, value, score_mod=None, block_mask=None,
                   scale=None, enable_gqa=False, return_lse=False,
                   kernel_options=None):
    """FlexAttention's flex_attention (see the module's documentation);
    returns the output, and the logsumexp with `return_lse`."""
    tensors = {"query": query, "key": key, "value": value}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"attn: {name} must be a 4-D torch.Tensor "
                             "[B, H, S, D]")
        if t.device.type != "cuda" or t.device != query.device:
            raise ValueError(f"attn: {name} must be on the query's CUDA "
                             f"device ({query.device}), not {t.device}")
        if t.dtype != query.dtype or t.dtype not in _DTYPES:
            raise ValueError(f"attn: {name} must be float16 or bfloat16, as "
                             f"query is; it is {t.dtype}")
    b, hq, m, d = query.shape
    if key.shape[0] != b or value.shape[0] != b:
        raise ValueError("attn: key and value must have the query's batch "
                         f"size {b}")
    if key.shape[1:3] != value.shape[1:3] or key.shape[3] != d:
        raise ValueError(f"attn: key {tuple(key.shape)} and value "
                         f"{tuple(value.shape)} disagree with each other or "
                         f"with query's head dim {d}")
    hkv = key.shape[1]
    if hq != hkv and (not enable_gqa or hkv == 0 or hq % hkv != 0):
        raise ValueError(f"attn: query has {hq} heads and key {hkv}: that "
                         "needs enable_gqa=True and a multiple")
    if kernel_options:
        raise ValueError("attn: kernel_options are FlexAttention's; attn "
                         "chooses its kernels itself")
    mask_mod = getattr(block_mask, "mask_mod", None)
    if block_mask is not None and not callable(mask_mod):
        raise ValueError("attn: block_mask must have a mask_mod function "
                         "(FlexAttention's BlockMask)")
    if scale is not None:
        scale = float(scale)
    with torch.cuda.device(query.device):
        kernel, traced = forward_kernel(
            _DTYPES[query.dtype], d, value.shape[3], _chip(query.device),
            mask_mod=mask_mod, score_mod=score_mod, scale=scale)
        for i, array in enumerate(traced.arrays):
            if not isinstance(array, torch.Tensor) or \
                    array.device != query.device:
                raise ValueError(f"attn: capture #{i} of the mods must be a "
                                 f"torch tensor on {query.device}")
        q, k, v = (t.contiguous() for t in (query, key, value))
        out = torch.empty(b, hq, m, value.shape[3], dtype=query.dtype,
                          device=query.device)
        lse = torch.empty(b, hq, m, dtype=torch.float32, device=query.device)
        kernel(q, k, v, out, lse, *(a.contiguous() for a in traced.arrays))
    return (out, lse) if return_lse else out
