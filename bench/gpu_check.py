#!/usr/bin/env python3
"""Runs attn kernel bundles on the GPU and checks them against PyTorch.

The GPU machine has CUDA and PyTorch but no MLIR: this loads the PTX of a
bundle written by `attn-opt ... --attn-write-kernel-bundle` through the CUDA
Driver API (ctypes on libcuda.so.1), evaluates the bundle's launch
expressions for each problem size, passes memrefs as MLIR descriptors
(allocated ptr, aligned ptr, offset, sizes..., strides...), and compares the
output with a float64 PyTorch reference. Inputs are fresh random tensors,
the output is poisoned with NaN first.

  python3 bench/gpu_check.py BUNDLE_DIR/NAME-bundle.json --variant causal ...
"""

import argparse
import ctypes
import itertools
import json
import math
import os
import re
import sys

import torch

CUDA_SUCCESS = 0


class Driver:
    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            sys.exit(f"gpu_check: no CUDA driver: {e}")
        torch.cuda.init()  # creates the primary context we launch into
        torch.zeros(1, device="cuda")
        self.opted_in = {}  # kernels allowed more than 48 KiB of shared memory

    def check(self, result, what):
        if result != CUDA_SUCCESS:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(name))
            raise RuntimeError(f"{what} failed: {name.value.decode()}")

    def load(self, image: bytes):
        module = ctypes.c_void_p()
        log = ctypes.create_string_buffer(1 << 16)
        # CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
        options = (ctypes.c_int * 2)(5, 6)
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p),
                                       ctypes.c_void_p(len(log)))
        result = self.lib.cuModuleLoadDataEx(ctypes.byref(module), image, 2,
                                             options, values)
        if result != CUDA_SUCCESS:
            raise RuntimeError("cuModuleLoadDataEx failed: " +
                               log.value.decode(errors="replace"))
        return module

    def function(self, module, name):
        fn = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module,
                                                name.encode()),
                   f"cuModuleGetFunction({name})")
        return fn

    def launch(self, fn, grid, block, params, shared=0):
        if 0 in grid:
            return  # an empty problem: nothing to launch (as the runtime)
        # Static shared memory (gpu.all_reduce's) counts too: opt in for
        # any dynamic amount rather than only above 48 KiB.
        if shared > 0 and self.opted_in.get(fn.value) != shared:
            # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
            self.check(self.lib.cuFuncSetAttribute(fn, 8, shared),
                       f"cuFuncSetAttribute({shared} bytes of shared memory)")
            self.opted_in[fn.value] = shared
        holders = []
        pointers = (ctypes.c_void_p * len(params))()
        for i, p in enumerate(params):
            holders.append(p)
            pointers[i] = ctypes.cast(ctypes.byref(p), ctypes.c_void_p)
        stream = torch.cuda.current_stream().cuda_stream
        self.check(self.lib.cuLaunchKernel(
            fn, ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]),
            ctypes.c_uint(grid[2]), ctypes.c_uint(block[0]),
            ctypes.c_uint(block[1]), ctypes.c_uint(block[2]),
            ctypes.c_uint(shared), ctypes.c_void_p(stream), pointers, None),
            f"cuLaunchKernel(grid {grid}, block {block}, {shared} bytes of "
            f"dynamic shared memory)")


# --- launch expressions --------------------------------------------------

