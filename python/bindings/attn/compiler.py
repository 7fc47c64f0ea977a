"""The compiler side of attn (wraps the _compiler extension).

Every argument is checked here, before any C++ runs, so that a mistake is
reported under its Python name (`mask=`, `heads=`, ...)."""

import math
import numbers
import os
import re
import shutil
import struct
import tempfile

import numpy as np

from ._compiler import (Module, CpuKernel, attention_source, softmax_source,
                        block_mask_source, _max_tile)
from . import trace
from .block_mask import BlockMask

_DTYPES = ("f32", "f16", "bf16")
_MASKS = ("None, 'sliding-window:W', 'document', 'prefix:P', 'jagged:P', "
          "'sasa:W:K', 'natten:H:W:K'")
_SCORE_MODS = "None, 'alibi', 'softcap:C', 'relative', 'checkerboard'"
_INT64_MAX = 2**63 - 1


def attention(dtype="f32", head_dim=64, value_dim=None, causal=False,
              lse=False, mask=None, score_mod=None, scale=None, batch=None,
              heads=None, q_len=None, kv_len=None, given_block_mask=None):
    """A module with one function @attention(q, k, v, out [, lse]
    [, captures of the mask] [, slopes]) holding one attn.attention.

    Shapes: q [B, Hq, M, D], k [B, Hkv, N, D], v [B, Hkv, N, Dv], out
    [B, Hq, M, Dv], lse [B, Hq, M] f32 (natural-log logsumexp of each row,
    when `lse=True`). `dtype` is 'f32', 'f16' or 'bf16'; `head_dim` (D) and
    `value_dim` (Dv, default D) are multiples of 8 from 16 to 256.

    Sizes left as None are dynamic (one kernel serves them all; 0 is then a
    valid run-time size); `batch`, `q_len` and `kv_len` may be fixed to a
    positive int. `heads` is Hq, or (Hq, Hkv) for GQA/MQA (Hq a multiple of
    Hkv; either may be None). `scale` multiplies q.k (a finite positive
    number; default 1/sqrt(D)). `causal=True` keeps kv <= q.

    FlexAttention's examples, with s = scale * q.k, q and kv the query and
    key rows, h the query head. `mask` (which scores are kept), None or:
      'sliding-window:W'  kv <= q and q - kv <= W  (W a positive int)
      'prefix:P'          kv <= P or kv <= q  (P a non-negative int)
      'document'          doc[q] == doc[kv] and kv <= q, doc an int32 array
                          of document ids of length >= max(M, N) (the
                          captured argument after out and lse)
      'jagged:P'          packed sequences: seq[q] == seq[kv], and inside
                          the sequence kv' <= P or kv' <= q', where
                          x' = x - starts[seq[x]]; seq (the sequence of
                          each position, length >= max(M, N)) and starts
                          (each sequence's first position) are int32
                          arrays captured after out and lse; P = 0 is
                          causal within each sequence
      'sasa:W:K'          2-D neighbourhood: positions are (x // W, x % W)
                          on a canvas W wide; keeps keys whose row and
                          column are both within K // 2 of the query's
      'natten:H:W:K'      as 'sasa:W:K' on an H x W canvas, the window's
                          centre clamped to stay K // 2 inside the canvas
                          (2 * (K // 2) + 1 at most H and W)
    `score_mod` (what a kept score becomes), None or:
      'alibi'             s + slopes[h] * (q - kv), slopes a float32 array
                          of length >= Hq (the last argument; the usual
                          slopes are attn.alibi_slopes(Hq))
      'softcap:C'         C * tanh(s / C)  (C a finite positive number)
      'relative'          s + (q - kv)
      'checkerboard'      s / 2 where |q - kv| is odd, s where it is even
    Either may also be a Python function, FlexAttention's
    mask_mod(b, h, q_idx, kv_idx) or score_mod(score, b, h, q_idx, kv_idx),
    traced into the op's region (attn.trace says what it may do); the
    arrays it reads become the function's last arguments, after a built-in
    mod's (attn.captures gives them in order).

    `given_block_mask`, a block size (a power of two from 16 to 1024; needs
    a `mask`), makes the function take a block mask of square blocks of
    that size as its last four arguments: FlexAttention's kv_num_blocks
    [1, 1, QB], kv_indices [1, 1, QB, KB], full_kv_num_blocks and
    full_kv_indices, int32, one mask for every batch and head
    (BlockMask.kv_lists() of attn.create_block_mask with the same block
    sizes, say). The kernel visits only the listed blocks, applying the
    mask on partial ones. Without it, the pipeline derives a block mask
    from `mask`.
    """
    lse = _check_bool("lse", lse)
    if given_block_mask is not None:
        given_block_mask = _check_block_size("given_block_mask",
                                             given_block_mask)
    return Module.parse(_variant_source(
        dtype, head_dim, value_dim, causal, lse, mask, score_mod, scale,
        batch, heads, q_len, kv_len, given_block_mask or 0, False))


