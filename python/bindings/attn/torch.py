"""FlexAttention's entry point on attn's kernels, forward and backward.

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
head count, length and capture size then runs on that kernel. The tensors
they capture must be on the query's GPU; they are read at each call.
Inputs that are not contiguous are copied.

The call is a torch op (`attn::flex_attention`, with fake tensors for
shapes) whose autograd runs attn's backward kernels: `backward()` gives
dQ, dK, dV and the gradients of float32 tensors the score_mod captures
that require grad (learnt biases), summed deterministically. The
logsumexp it returns has no gradient.
"""

from typing import List, Tuple

import torch

from .cache import backward_kernel, forward_kernel

__all__ = ["flex_attention"]

_DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16"}
# What each op's `name` argument stands for: the kernels' parameters with
# the mods (kept alive, so that their ids name them alone), and the
# captures the backward may learn.
_CALLS = {}


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
    call = (_DTYPES[query.dtype], d, value.shape[3], _chip(query.device),
            mask_mod, score_mod, scale)
    with torch.cuda.device(query.device):
        _, traced = forward_kernel(*call[:4], mask_mod=mask_mod,
                                   score_mod=score_mod, scale=scale)
    for i, array in enumerate(traced.arrays):
        if not isinstance(array, torch.Tensor) or \
                array.device != query.device:
            raise ValueError(f"attn: capture #{i} of the mods must be a "
                             f"torch tensor on {query.device}")
    name = f"{id(mask_mod)}:{id(score_mod)}:{call[:4]}:{scale}"
    _CALLS[name] = (call, traced.learnable and [
        traced.argument_names.index(n) for n in traced.learnable])
    out, lse = _flex_attention(query, key, value, list(traced.arrays), name)
    return (out, lse) if return_lse else out


@torch.library.custom_op("attn::flex_attention", mutates_args=())
def _flex_attention(query: torch.Tensor, key: torch.Tensor,
                    value: torch.Tensor, captures: List[torch.Tensor],
                    name: str) -> Tuple[torch.Tensor, torch.Tensor]:
    (dtype, d, dv, chip, mask_mod, score_mod, scale), _ = _CALLS[name]
    b, hq, m, _ = query.shape
    out = query.new_empty(b, hq, m, dv)
    lse = query.new_empty(b, hq, m, dtype=torch.float32)
    with torch.cuda.device(query.device):
        kernel, _ = forward_kernel(dtype, d, dv, chip, mask_mod, score_mod,
                                   scale)
        kernel(*_dense(query, key, value), out, lse, *_dense(*captures))
    return out, lse


@_flex_attention.register_fake
def _(query, key, value, captures, name):
    b, hq, m, _ = query.shape
    return (query.new_empty(b, hq, m, value.shape[3]),
            query.new_empty(b, hq, m, dtype=torch.float32))


@torch.library.custom_op("attn::flex_attention_backward", mutates_args=())
def _flex_attention_backward(
        query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
        out: torch.Tensor, lse: torch.Tensor, grad_out: torch.Tensor,
        captures: List[torch.Tensor], name: str,
        learn: List[int]) -> List[torch.Tensor]:
    (dtype, d, dv, chip, mask_mod, score_mod, scale), _ = _CALLS[name]
    grads = [torch.empty_like(t) for t in (query, key, value)]
    grads += [torch.empty_like(captures[i], dtype=torch.float32)
              for i in learn]
    with torch.cuda.device(query.device):
        kernel, _ = backward_kernel(dtype, d, dv, chip, mask_mod, score_mod,
                                    scale, learn)
        kernel(*_dense(query, key, value, out, grad_out), lse.detach(), *grads,
               *_dense(*captures))
    return grads


@_flex_attention_backward.register_fake
def _(query, key, value, out, lse, grad_out, captures, name, learn):
    return [torch.empty_like(t) for t in (query, key, value)] + [
        torch.empty_like(captures[i], dtype=torch.float32) for i in learn]


def _dense(*tensors):
    """The kernels' operands: row-major, and outside autograd."""
    return [t.detach().contiguous() for t in tensors]


def _setup_context(ctx, inputs, output):
    query, key, value, captures, name = inputs
    out, lse = output
    learnable = _CALLS[name][1] or []
    ctx.learn = [i for i in learnable if captures[i].requires_grad]
    ctx.name, ctx.captures = name, len(captures)
    ctx.save_for_backward(query, key, value, out, lse, *captures)


def _backward(ctx, grad_out, grad_lse):
    query, key, value, out, lse, *captures = ctx.saved_tensors
    grads = _flex_attention_backward(query, key, value, out, lse,
                                     grad_out.contiguous(), captures,
                                     ctx.name, ctx.learn)
    capture_grads = [None] * ctx.captures
    for j, i in enumerate(ctx.learn):
        capture_grads[i] = grads[3 + j]
    return grads[0], grads[1], grads[2], capture_grads, None


_flex_attention.register_autograd(_backward, setup_context=_setup_context)
