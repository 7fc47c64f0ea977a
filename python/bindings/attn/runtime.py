"""The runtime side of attn: run kernel bundles (wraps _runtime).

Needs only the runtime library: on the GPU machine this package works
without MLIR. Arrays can be numpy arrays (copied to the GPU and back) or GPU
tensors: objects with __cuda_array_interface__, or PyTorch CUDA tensors
(bf16 included), which are used in place.

Calls from several threads are safe. Each call runs on a CUDA stream (the
`stream=` argument, PyTorch's current stream for torch tensors, else the
legacy default stream), and each stream has its own workspace, so calls on
different streams run concurrently.
"""

import numbers
import sys

from . import _runtime

chip = _runtime.chip
has_gpu_reference = _runtime.has_gpu_reference

# Element types: MLIR name -> (bytes, numpy dtype names, torch dtype names,
# __cuda_array_interface__ typestrs).
_TYPES = {
    "f32": (4, ("float32",), ("torch.float32",), ("<f4",)),
    "f16": (2, ("float16",), ("torch.float16",), ("<f2",)),
    "bf16": (2, ("uint16", "bfloat16"), ("torch.bfloat16",), ()),
    "i32": (4, ("int32",), ("torch.int32",), ("<i4",)),
    "i64": (8, ("int64",), ("torch.int64",), ("<i8",)),
}