def affine_eval(text, symbols):
    """Evaluates an affine expression over s0, s1, ... (ints)."""
    tokens = re.findall(r"\d+|s\d+|d\d+|ceildiv|floordiv|mod|[-+*()]", text)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def atom():
        t = take()
        if t == "(":
            v = expr()
            take()
            return v
        if t == "-":
            return -atom()
        if t[0] in "sd":
            return symbols[t]
        return int(t)

    def term():
        v = atom()
        while peek() in ("*", "ceildiv", "floordiv", "mod"):
            op, r = take(), atom()
            if op == "*":
                v *= r
            elif op == "ceildiv":
                v = -((-v) // r)
            elif op == "floordiv":
                v //= r
            else:
                v %= r
        return v

    def expr():
        v = term()
        while peek() in ("+", "-"):
            op, r = take(), term()
            v = v + r if op == "+" else v - r
        return v

    return expr()


_workspace = []  # the runtime's zeroed workspace (kernels leave it zeroed)


def reserve_workspace(nbytes):
    """The zeroed workspace, grown to at least `nbytes` (attn.workspace)."""
    if not _workspace or _workspace[0].numel() < nbytes:
        torch.cuda.synchronize()
        _workspace[:] = [torch.zeros(max(nbytes, 4), dtype=torch.uint8,
                                     device="cuda")]
    return _workspace[0]


def workspace_is_zero():
    """Whether the kernels left the workspace zeroed, as they must."""
    torch.cuda.synchronize()
    return not _workspace or not _workspace[0].any().item()


def evaluate(text, args):
    """A bundle expression: int, f32(x), %argN, dim(E, k), op(E, E),
    affine(()[s0, ...] -> (expr), [E, ...]), sm_count, workspace."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text == "sm_count":
        return torch.cuda.get_device_properties(0).multi_processor_count
    if text == "workspace":
        return ("workspace",)
    m = re.fullmatch(r"f32\((.*)\)", text)
    if m:
        v = m.group(1)
        return ("f32", float({"Inf": "inf", "-Inf": "-inf"}.get(v, v)))
    m = re.fullmatch(r"%arg(\d+)", text)
    if m:
        return ("memref", int(m.group(1)))
    m = re.fullmatch(r"dim\((%arg\d+), (\d+)\)", text)
    if m:
        _, index = evaluate(m.group(1), args)
        return args[index].shape[int(m.group(2))]
    m = re.fullmatch(r"affine\(\(\)\[([^\]]*)\] -> \((.*)\), \[(.*)\]\)", text)
    if m:
        names = [s.strip() for s in m.group(1).split(",")]
        values = split_top(m.group(3))
        symbols = {n: evaluate(v, args) for n, v in zip(names, values)}
        return affine_eval(m.group(2), symbols)
    m = re.fullmatch(r"(add|sub|mul|div|ceildiv|min|max)\((.*)\)", text)
    if m:
        a, b = (evaluate(x, args) for x in split_top(m.group(2)))
        return {"add": lambda: a + b, "sub": lambda: a - b,
                "mul": lambda: a * b, "div": lambda: a // b,
                "ceildiv": lambda: -((-a) // b), "min": lambda: min(a, b),
                "max": lambda: max(a, b)}[m.group(1)]()
    raise ValueError(f"unknown bundle expression: {text}")


def split_top(text):
    parts, depth, current = [], 0, ""
    for c in text:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += c
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def kernel_params(operands, args):
    params = []
    for text in operands:
        v = evaluate(text, args)
        if isinstance(v, int):
            params.append(ctypes.c_int64(v))
        elif v[0] == "f32":
            params.append(ctypes.c_float(v[1]))
        elif v[0] == "workspace":  # memref<?xi32>
            w = _workspace[0]
            params += [ctypes.c_void_p(w.data_ptr()),
                       ctypes.c_void_p(w.data_ptr()), ctypes.c_int64(0),
                       ctypes.c_int64(w.numel() // 4), ctypes.c_int64(1)]
        else:  # a memref: its descriptor, field by field
            t = args[v[1]]
            params += [ctypes.c_void_p(t.data_ptr()),
                       ctypes.c_void_p(t.data_ptr()), ctypes.c_int64(0)]
            params += [ctypes.c_int64(s) for s in t.shape]
            params += [ctypes.c_int64(s) for s in t.stride()]
    return params


def load_softmax(drv, directory, variant, name):
    """(function, launch) of bundle softmax[-VARIANT]-NAME in `directory`
    (scripts/make-gpu-bundles.sh): its one kernel's first launch."""
    prefix = f"softmax-{variant}-{name}" if variant else f"softmax-{name}"
    with open(os.path.join(directory, f"{prefix}-bundle.json")) as f:
        bundle = json.load(f)
    with open(os.path.join(directory, bundle["binaries"][0]["file"]), "rb") as f:
        module = drv.load(f.read() + b"\0")
    launch = bundle["functions"][0]["launches"][0]
    return drv.function(module, launch["kernel"]), launch


def softmax_launch(drv, kernel, x, y):
    """A call that launches `kernel` (load_softmax's) on x -> y, with the
    workspace it needs reserved; and its grid's block count."""
    fn, launch = kernel
    args = [x, y]
    grid = [evaluate(e, args) for e in launch["grid"]]
    block = [evaluate(e, args) for e in launch["block"]]
    shared = evaluate(launch.get("shared_memory_bytes", "0"), args)
    reserve_workspace(evaluate(launch.get("workspace_bytes", "0"), args))
    params = kernel_params(launch["operands"], args)
    return (lambda: drv.launch(fn, grid, block, params, shared)), grid[0]


# --- reference -----------------------------------------------------------

# Significand bits and least normal exponent of each output type.
_FORMATS = {torch.float32: (23, -126), torch.float16: (10, -14),
            torch.bfloat16: (7, -126)}


def softmax_reference(x):
    """Softmax of x in float64; rows of only -inf are defined as 0."""
    return torch.nan_to_num(torch.softmax(x.double(), dim=-1), nan=0.0)


def softmax_error(y, ref):
    """The error of softmax output y (f32, f16 or bf16, [rows, N]) against
    the float64 reference `ref`, beyond what storing in y's type must cost:
    the larger of
      || max(|y - ref| - step(ref) / 2, 0) || / ||ref||, step(ref) the
        spacing of y's type at ref (subnormals included): 0 when every
        element is ref correctly rounded;
      each row's |sum(y) - sum(ref rounded)| less one step of its largest
        element, over sum(ref) (infinite for anything in a row of -inf,
        whose softmax is defined as 0): a scale error too small to move
        single elements past their rounding (a row sum off by 1e-3 in a
        row of subnormals) still moves the row's sum.
    A plain norm against ref rounded to y's type is no measure for long f16
    rows: their values are subnormal (one step is up to the value itself),
    and a last-bit difference of a correct f32 result moves every element
    of one input value across a rounding boundary at once (f16 [1, 2^24]:
    4e-3 from a row sum off by 1e-5)."""
    if y.numel() == 0:
        return 0.0
    bits, least = _FORMATS[y.dtype]
    _, exponent = torch.frexp(ref)  # ref = m * 2^exponent, 0.5 <= |m| < 1
    power = torch.where(ref == 0, least, (exponent - 1).clamp(min=least))
    step = torch.ldexp(torch.ones_like(ref), power - bits)
    got = y.double()
    excess = ((got - ref).abs() - step / 2).clamp(min=0)
    norm = ref.norm().item()
    elements = excess.norm().item() / (norm if norm else 1.0)
    rounded = ref.to(y.dtype).double()
    mass = ref.sum(dim=-1)
    bias = ((got - rounded).sum(dim=-1).abs() - step.max(dim=-1).values)
    bias = bias.clamp(min=0)
    # A row of -inf has no mass: anything in it is wrong.
    bias = torch.where(mass > 0, bias / torch.where(mass > 0, mass, 1.0),
                       torch.where(bias > 0, math.inf, 0.0))
    return max(elements, bias.max().item())


def reference(q, k, v, causal, window, scale):
    b, hq, m, d = q.shape
    hkv, n = k.shape[1], k.shape[2]
    g = hq // hkv
    kk = k.double().repeat_interleave(g, dim=1)
    vv = v.double().repeat_interleave(g, dim=1)
    s = torch.einsum("bhmd,bhnd->bhmn", q.double(), kk) * scale
    qi = torch.arange(m, device=q.device).view(m, 1)
    ki = torch.arange(n, device=q.device).view(1, n)
    keep = torch.ones(m, n, dtype=torch.bool, device=q.device)
    if causal:
        keep &= ki <= qi
    if window:  # FlexAttention's sliding window: causal, q - kv <= W
        keep &= (ki <= qi) & ((qi - ki) <= window)
    s = s.masked_fill(~keep, float("-inf"))
    mx = s.amax(-1, keepdim=True)
    safe = torch.where(torch.isinf(mx), torch.zeros_like(mx), mx)
    p = torch.exp(s - safe)
    l = p.sum(-1, keepdim=True)
    o = torch.where(l > 0, (p / l) @ vv, torch.zeros_like(q, dtype=torch.float64))
    lse = torch.where(l > 0, safe + torch.log(l), torch.full_like(l, -math.inf))
    return o, lse.squeeze(-1)


def median_ms(run, repeats=20, warmup=1):
    """Median of CUDA-event timings after `warmup` runs."""
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def bench(drv, fn, launch, a, dtype, d, dv):
    b, h, n = (int(x) for x in a.bench.split(","))
    q = torch.empty(b, h, n, d, device="cuda", dtype=dtype).uniform_(-1, 1)
    k = torch.empty(b, h, n, d, device="cuda", dtype=dtype).uniform_(-1, 1)
    v = torch.empty(b, h, n, dv, device="cuda", dtype=dtype).uniform_(-1, 1)
    o = torch.empty(b, h, n, dv, device="cuda", dtype=dtype)
    args = [q, k, v, o]
    if a.lse:
        args.append(torch.empty(b, h, n, device="cuda"))
    grid = [evaluate(x, args) for x in launch["grid"]]
    block = [evaluate(x, args) for x in launch["block"]]
    shared = evaluate(launch.get("shared_memory_bytes", "0"), args)
    params = kernel_params(launch["operands"], args)
    flops = 4.0 * b * h * n * n * d / (2 if a.causal else 1)
    ours = median_ms(lambda: drv.launch(fn, grid, block, params, shared), repeats=5)
    sdpa = median_ms(lambda: torch.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=a.causal))
    print(f"bench B={b} H={h} N={n} D={d} {a.dtype} causal={a.causal}: "
          f"attn {ours:.3f} ms ({flops / ours / 1e9:.2f} TFLOP/s), "
          f"torch SDPA {sdpa:.3f} ms ({flops / sdpa / 1e9:.2f} TFLOP/s), "
          f"ratio {sdpa / ours:.4f}")


DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--window", type=int, default=0)
    ap.add_argument("--lse", action="store_true")
    ap.add_argument("--batch", default="1,2")
    ap.add_argument("--heads", default="4:4,8:2,8:1")
    ap.add_argument("--lens", default="1,17,64,130,257")
    ap.add_argument("--tolerance", type=float, default=0.0)
    ap.add_argument("--bench", default="",
                    help="B,H,N: after the checks, time this shape (Hq = "
                         "Hkv = H, M = N) next to PyTorch SDPA")
    a = ap.parse_args()

    bundle = json.load(open(a.bundle))
    directory = os.path.dirname(a.bundle)
    drv = Driver()
    modules = {}
    for binary in bundle["binaries"]:
        image = open(os.path.join(directory, binary["file"]), "rb").read()
        modules[binary["name"]] = drv.load(image + b"\0")
    function = bundle["functions"][0]
    launch = function["launches"][0]
    fn = drv.function(modules[launch["module"]], launch["kernel"])
    dtype = DTYPES[a.dtype]
    d = int(re.search(r"x(\d+)x[a-z0-9]+>", function["args"][0]).group(1))
    dv = int(re.search(r"x(\d+)x[a-z0-9]+>", function["args"][2]).group(1))
    tol = a.tolerance or (1e-5 if a.dtype == "f32" else 2e-3)
    torch.manual_seed(0)
    cases = failures = 0
    worst = 0.0
    for b, hp, m, n in itertools.product(
            [int(x) for x in a.batch.split(",")], a.heads.split(","),
            [int(x) for x in a.lens.split(",")],
            [int(x) for x in a.lens.split(",")]):
        hq, hkv = (int(x) for x in hp.split(":"))
        q = torch.randn(b, hq, m, d, device="cuda").uniform_(-1, 1).to(dtype)
        k = torch.randn(b, hkv, n, d, device="cuda").uniform_(-1, 1).to(dtype)
        v = torch.randn(b, hkv, n, dv, device="cuda").uniform_(-1, 1).to(dtype)
        o = torch.full((b, hq, m, dv), float("nan"), device="cuda", dtype=dtype)
        args = [q, k, v, o]
        if a.lse:
            args.append(torch.full((b, hq, m), float("nan"), device="cuda"))
        grid = [evaluate(x, args) for x in launch["grid"]]
        block = [evaluate(x, args) for x in launch["block"]]
        shared = evaluate(launch.get("shared_memory_bytes", "0"), args)
        drv.launch(fn, grid, block, kernel_params(launch["operands"], args), shared)
        torch.cuda.synchronize()
        ro, rl = reference(q, k, v, a.causal, a.window, 1 / math.sqrt(d))
        ro = ro.to(dtype).double()  # what a correctly rounded kernel stores
        err = ((o.double() - ro).norm() / ro.norm().clamp_min(1e-300)).item()
        ok = bool(torch.isfinite(o).all()) and err <= tol
        if a.lse:
            got = args[4].double()
            finite = torch.isfinite(rl)
            lerr = ((got[finite] - rl[finite]).norm() /
                    rl[finite].norm().clamp_min(1e-300)).item()
            ok &= bool((got[~finite] == rl[~finite]).all()) and lerr <= tol
            err = max(err, lerr)
        cases += 1
        failures += not ok
        worst = max(worst, err)
        if not ok:
            print(f"  FAIL B={b} Hq={hq} Hkv={hkv} M={m} N={n}: error {err:.3e}")
    if a.bench:
        bench(drv, fn, launch, a, dtype, d, dv)
    print(f"gpu_check {os.path.basename(a.bundle)} dtype={a.dtype} D={d} "
          f"causal={a.causal} window={a.window}: {cases - failures} of {cases} "
          f"cases pass (worst error {worst:.3e}, tolerance {tol:.1e})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
