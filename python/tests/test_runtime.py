"""The runtime side: bundles run on numpy arrays and GPU tensors; argument
checks happen before any GPU work, so they are tested without a GPU."""

import json
import os

import numpy as np
import pytest

import attn
from conftest import driver_present, reference_attention, relative_error

needs_gpu = pytest.mark.skipif(not driver_present(), reason="no CUDA driver")


def compiled_or_prebuilt(tmp_path_factory, make_module, variable):
    """The bundle.json of make_module() compiled for sm_90 here, or
    (runtime-only builds) the prebuilt one the environment `variable`
    names."""
    if not attn.compiler_available:
        prebuilt = os.environ.get(variable)
        if not prebuilt:
            pytest.skip(f"runtime-only build and no {variable}")
        return prebuilt
    directory = tmp_path_factory.mktemp("bundle")
    attn.compile_gpu(make_module(), "sm_90", str(directory))
    return str(directory / "bundle.json")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """A bundle of f16 causal attention with dynamic sizes."""
    return compiled_or_prebuilt(
        tmp_path_factory,
        lambda: attn.attention(dtype="f16", heads=(8, 2), causal=True),
        "ATTN_TEST_BUNDLE")


class FakeTensor:
    """Duck-types the PyTorch attributes attn reads."""

    def __init__(self, shape, dtype="torch.float16", cuda=True, index=0):
        self.shape, self.dtype, self.is_cuda = shape, dtype, cuda
        self.device = type("Device", (), {"index": index})()

    def data_ptr(self):
        return 0

    def is_contiguous(self):
        return True