def attention_grad(dtype="f32", head_dim=64, value_dim=None, causal=False,
                   mask=None, score_mod=None, scale=None, batch=None,
                   heads=None, q_len=None, kv_len=None, capture_grads=False,
                   given_block_mask=None):
    """The backward of attention(...) with the same arguments: a module
    with one function @attention_grad(q, k, v, out, grad_out, lse, dq, dk,
    dv [, gradients of learnt captures] [, captures as attention's])
    holding one attn.attention_grad.

    out and lse are the forward's output and logsumexp, grad_out the
    gradient of a loss with respect to out; dq, dk and dv (shaped and typed
    as q, k and v) receive the gradients (docs/Backward.md). With
    `capture_grads`, float32 arrays shaped as the learnt tensors receive
    their gradients: ALiBi's slopes for score_mod='alibi', or every float32
    array a Python score_mod reads, in attn.captures' order (or those whose
    numbers in that order `capture_grads` lists). It compiles
    for the CPU (compile_cpu) and, for f16 and bf16 with head dims that are
    multiples of 16 up to 256, for the GPU (compile_gpu: the backward
    kernels, sm_80 and newer).

    `given_block_mask`, a block size as attention()'s, makes the function
    take a block mask's eight lists as its last arguments (BlockMask.lists():
    the kv side as attention()'s, then q_num_blocks [1, 1, KB], q_indices
    [1, 1, KB, QB], full_q_num_blocks and full_q_indices, which the dK/dV
    kernel walks). The GPU kernels' 64-row tiles must divide the blocks.
    """
    if not isinstance(capture_grads, (list, tuple)):
        capture_grads = _check_bool("capture_grads", capture_grads)
    if given_block_mask is not None:
        given_block_mask = _check_block_size("given_block_mask",
                                             given_block_mask)
    return Module.parse(_variant_source(
        dtype, head_dim, value_dim, causal, False, mask, score_mod, scale,
        batch, heads, q_len, kv_len, given_block_mask or 0, True,
        capture_grads))


def captures(mask=None, score_mod=None):
    """The arrays that the function of attention(mask=..., score_mod=...)
    (or attention_grad's) takes for Python mods, in order: after out and
    lse (after dq, dk, dv and the gradients of the learnt ones for the
    backward), and after a built-in mod's own captures. The arrays are read
    in place at every call: pass these, or others of the same element types
    and ranks (their sizes are dynamic)."""
    traced = trace.trace(mask if callable(mask) else None,
                         score_mod if callable(score_mod) else None)
    return list(traced.arrays)


