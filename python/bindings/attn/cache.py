"""Compiled attention kernels for Python mods, compiled once and cached.

A kernel is keyed by what it computes: the forward or the backward (and
which captures it learns), the traced regions (their ops and their
captures' element types and ranks), the element type, the head dims, the
scale and the chip; batch, heads (GQA included) and lengths are dynamic, so one
kernel serves every shape. Kernels are kept in memory for the process
and on disk, under $ATTN_CACHE_DIR or $XDG_CACHE_HOME/attn (default
~/.cache/attn), so that another process loads them without compiling
(and, with the runtime alone, without a compiler). A kernel is written
into a fresh directory and renamed into place, so processes that compile
the same kernel at once never see a partial one.
"""

import hashlib
import os
import shutil
import tempfile

from . import trace
from .runtime import Kernel

__all__ = ["cache_dir", "forward_kernel", "backward_kernel"]

_FORMAT = "attn-kernel-1"
_loaded = {}


def cache_dir():
    """Where compiled kernels are kept on disk."""
    root = os.environ.get("ATTN_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "attn")
    return os.path.join(root, "kernels")


def forward_kernel(dtype, head_dim, value_dim, chip, mask_mod=None,
                   score_mod=None, scale=None):
    """The attention kernel (an attn.Kernel of @attention(q, k, v, out,
    lse, captures...)) of Python mods `mask_mod` and `score_mod` for `dtype`
    ('f16', 'bf16'), head dims and `chip` (e.g. 'sm_90a'): from this
    process's memory, from the disk cache, or compiled (which needs the
    compiler) and cached. Returns (kernel, traced): `traced.arrays` are the
    captures to pass, in order."""
    return _kernel("attention", dtype, head_dim, value_dim, chip, mask_mod,
                   score_mod, scale)


def backward_kernel(dtype, head_dim, value_dim, chip, mask_mod=None,
                    score_mod=None, scale=None, learn=()):
    """The same for the backward: an attn.Kernel of @attention_grad(q, k,
    v, out, grad_out, lse, dq, dk, dv, gradients of the captures numbered
    `learn`, captures...), `learn` numbering float32 captures the score_mod
    reads (attn.attention_grad's capture_grads)."""
    return _kernel("attention_grad", dtype, head_dim, value_dim, chip,
                   mask_mod, score_mod, scale, tuple(sorted(set(learn))))


def _kernel(function, dtype, head_dim, value_dim, chip, mask_mod, score_mod,
            scale, learn=()):
    traced = trace.trace(mask_mod, score_mod)
    key = hashlib.sha256("\n".join(map(str, (
        _FORMAT, function, dtype, head_dim, value_dim, scale, chip, learn,
        traced.mask_body, traced.score_body,
        traced.tensor_types))).encode()).hexdigest()[:32]
    if key in _loaded:
        return _loaded[key], traced
    path = os.path.join(cache_dir(), key)
    bundle = os.path.join(path, "bundle.json")
    if not os.path.isfile(bundle):
        _compile(path, function, dtype, head_dim, value_dim, chip, mask_mod,
                 score_mod, scale, learn)
    kernel = Kernel(bundle, function)
    _loaded[key] = kernel
    return kernel, traced


def _compile(path, function, dtype, head_dim, value_dim, chip, mask_mod,
             score_mod, scale, learn):
    try:
        from .compiler import attention, attention_grad, compile_gpu
    except ImportError:
        raise RuntimeError(
            "attn: no cached kernel for these mods and types in "
            f"{cache_dir()}, and this build of attn has no compiler to make "
            "one (compile them where attn has one, with the same cache "
            "directory)") from None
    if function == "attention":
        module = attention(dtype, head_dim=head_dim, value_dim=value_dim,
                           lse=True, mask=mask_mod, score_mod=score_mod,
                           scale=scale)
    else:
        module = attention_grad(dtype, head_dim=head_dim,
                                value_dim=value_dim, mask=mask_mod,
                                score_mod=score_mod, scale=scale,
                                capture_grads=list(learn) if learn else False)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = tempfile.mkdtemp(prefix=".compiling-",
                                 dir=os.path.dirname(path))
    try:
        compile_gpu(module, chip, temporary)
        try:
            os.rename(temporary, path)
        except OSError:
            # Another process put the same kernel there first.
            if not os.path.isfile(os.path.join(path, "bundle.json")):
                raise
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