def test_bundle_errors(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        attn.Kernel("/no/such/bundle.json")
    # The runtime validates a bundle when loading it: an operand that names
    # an argument the function does not have is refused by name.
    (tmp_path / "k.ptx").write_text(".version 8.0\n")
    bundle = {
        "format": "attn-kernel-bundle", "version": 2,
        "binaries": [{"name": "k", "file": "k.ptx", "format": "ptx",
                      "target": ""}],
        "functions": [{
            "name": "f",
            "args": [{"name": "q", "dtype": "f16", "shape": [None, 64]}],
            "launches": [{
                "module": "k", "kernel": "k",
                "grid": [{"dim": {"arg": "q", "index": 0}}, {"const": 1},
                         {"const": 1}],
                "block": [{"const": 128}, {"const": 1}, {"const": 1}],
                "operands": [{"kind": "buffer", "arg": "kk"}]}]}]}
    (tmp_path / "bundle.json").write_text(json.dumps(bundle))
    with pytest.raises(ValueError, match="kernel 'k' operand 0 names "
                                         "argument 'kk', which the function "
                                         "does not have"):
        attn.Kernel(str(tmp_path / "bundle.json"))
    bundle["version"] = 1
    (tmp_path / "bundle.json").write_text(json.dumps(bundle))
    with pytest.raises(ValueError, match="this runtime reads version 2"):
        attn.Kernel(str(tmp_path / "bundle.json"))


def test_what_the_bundle_says(bundle):
    """Arguments, what the function computes and its launches come from the
    runtime's reader."""
    kernel = attn.Kernel(bundle)
    assert [t[1] for t in kernel.arg_types] == ["f16"] * 4
    assert kernel.arg_types[0][0][3] == 64
    if not kernel.computes:
        pytest.skip("the prebuilt bundle does not say what it computes")
    (computes,) = kernel.computes
    assert computes["op"] == "attention" and computes["causal"]
    assert computes["dtype"] == "f16" and computes["head_dim"] == 64
    assert computes["mask_mod"] is None and computes["score_mod"] is None
    assert abs(computes["scale"] - 0.125) < 1e-7
    # mma.sync kernels take buffers, sm_90a's TMA kernels tensor maps.
    launch = kernel.launches[0]
    for name in "qkv":
        assert f"buffer({name})" in launch["operands"] or any(
            op.startswith(f"tensor_map({name}, ") for op in launch["operands"])
    assert "dim(q, 2)" in launch["grid"][0]


def test_argument_checks(bundle):
    kernel = attn.Kernel(bundle)
    assert kernel.function == "attention"
    q = np.zeros((1, 8, 16, 64), np.float16)
    kv = np.zeros((1, 2, 16, 64), np.float16)
    with pytest.raises(TypeError, match="takes 4 arrays"):
        kernel(q, kv, kv)
    with pytest.raises(TypeError, match="expected f16 elements, got float32"):
        kernel(q.astype(np.float32), kv, kv, q)
    with pytest.raises(ValueError, match="expected rank 4, got 3"):
        kernel(q, kv[0], kv, q)
    if kernel.arg_types[1][0][1] == 2:  # static kv heads (compiled here)
        with pytest.raises(ValueError, match="dim 1 must be 2, got 8"):
            kernel(q, q, q, q)
    with pytest.raises(ValueError, match="all arrays on the GPU or all on the host"):
        kernel(FakeTensor((1, 8, 16, 64)), kv, kv, q)
    with pytest.raises(ValueError, match="is on the CPU"):
        kernel(FakeTensor((1, 8, 16, 64), cuda=False), kv, kv, q)
    with pytest.raises(ValueError, match="runs on cuda:0"):
        kernel(FakeTensor((1, 8, 16, 64), index=1), kv, kv, q)
    with pytest.raises(TypeError, match="expected f16 elements, got torch.bfloat16"):
        kernel(FakeTensor((1, 8, 16, 64), "torch.bfloat16"), kv, kv, q)
    with pytest.raises(TypeError, match="expected a numpy array or a GPU tensor"):
        kernel([1], kv, kv, q)
    # prepare() (launches evaluated once, for timing) takes GPU arrays only.
    with pytest.raises(ValueError, match="prepare\\(\\) takes arrays on the GPU"):
        kernel.prepare(q, kv, kv, q)


def test_shapes_are_checked_before_any_gpu_work(bundle):
    """Sizes that do not agree, and read-only outputs, are ValueErrors naming
    the arguments, raised before anything is allocated or copied (so also
    without a GPU)."""
    kernel = attn.Kernel(bundle)
    if attn.compiler_available:
        assert kernel.arg_names == ["q", "k", "v", "out"]
    elif kernel.arg_names[0] != "q":
        pytest.skip("the prebuilt bundle has no shape contract")
    q = np.zeros((1, 8, 16, 64), np.float16)
    kv = np.zeros((1, 2, 16, 64), np.float16)
    out = np.zeros_like(q)
    with pytest.raises(ValueError, match=r"\bout\b.*\bq\b|\bq\b.*\bout\b"):
        kernel(q, kv, kv, np.zeros((1, 8, 1, 64), np.float16))
    with pytest.raises(ValueError, match=r"\bv\b.*\bk\b|\bk\b.*\bv\b"):
        kernel(q, kv, kv[:, :, :8].copy(), out)
    with pytest.raises(ValueError, match="batch"):
        kernel(np.zeros((4, 8, 16, 64), np.float16), kv, kv,
               np.zeros((4, 8, 16, 64), np.float16))
    out.setflags(write=False)
    with pytest.raises(ValueError, match=r"out \(argument 3\).*read-only"):
        kernel(q, kv, kv, out)


@pytest.fixture(scope="module")
def softmax_checks(tmp_path_factory):
    return attn.Kernel(compiled_or_prebuilt(
        tmp_path_factory, lambda: attn.softmax("f32"),
        "ATTN_TEST_SOFTMAX_BUNDLE"))


def test_softmax_output_smaller_than_input(softmax_checks):
    if softmax_checks.arg_names[1] != "out":
        pytest.skip("the prebuilt bundle has no shape contract")
    with pytest.raises(ValueError, match="out"):
        softmax_checks(np.ones((64, 4096), np.float32),
                       np.zeros((1, 1), np.float32))


@pytest.mark.skipif(driver_present(), reason="a CUDA driver is present")
def test_no_driver_is_a_clear_error(bundle):
    kernel = attn.Kernel(bundle)
    q = np.zeros((1, 8, 16, 64), np.float16)
    kv = np.zeros((1, 2, 16, 64), np.float16)
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        kernel(q, kv, kv, np.zeros_like(q))
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        kernel.prepare(*(FakeTensor(a.shape) for a in (q, kv, kv, q)))
    with pytest.raises(RuntimeError, match="no CUDA driver"):
        attn.chip()


@needs_gpu
def test_numpy_on_the_gpu(bundle):
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, (2, 8, 130, 64)).astype(np.float16)
    k = rng.uniform(-1, 1, (2, 2, 257, 64)).astype(np.float16)
    v = rng.uniform(-1, 1, (2, 2, 257, 64)).astype(np.float16)
    out = np.full_like(q, np.nan)
    attn.Kernel(bundle)(q, k, v, out)
    assert relative_error(out, reference_attention(q, k, v, causal=True)[0]) < 2e-3


@needs_gpu
def test_numpy_read_only_inputs_and_empty_arrays(bundle):
    rng = np.random.default_rng(2)
    q = rng.uniform(-1, 1, (1, 8, 70, 64)).astype(np.float16)
    k = rng.uniform(-1, 1, (1, 2, 90, 64)).astype(np.float16)
    v = rng.uniform(-1, 1, (1, 2, 90, 64)).astype(np.float16)
    for a in (q, k, v):
        a.setflags(write=False)
    out = np.full_like(q, np.nan)
    kernel = attn.Kernel(bundle)
    kernel(q, k, v, out)
    assert relative_error(out, reference_attention(q, k, v, causal=True)[0]) < 2e-3
    assert not q.flags["WRITEABLE"]
    # Nothing to compute: no error.
    empty = np.zeros((1, 8, 0, 64), np.float16)
    kernel(empty, k, v, np.zeros_like(empty))