def _variant_source(dtype, head_dim, value_dim, causal, lse, mask, score_mod,
                    scale, batch, heads, q_len, kv_len, given_block_mask,
                    backward, capture_grads=False):
    """attention_source's text for attention() or attention_grad(), after
    checking the arguments they share."""
    dtype = _check_dtype(dtype)
    head_dim = _check_head_dim("head_dim", head_dim)
    if value_dim is not None:
        value_dim = _check_head_dim("value_dim", value_dim)
    causal = _check_bool("causal", causal)
    traced = trace.trace(mask if callable(mask) else None,
                         score_mod if callable(score_mod) else None)
    mask = "none" if callable(mask) else _check_mask(mask)
    learnt = []
    if callable(score_mod):
        score_mod = "none"
        names = traced.learnable if capture_grads is True else []
        if isinstance(capture_grads, (list, tuple)):
            for i in capture_grads:
                if not _is_int(i) or not 0 <= i < len(traced.arrays) or \
                        traced.argument_names[i] not in traced.learnable:
                    raise ValueError(
                        f"attn: capture_grads={list(capture_grads)}: {i!r} "
                        "is not the number of a float32 array the score_mod "
                        "reads (attn.captures' order)")
            names = [traced.argument_names[i] for i in sorted(set(
                capture_grads))]
        if capture_grads and not names:
            raise ValueError("attn: capture_grads=True needs a score_mod "
                             "that reads a float32 array")
        learnt = [(name, traced.tensor_types[traced.argument_names.index(
            name)]) for name in names]
        capture_grads = False
    else:
        score_mod = _check_score_mod(score_mod)
        if isinstance(capture_grads, (list, tuple)):
            raise ValueError("attn: capture_grads= as a list of capture "
                             "numbers needs a Python score_mod")
    scale = _check_scale(scale)
    hq, hkv = _check_heads(heads)
    batch, q_len, kv_len = (_check_size(name, size) for name, size in
                            (("batch=", batch), ("q_len=", q_len),
                             ("kv_len=", kv_len)))
    return attention_source(
        dtype, head_dim, value_dim or 0, causal, lse, mask, score_mod,
        scale or 0.0, _dim(batch), _dim(hq), _dim(hkv), _dim(q_len),
        _dim(kv_len), given_block_mask, backward=backward,
        capture_grads=capture_grads, trace_mask=traced.mask_body,
        trace_score=traced.score_body, trace_captures=traced.arguments,
        trace_wrt=learnt)


def softmax(dtype="f32"):
    """A module with @softmax(x, out) over the last dim of [?, ?] tensors."""
    return Module.parse(softmax_source(_check_dtype(dtype)))


def block_mask_module(mask, q_len, kv_len, batch=1, heads=1, q_block=128,
                      kv_block=128):
    """A module with one function @block_mask(kv_num_blocks, kv_indices,
    full_kv_num_blocks, full_kv_indices, q_num_blocks, q_indices,
    full_q_num_blocks, full_q_indices [, captures of the mask]) that
    computes the lists of an attn.create_block_mask of one of
    attn.attention's `mask=` values (not None) over static [batch, heads,
    q_len, kv_len] into its first eight arguments (int32 [B, H, QB] and
    [B, H, QB, KB], then [B, H, KB] and [B, H, KB, QB]). Block sizes are
    powers of two from 16 to 1024."""
    mask = _check_mask(mask)
    if mask == "none":
        raise ValueError("attn: a block mask needs a mask, not None")
    batch, heads, q_len, kv_len = (
        _check_positive(name, value, _INT64_MAX)
        for name, value in (("batch", batch), ("heads", heads),
                            ("q_len", q_len), ("kv_len", kv_len)))
    q_block, kv_block = (_check_block_size(name, size) for name, size in
                         (("q_block", q_block), ("kv_block", kv_block)))
    return Module.parse(block_mask_source(mask, batch, heads, q_len, kv_len,
                                          q_block, kv_block))