class Kernel:
    """A function of a kernel bundle (bundle.json written by
    attn-write-kernel-bundle), callable on arrays: kernel(q, k, v, out).
    Arrays whose sizes break the bundle's shape contract (out shorter than
    q, K and V of different lengths, short captured arrays...) raise
    ValueError before any GPU work; numpy inputs may be read-only, outputs
    must be writable.

    What the bundle says, as the runtime read it:
      arg_names  the arguments' names ("q", "out", "argument 5", ...)
      arg_types  (shape, dtype) per argument, -1 for a dynamic size
      computes   one dict per attn op: op, dtype, head dims, scale, causal,
                 mask_mod and score_mod ({"name", "digest"} or None), ...
      launches   one dict per kernel launch, its expressions as text
    """

    def __init__(self, bundle, function=""):
        self._bundle = _runtime.Bundle(bundle)
        self.function = function or self._bundle.functions[0]
        args = self._bundle.args(self.function)
        self.arg_names = [name for name, _, _ in args]
        self.arg_types = [(list(shape), dtype) for _, shape, dtype in args]
        for i, (_, dtype) in enumerate(self.arg_types):
            if dtype not in _TYPES:
                raise ValueError(f"attn: {self._describe(i)} has {dtype} "
                                 "elements, which attn.Kernel cannot pass")
        self.computes = self._bundle.computes(self.function)
        self.launches = self._bundle.launches(self.function)

    def __call__(self, *arrays, stream=None):
        """Runs the function on `arrays` and waits for it. `stream`: a
        CUstream as an int, a torch.cuda.Stream, an attn.runtime.Stream or
        an object with __cuda_stream__; by default PyTorch's current stream
        when the arrays are torch tensors, else the legacy default
        stream."""
        if len(arrays) != len(self.arg_types):
            raise TypeError(f"attn: @{self.function} takes "
                            f"{len(self.arg_types)} arrays, got {len(arrays)}")
        views = [self._view(i, a) for i, a in enumerate(arrays)]
        on_gpu = {v[2] for v in views}
        if len(on_gpu) != 1:
            raise ValueError("attn: pass all arrays on the GPU or all on the "
                             "host (numpy), not a mix")
        # The sizes' agreement (the bundle's shape contract: out as long as
        # q, K and V of one length, captured arrays long enough...), before
        # any GPU work (launch checks it again).
        self._check_shapes([v[1] for v in views])
        handle = _stream_handle(stream, arrays)
        if on_gpu == {True}:
            self._bundle.launch(self.function, [(v[0], v[1]) for v in views],
                                handle)
            return
        # Host arrays: every check first, then copy in, run, and copy back
        # into the writable arrays (read-only ones are inputs: a kernel that
        # wrote one is an error, and the array is left as it was).
        import numpy as np
        for i, a in enumerate(arrays):
            if not a.flags["WRITEABLE"] and self._is_output(i):
                raise ValueError(f"attn: {self._describe(i)}: the array is "
                                 "read-only, but the kernel writes its "
                                 "results into it")
        addresses = []
        try:
            for a in arrays:
                addresses.append(_runtime.malloc(max(a.nbytes, 1)))
                _runtime.copy_to_device(addresses[-1], a.tobytes())
            self._bundle.launch(self.function,
                                [(addr, list(a.shape))
                                 for addr, a in zip(addresses, arrays)],
                                handle)
            results = [_runtime.copy_to_host(addr, a.nbytes)
                       for addr, a in zip(addresses, arrays)]
        finally:
            for addr in addresses:
                _runtime.free(addr)
        for i, (data, a) in enumerate(zip(results, arrays)):
            if not a.flags["WRITEABLE"] and data != a.tobytes():
                raise ValueError(f"attn: {self._describe(i)}: the array is "
                                 "read-only, but the kernel wrote results "
                                 "into it (none were copied back)")
        for data, a in zip(results, arrays):
            if a.flags["WRITEABLE"]:
                a[...] = np.frombuffer(data, dtype=a.dtype).reshape(a.shape)

    def prepare(self, *arrays, stream=None):
        """The launches for these GPU arrays on `stream` (as for a call),
        checked and evaluated once: calling the result queues them again
        without checks and without waiting for them (for timing). The
        result holds the arrays, which stay alive as long as it."""
        if len(arrays) != len(self.arg_types):
            raise TypeError(f"attn: @{self.function} takes "
                            f"{len(self.arg_types)} arrays, got {len(arrays)}")
        views = [self._view(i, a) for i, a in enumerate(arrays)]
        if not all(v[2] for v in views):
            raise ValueError("attn: prepare() takes arrays on the GPU")
        self._check_shapes([v[1] for v in views])
        launch = self._bundle.prepare(self.function,
                                      [(v[0], v[1]) for v in views],
                                      _stream_handle(stream, arrays)).launch

        def run():
            launch()
        run.arrays = arrays
        return run

    def _check_shapes(self, shapes):
        """ValueError when the shapes break the bundle's shape contract."""
        message = self._bundle.check_arguments(self.function, shapes)
        if message:
            raise ValueError(f"attn: {message}")

    def _is_output(self, i):
        return self.arg_names[i] in ("out", "lse")

    def _describe(self, i):
        name, number = self.arg_names[i], f"argument {i}"
        if name != number:
            return f"{name} ({number}) of @{self.function}"
        return f"{number} of @{self.function}"

    def _view(self, i, a):
        """(address, shape, on_gpu) of argument i, checked against the
        bundle's type."""
        dims, elem = self.arg_types[i]
        where = f"attn: {self._describe(i)}"
        if hasattr(a, "__cuda_array_interface__") and not hasattr(a, "data_ptr"):
            cai = a.__cuda_array_interface__
            shape, typestr = list(cai["shape"]), cai["typestr"]
            if typestr not in _TYPES[elem][3]:
                raise TypeError(f"{where}: expected {elem} elements, got "
                                f"typestr {typestr}")
            if cai.get("strides") not in (None, _contiguous(shape, _TYPES[elem][0])) \
                    and _count(shape) > 0:  # an empty array has no layout
                raise ValueError(f"{where}: the array must be C-contiguous")
            address, on_gpu = cai["data"][0], True
        elif hasattr(a, "data_ptr") and hasattr(a, "is_cuda"):  # PyTorch
            shape = list(a.shape)
            if str(a.dtype) not in _TYPES[elem][2]:
                raise TypeError(f"{where}: expected {elem} elements, got "
                                f"{a.dtype}")
            if not a.is_contiguous():
                raise ValueError(f"{where}: the tensor must be contiguous")
            if a.is_cuda and a.device.index not in (None, 0):
                raise ValueError(f"{where}: the tensor is on {a.device}; attn "
                                 "runs on cuda:0")
            if not a.is_cuda:
                raise ValueError(f"{where}: the tensor is on the CPU; pass "
                                 "CUDA tensors, or numpy arrays")
            address, on_gpu = a.data_ptr(), True
        elif hasattr(a, "dtype") and hasattr(a, "flags"):  # numpy
            shape = list(a.shape)
            if str(a.dtype) not in _TYPES[elem][1]:
                raise TypeError(f"{where}: expected {elem} elements"
                                f"{' (as uint16 bits)' if elem == 'bf16' else ''}"
                                f", got {a.dtype}")
            if not a.flags["C_CONTIGUOUS"]:
                raise ValueError(f"{where}: the array must be C-contiguous")
            address, on_gpu = 0, False
        else:
            raise TypeError(f"{where}: expected a numpy array or a GPU tensor, "
                            f"got {type(a).__name__}")
        if len(shape) != len(dims):
            raise ValueError(f"{where}: expected rank {len(dims)}, got "
                             f"{len(shape)}")
        for d, (want, got) in enumerate(zip(dims, shape)):
            if want >= 0 and want != got:
                raise ValueError(f"{where}: dim {d} must be {want}, got {got}")
        return address, shape, on_gpu