@needs_gpu
def test_torch_tensors_in_place(bundle):
    torch = pytest.importorskip("torch")
    q = torch.rand(2, 8, 300, 64, device="cuda", dtype=torch.float16) - 0.5
    k = torch.rand(2, 2, 300, 64, device="cuda", dtype=torch.float16) - 0.5
    v = torch.rand(2, 2, 300, 64, device="cuda", dtype=torch.float16) - 0.5
    out = torch.full_like(q, float("nan"))
    kernel = attn.Kernel(bundle)
    kernel(q, k, v, out)
    want = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double().repeat_interleave(4, 1),
        v.double().repeat_interleave(4, 1), is_causal=True)
    assert ((out.double() - want).norm() / want.norm()).item() < 2e-3
    # A prepared launch queues the same kernels again without waiting.
    run = kernel.prepare(q, k, v, out)
    out.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    assert ((out.double() - want).norm() / want.norm()).item() < 2e-3
    # It holds its arrays: inputs handed over as temporaries stay alive,
    # whatever is allocated after.
    run = kernel.prepare(q.clone(), k.clone(), v.clone(), out)
    out.fill_(float("nan"))
    garbage = [torch.full_like(x, float("nan")) for x in (q, k, v)]
    run()
    torch.cuda.synchronize()
    assert ((out.double() - want).norm() / want.norm()).item() < 2e-3
    del garbage


@pytest.fixture(scope="module")
def softmax_bundle(tmp_path_factory):
    """An f32 softmax bundle with dynamic sizes: its launch takes the
    runtime's workspace and the GPU's SM count."""
    return compiled_or_prebuilt(tmp_path_factory, lambda: attn.softmax("f32"),
                                "ATTN_TEST_SOFTMAX_BUNDLE")


def test_softmax_bundle_takes_a_workspace(softmax_bundle):
    kernel = attn.Kernel(softmax_bundle)
    launch = kernel.launches[0]
    assert "workspace" in launch["operands"]
    assert "sm_count" in launch["workspace_bytes"]
    if kernel.computes:
        assert kernel.computes == [{"op": "softmax", "dtype": "f32"}]


@needs_gpu
def test_softmax_rows_split_across_blocks(softmax_bundle):
    """Rows split across blocks meet through the workspace: the results are
    right for one shape after another (the workspace grows and is left
    zeroed), long rows and short ones."""
    torch = pytest.importorskip("torch")
    kernel = attn.Kernel(softmax_bundle)
    for rows, n in ((5, 7), (3, 300007), (64, 1 << 18), (3, 300007), (1, 1 << 22)):
        x = torch.randn(rows, n, device="cuda") * 30
        x[0, ::5] = float("-inf")
        y = torch.full_like(x, float("nan"))
        kernel(x, y)
        want = torch.softmax(x.double(), dim=-1)
        assert ((y.double() - want).norm() / want.norm()).item() < 1e-6, (rows, n)


@needs_gpu
def test_softmax_of_nothing(softmax_bundle):
    """Empty rows, and no rows: the launch is empty or its blocks do
    nothing; neither is an error (no launch expression divides by zero),
    and the kernel works as before after them."""
    torch = pytest.importorskip("torch")
    kernel = attn.Kernel(softmax_bundle)
    for rows, n in ((3, 0), (0, 100003), (0, 0)):
        kernel(torch.randn(rows, n, device="cuda"),
               torch.empty(rows, n, device="cuda"))
    torch.cuda.synchronize()
    x = torch.randn(2, 100003, device="cuda")
    y = torch.full_like(x, float("nan"))
    kernel(x, y)
    want = torch.softmax(x.double(), dim=-1)
    assert ((y.double() - want).norm() / want.norm()).item() < 1e-6


def test_stream_argument_checks(bundle):
    """stream= takes a CUstream as an int or an object that has one; anything
    else raises TypeError before any GPU work."""
    kernel = attn.Kernel(bundle)
    q = np.zeros((1, 8, 16, 64), np.float16)
    kv = np.zeros((1, 2, 16, 64), np.float16)
    for bad in ("0", -1, 1.5, True, object()):
        with pytest.raises(TypeError, match="stream= takes a CUstream"):
            kernel(q, kv, kv, np.zeros_like(q), stream=bad)


@needs_gpu
def test_softmax_calls_from_threads_on_streams(softmax_bundle):
    """Two threads on streams of their own, each growing its workspace,
    give the results of the same calls on the default stream, bit for
    bit (bench/concurrent_calls.py does more of this in the GPU round)."""
    import threading
    kernel = attn.Kernel(softmax_bundle)
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal((3, n)).astype(np.float32) * 10
              for n in (1000, 70001, 1 << 18, 300007)]
    want = []
    for x in inputs:
        want.append(np.full_like(x, np.nan))
        kernel(x, want[-1])
    failures = []

    def worker(stream):
        for _ in range(20):
            for x, w in zip(inputs, want):
                y = np.full_like(x, np.nan)
                kernel(x, y, stream=stream)
                if not np.array_equal(y, w):
                    failures.append(x.shape)

    with attn.Stream() as s0, attn.Stream() as s1:
        threads = [threading.Thread(target=worker, args=(s,))
                   for s in (s0, s1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not attn.runtime.workspace_words(s0).any()
    assert not failures