def create_block_mask(mask, q_len, kv_len, *captures, batch=1, heads=1,
                      q_block=128, kv_block=128):
    """FlexAttention's create_block_mask for one of attn.attention's
    `mask=` values: block_mask_module's function, run on the CPU, as a
    BlockMask with the q-side lists too. `captures` are the mask's arrays,
    as attn.attention's function takes them (document ids for 'document',
    sequence ids and starts for 'jagged')."""
    module = block_mask_module(mask, q_len, kv_len, batch, heads, q_block,
                               kv_block)
    q_blocks, kv_blocks = -(-q_len // q_block), -(-kv_len // kv_block)
    lists = []
    for lines, length in ((q_blocks, kv_blocks), (kv_blocks, q_blocks)):
        for _ in range(2):
            lists += [np.zeros((batch, heads, lines), np.int32),
                      np.zeros((batch, heads, lines, length), np.int32)]
    compile_cpu(module)(*lists, *captures)
    return BlockMask(*lists, q_block=q_block, kv_block=kv_block, q_len=q_len,
                     kv_len=kv_len)


def compile_cpu(module, function="", q_tile=64, kv_tile=64, row_tile=4096,
                bounds_checks=True):
    """Compiles a function of `module` with attn-lower-to-cpu; the result is
    called with one C-contiguous numpy array per argument (bf16 as uint16
    bits; inputs may be read-only) and writes its outputs in place. Sizes
    that do not agree (out shorter than q, K and V of different lengths,
    short captured arrays...) raise ValueError before anything runs.
    `bounds_checks` adds run-time checks of the accesses of mask and score
    mod regions to captured arrays."""
    _check_module(module)
    function = _check_str("function", function)
    q_tile, kv_tile, row_tile = (_check_positive(name, value, _max_tile)
                                 for name, value in (("q_tile", q_tile),
                                                     ("kv_tile", kv_tile),
                                                     ("row_tile", row_tile)))
    bounds_checks = _check_bool("bounds_checks", bounds_checks)
    return CpuKernel.compile(module, function, q_tile, kv_tile, row_tile,
                             bounds_checks)


def compile_gpu(module, chip=None, directory=None, q_tile=None, kv_tile=None,
                threads=128, function="", bounds_checks=False,
                strategy="auto"):
    """Compiles `module` with attn-lower-to-nvvm for `chip` (e.g. 'sm_90';
    by default the chip of this machine's GPU), writes the kernel bundle and
    returns an attn.Kernel that runs it (on a machine with a GPU).

    `q_tile` and `kv_tile` default to the largest tiles whose buffers fit
    the chip's shared memory. `strategy` names the attention kernels:
    'auto' (per op, the fastest the chip has that serves it), 'simt',
    'mma-sync', 'wgmma' or 'wgmma-ws' (every op on that kernel, or a
    RuntimeError naming the op and why). The bundle goes to `directory`,
    which is kept; by default to a temporary directory, removed once the
    kernel is loaded (the kernel holds its code in memory)."""
    from .runtime import Kernel
    from . import _runtime
    _check_module(module)
    if chip is None:
        try:
            chip = _runtime.chip()
        except RuntimeError as error:
            reason = re.sub(r"^attn: ", "", str(error))
            raise RuntimeError(
                "attn: compile_gpu needs chip= (e.g. 'sm_90') when there is "
                f"no GPU to take it from ({reason})") from None
    chip = _check_chip(chip)
    if directory is not None and not isinstance(directory, (str, bytes)) \
            and not hasattr(directory, "__fspath__"):
        raise TypeError("attn: directory= must be a path or None, got "
                        f"{type(directory).__name__}")
    # None: the pipeline chooses tiles that fit the chip's shared memory.
    q_tile, kv_tile = (0 if value is None
                       else _check_positive(name, value, _max_tile)
                       for name, value in (("q_tile", q_tile),
                                           ("kv_tile", kv_tile)))
    threads = _check_positive("threads", threads, 1024)
    function = _check_str("function", function)
    bounds_checks = _check_bool("bounds_checks", bounds_checks)
    strategy = _check_str("strategy", strategy)
    lowered = module.clone()
    lowered.lower_to_nvvm(chip, q_tile=q_tile, kv_tile=kv_tile,
                          threads=threads, bounds_checks=bounds_checks,
                          strategy=strategy)
    if directory is not None:
        directory = os.fsdecode(directory)
        lowered.write_bundle(os.path.join(directory, ""))
        return Kernel(os.path.join(directory, "bundle.json"), function)
    temporary = tempfile.mkdtemp(prefix="attn-")
    try:
        lowered.write_bundle(os.path.join(temporary, ""))
        return Kernel(os.path.join(temporary, "bundle.json"), function)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _dim(size):
    return -1 if size is None else size


# Checks of Python arguments; each returns the value to use.

def _type_name(value):
    return type(value).__name__


def _is_int(value):
    return isinstance(value, numbers.Integral) and not _is_bool(value)


def _is_bool(value):
    return isinstance(value, bool) or (
        type(value).__module__ == "numpy" and type(value).__name__ in
        ("bool_", "bool"))


def _check_bool(name, value):
    if not _is_bool(value):
        raise TypeError(f"attn: {name}= must be True or False, got "
                        f"{value!r} ({_type_name(value)})")
    return bool(value)


def _check_str(name, value):
    if not isinstance(value, str):
        raise TypeError(f"attn: {name}= must be a str, got "
                        f"{_type_name(value)}")
    return value


def _check_module(module):
    if not isinstance(module, Module):
        raise TypeError("attn: expected an attn.Module (attn.attention(), "
                        "attn.softmax(), attn.Module.parse(text)), got "
                        f"{_type_name(module)}")


def _check_dtype(dtype):
    if not isinstance(dtype, str) or dtype not in _DTYPES:
        raise ValueError(f"attn: dtype= must be 'f32', 'f16' or 'bf16', not "
                         f"{dtype!r}")
    return dtype


def _check_int(name, value, what):
    if not _is_int(value):
        raise TypeError(f"attn: {name}= must be {what}, got {value!r} "
                        f"({_type_name(value)})")
    return int(value)


def _check_block_size(name, value):
    value = _check_int(name, value, "a power of two from 16 to 1024")
    if value < 16 or value > 1024 or value & (value - 1):
        raise ValueError(f"attn: {name}= must be a power of two from 16 to "
                         f"1024, got {value}")
    return value


def _check_positive(name, value, largest):
    value = _check_int(name, value, "a positive int")
    if not 0 < value <= largest:
        raise ValueError(f"attn: {name}= must be a positive int up to "
                         f"{largest}, not {value}")
    return value


def _check_head_dim(name, value):
    """The op's rule (verifyHeadDim): a multiple of 8 from 16 to 256."""
    value = _check_int(name, value, "an int")
    if not (16 <= value <= 256 and value % 8 == 0):
        raise ValueError(f"attn: {name}= must be a multiple of 8 from 16 to "
                         f"256, not {value}")
    return value


def _check_size(name, value):
    """None (dynamic: any size at run time, 0 included) or a static size;
    `name` is how the message names it ("batch=", "heads=(8, 0): Hkv")."""
    if value is None:
        return None
    if not _is_int(value):
        raise TypeError(f"attn: {name} must be None (dynamic) or a positive "
                        f"int, got {value!r} ({_type_name(value)})")
    if not 0 < value <= _INT64_MAX:
        raise ValueError(f"attn: {name} must be None (dynamic, which allows "
                         f"any size at run time, 0 included) or a positive "
                         f"int, not {value}")
    return int(value)


def _check_heads(heads):
    """(Hq, Hkv), each None (dynamic) or a positive int."""
    if isinstance(heads, (tuple, list)):
        if len(heads) != 2:
            raise ValueError("attn: heads= must be Hq or (Hq, Hkv), got "
                             f"{len(heads)} values")
        hq = _check_size(f"heads={tuple(heads)!r}: Hq", heads[0])
        hkv = _check_size(f"heads={tuple(heads)!r}: Hkv", heads[1])
        if hq is not None and hkv is not None and hq % hkv:
            raise ValueError(f"attn: heads=({hq}, {hkv}): Hq must be a "
                             "multiple of Hkv")
        return hq, hkv
    heads = _check_size("heads=", heads)
    return heads, heads


def _to_f32(value):
    """value as a float32 (the op's attributes and constants are f32); inf
    when it overflows."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.inf


def _check_positive_float(name, value):
    """A finite number > 0, also once rounded to float32."""
    if not isinstance(value, numbers.Real) or _is_bool(value):
        raise TypeError(f"attn: {name} must be a number, got {value!r} "
                        f"({_type_name(value)})")
    value = float(value)
    f32 = _to_f32(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"attn: {name} must be a finite positive number, "
                         f"not {value!r}")
    if not (math.isfinite(f32) and f32 > 0):
        raise ValueError(f"attn: {name} must be a finite positive number "
                         f"as a float32, not {value!r}")
    return value


def _check_scale(scale):
    if scale is None:
        return None
    return _check_positive_float("scale=", scale)


def _no_callables(name, value, accepted):
    if callable(value):
        raise TypeError(f"attn: {name}= takes a function in attention() and "
                        f"attention_grad() only; here one of {accepted}")
    if value is not None and not isinstance(value, str):
        raise TypeError(f"attn: {name}= must be one of {accepted}, got "
                        f"{_type_name(value)}")


def _check_mask(mask):
    """The C++ builder's spelling of a documented mask."""
    _no_callables("mask", mask, _MASKS)
    if mask is None or mask == "none":
        return "none"
    if mask == "document":
        return mask
    m = re.fullmatch(r"(sasa|natten):(.*)", mask)
    if m:
        kind, text = m.groups()
        fields = text.split(":")
        values = [int(f) if re.fullmatch(r"[0-9]+", f) else 0 for f in fields]
        if len(values) != (3 if kind == "natten" else 2) or not all(
                0 < v <= _INT64_MAX for v in values) or (
                kind == "natten" and 2 * (values[2] // 2) >= min(values[:2])):
            need = ("H, W and K positive ints, the window (2 * (K // 2) + 1 "
                    "wide) inside H x W"
                    if kind == "natten" else "W and K positive ints")
            spelled = "natten:H:W:K" if kind == "natten" else "sasa:W:K"
            raise ValueError(f"attn: mask='{spelled}' needs {need}, not "
                             f"{text!r}")
        return kind + ":" + ":".join(map(str, values))
    m = re.fullmatch(r"(sliding-window|prefix|jagged):(.*)", mask)
    if m:
        kind, text = m.groups()
        value = int(text) if re.fullmatch(r"[0-9]+", text) else None
        if kind == "sliding-window" and (value is None or
                                         not 0 < value <= _INT64_MAX):
            raise ValueError("attn: mask='sliding-window:W' needs W a "
                             f"positive int, not {text!r}")
        if kind != "sliding-window" and (value is None or
                                         value > _INT64_MAX):
            raise ValueError(f"attn: mask='{kind}:P' needs P a non-negative "
                             f"int, not {text!r}")
        return f"{kind}:{value}"
    raise ValueError(f"attn: mask= must be one of {_MASKS}, not {mask!r}")


def _check_score_mod(score_mod):
    _no_callables("score_mod", score_mod, _SCORE_MODS)
    if score_mod is None or score_mod == "none":
        return "none"
    if score_mod in ("alibi", "relative", "checkerboard"):
        return score_mod
    m = re.fullmatch(r"softcap:(.*)", score_mod)
    if m:
        text = m.group(1)
        if not re.fullmatch(r"([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?",
                            text):
            raise ValueError("attn: score_mod='softcap:C' needs C a finite "
                             f"positive number, not {text!r}")
        cap = _check_positive_float("score_mod='softcap:C': C", float(text))
        return f"softcap:{cap!r}"
    raise ValueError(f"attn: score_mod= must be one of {_SCORE_MODS}, not "
                     f"{score_mod!r}")


def _check_chip(chip):
    if not isinstance(chip, str) or not re.fullmatch(r"sm_[0-9]+a?", chip):
        raise ValueError("attn: chip= must look like 'sm_90' or 'sm_90a', "
                         f"not {chip!r}")
    return chip