class Stream:
    """A CUDA stream of its own (non-blocking), with its own workspace:
    pass it as `stream=` to run calls concurrently with other streams'.
    Destroyed by close() or at the end of a with block."""

    def __init__(self):
        self.cuda_stream = _runtime.create_stream()

    def synchronize(self):
        """Waits for what is queued on the stream."""
        _runtime.synchronize(self.cuda_stream)

    def close(self):
        if self.cuda_stream:
            _runtime.destroy_stream(self.cuda_stream)
            self.cuda_stream = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _stream_handle(stream, arrays):
    """The CUstream of `stream=` as an int (see Kernel.__call__)."""
    if stream is None:
        # No torch tensor exists unless torch was imported.
        torch = sys.modules.get("torch")
        if torch and any(isinstance(a, torch.Tensor) and a.is_cuda
                         for a in arrays):
            return torch.cuda.current_stream().cuda_stream
        return 0
    if hasattr(stream, "__cuda_stream__"):
        stream = stream.__cuda_stream__()[1]
    elif hasattr(stream, "cuda_stream"):
        stream = stream.cuda_stream
    if isinstance(stream, bool) or not isinstance(stream, numbers.Integral) \
            or stream < 0:
        raise TypeError("attn: stream= takes a CUstream as an int, a "
                        "torch.cuda.Stream or an attn.runtime.Stream, got "
                        f"{stream!r}")
    return int(stream)


def synchronize(stream=0):
    """Waits for what is queued on `stream` (as for Kernel.__call__)."""
    _runtime.synchronize(_stream_handle(stream, ()))


def workspace(stream=0):
    """(address, bytes) of the workspace of `stream`; (0, 0) before a
    kernel on the stream needed one. It moves when it grows."""
    return _runtime.workspace(_stream_handle(stream, ()))


def workspace_words(stream=0):
    """The workspace of `stream` (see attn.workspace) as a numpy int32
    array: kernels must leave it zeroed. Empty before a kernel on the
    stream needed one."""
    import numpy as np
    stream = _stream_handle(stream, ())
    address, size = _runtime.workspace(stream)
    if not address:
        return np.zeros(0, np.int32)
    _runtime.synchronize(stream)
    return np.frombuffer(_runtime.copy_to_host(address, size), np.int32)


def alibi_slopes(num_heads):
    """The ALiBi slopes of FlexAttention's notebook as a float32 numpy array
    of length `num_heads`: slope[h] = 2^(-8 (h + 1) / num_heads). Pass it as
    the captured argument of attn.attention(score_mod='alibi')."""
    import numpy as np
    if isinstance(num_heads, bool) or \
            not isinstance(num_heads, numbers.Integral):
        raise TypeError("attn: num_heads= must be a positive int, got "
                        f"{type(num_heads).__name__}")
    num_heads = int(num_heads)
    if num_heads <= 0:
        raise ValueError(f"attn: num_heads= must be a positive int, not "
                         f"{num_heads}")
    h = np.arange(1, num_heads + 1, dtype=np.float64)
    return np.exp2(-8.0 * h / num_heads).astype(np.float32)


def _count(shape):
    count = 1
    for size in shape:
        count *= size
    return count


def _contiguous(shape, itemsize):
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return tuple(strides)
