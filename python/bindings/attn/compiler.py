"""The compiler side of attn (wraps the _compiler extension)."""

import os
import tempfile

from ._compiler import Module, CpuKernel, attention_source, softmax_source

_MASKS = "none, 'sliding-window:W', 'document', 'prefix:P'"
_SCORE_MODS = "none, 'alibi', 'softcap:C', 'relative', 'checkerboard'"


def attention(dtype="f32", head_dim=64, value_dim=None, causal=False,
              lse=False, mask=None, score_mod=None, scale=None, batch=None,
              heads=None, q_len=None, kv_len=None):
    """A module with one function @attention(query, key, value, out
    [, logsumexp] [, captures]) holding one attn.attention.

    Sizes left as None are dynamic (one kernel serves them all); `heads` is
    Hq or (Hq, Hkv) for GQA/MQA. `mask` is one of %s (document ids are a
    captured i32 argument); `score_mod` one of %s (ALiBi slopes are a
    captured f32 argument). `scale` defaults to 1/sqrt(head_dim).
    """
    hq, hkv = (heads if isinstance(heads, (tuple, list)) else (heads, heads))
    text = attention_source(
        dtype, head_dim, value_dim or 0, causal, lse, mask or "none",
        score_mod or "none", scale or 0.0, _dim(batch), _dim(hq), _dim(hkv),
        _dim(q_len), _dim(kv_len))
    return Module.parse(text)


attention.__doc__ = attention.__doc__ % (_MASKS, _SCORE_MODS)


def softmax(dtype="f32"):
    """A module with @softmax(x, out) over the last dim of [?, ?] tensors."""
    return Module.parse(softmax_source(dtype))


def compile_cpu(module, function="", q_tile=64, kv_tile=64, row_tile=4096):
    """Compiles a function of `module` with attn-lower-to-cpu; the result is
    called with one C-contiguous numpy array per argument (bf16 as uint16
    bits) and writes its outputs in place."""
    return CpuKernel.compile(module, function, q_tile, kv_tile, row_tile)


def compile_gpu(module, chip, directory=None, q_tile=64, kv_tile=64,
                threads=128, function=""):
    """Compiles `module` with attn-lower-to-nvvm for `chip` (e.g. 'sm_90'),
    writes the kernel bundle to `directory` (a new temporary one by default)
    and returns an attn.Kernel that runs it (on a machine with a GPU)."""
    from .runtime import Kernel
    lowered = module.clone()
    lowered.run_pipeline(
        f"builtin.module(attn-lower-to-nvvm{{chip={chip} q-tile={q_tile} "
        f"kv-tile={kv_tile} threads={threads}}})")
    directory = directory or tempfile.mkdtemp(prefix="attn-")
    lowered.write_bundle(os.path.join(directory, ""))
    return Kernel(os.path.join(directory, "bundle.json"), function)


def _dim(size):
    return -1 if size is None else int(size)
