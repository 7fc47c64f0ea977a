"""attn: an MLIR compiler for tiled attention, from Python.

Compiler side (needs the attn libraries and MLIR; `attn.compiler_available`):
build attention and softmax IR, parse and print it, lower it
(module.lower_to_nvvm, module.lower_to_cpu, or any pipeline text), get PTX,
write kernel bundles, JIT-run on the CPU on numpy arrays.

Runtime side (needs only the runtime library; builds without MLIR): load a
kernel bundle and run it on numpy arrays or GPU tensors (PyTorch tensors,
anything with ``__cuda_array_interface__``) without copies.

    import numpy as np, attn
    module = attn.attention(dtype="f32", head_dim=64, causal=True)
    kernel = attn.compile_cpu(module)
    q, k, v = (np.random.rand(1, 4, 128, 64).astype(np.float32) for _ in range(3))
    out = np.empty_like(q)
    kernel(q, k, v, out)
"""

from .block_mask import BlockMask
from .runtime import Kernel, Stream, alibi_slopes, chip, has_gpu_reference
from .trace import TraceError
from . import cache

try:
    from .compiler import (Module, CpuKernel, attention, attention_grad,
                           softmax, compile_cpu, compile_gpu,
                           block_mask_module, create_block_mask, captures)
    compiler_available = True
except ImportError:  # a runtime-only build (no MLIR)
    compiler_available = False

__all__ = ["BlockMask", "Kernel", "Stream", "alibi_slopes", "chip",
           "has_gpu_reference", "compiler_available", "Module", "CpuKernel",
           "attention", "attention_grad", "softmax", "compile_cpu",
           "compile_gpu",
           "block_mask_module", "create_block_mask", "captures",
           "TraceError"]
