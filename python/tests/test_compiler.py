"""The compiler side: build, print, lower, JIT-run on the CPU, errors."""

import os

import numpy as np
import pytest

import attn
from conftest import (bf16_bits, from_bf16_bits, needs_compiler,
                      reference_attention, relative_error)

pytestmark = needs_compiler
rng = np.random.default_rng(0)


def inputs(shape_q, shape_kv, dtype=np.float32):
    return tuple(rng.uniform(-1, 1, s).astype(dtype)
                 for s in (shape_q, shape_kv, shape_kv))


def test_builds_and_prints_attention():
    module = attn.attention(dtype="f16", head_dim=64, causal=True,
                            heads=(8, 2), scale=0.25)
    text = str(module)
    assert "attn.attention" in text
    assert "tensor<?x8x?x64xf16>" in text and "tensor<?x2x?x64xf16>" in text
    assert "causal" in text and "scale = 2.500000e-01 : f32" in text
    assert module.functions == ["attention"]
    # Printed IR parses back to the same text.
    assert str(attn.Module.parse(text)) == text


def test_parse_errors_are_value_errors_with_diagnostics():
    with pytest.raises(ValueError, match="does not parse or verify"):
        attn.Module.parse("func.func @f(")
    bad = """func.func @f(%q: tensor<1x4x8x64xf32>, %k: tensor<1x3x8x64xf32>,
               %v: tensor<1x3x8x64xf32>, %o: tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> {
      %r = attn.attention ins(%q, %k, %v : tensor<1x4x8x64xf32>, tensor<1x3x8x64xf32>, tensor<1x3x8x64xf32>)
          outs(%o : tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32>
      return %r : tensor<1x4x8x64xf32>
    }"""
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        attn.Module.parse(bad)
    with pytest.raises(ValueError, match="mask= must be one of"):
        attn.attention(mask="diagonal")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [(4, 4), (8, 2), (8, 1)])
def test_runs_on_the_cpu(causal, heads):
    kernel = attn.compile_cpu(attn.attention(causal=causal, lse=True))
    hq, hkv = heads
    q, k, v = inputs((2, hq, 37, 64), (2, hkv, 53, 64))
    out = np.full_like(q, np.nan)
    lse = np.full(q.shape[:3], np.nan, np.float32)
    kernel(q, k, v, out, lse)
    want, want_lse = reference_attention(q, k, v, causal=causal)
    assert relative_error(out, want) < 1e-5
    assert relative_error(lse, want_lse) < 1e-5


def test_f16_and_bf16():
    q, k, v = inputs((1, 4, 64, 64), (1, 4, 96, 64), np.float32)
    want, _ = reference_attention(q, k, v, causal=True)
    half = attn.compile_cpu(attn.attention(dtype="f16", causal=True))
    qh, kh, vh = (x.astype(np.float16) for x in (q, k, v))
    out = np.zeros_like(qh)
    half(qh, kh, vh, out)
    ref16, _ = reference_attention(qh, kh, vh, causal=True)
    assert relative_error(out, ref16) < 2e-3
    assert relative_error(out, want) < 2e-2  # f16 inputs lose bits
    # bf16 travels as its bits in uint16 arrays.
    bf = attn.compile_cpu(attn.attention(dtype="bf16", causal=True))
    qb, kb, vb = (bf16_bits(x) for x in (q, k, v))
    outb = np.zeros_like(qb)
    bf(qb, kb, vb, outb)
    refb, _ = reference_attention(*(from_bf16_bits(x) for x in (qb, kb, vb)),
                                  causal=True)
    assert relative_error(from_bf16_bits(outb), refb) < 2e-3


def test_masks_and_score_mods():
    q, k, v = inputs((1, 4, 80, 64), (1, 4, 80, 64))
    window = attn.compile_cpu(attn.attention(mask="sliding-window:16",
                                             score_mod="softcap:20"))
    out = np.zeros_like(q)
    window(q, k, v, out)
    want, _ = reference_attention(
        q, k, v, keep=lambda b, h, i, j: (j <= i) & (i - j <= 16),
        score_mod=lambda s, b, h, i, j: 20 * np.tanh(s / 20))
    assert relative_error(out, want) < 1e-5
    # A document mask reads captured document ids (an extra argument).
    docs = attn.compile_cpu(attn.attention(mask="document"))
    ids = (np.arange(80) // 23).astype(np.int32)
    docs(q, k, v, out, ids)
    want, _ = reference_attention(
        q, k, v, keep=lambda b, h, i, j: (ids[i] == ids[j]) & (j <= i))
    assert relative_error(out, want) < 1e-5


def test_static_shapes_and_custom_text():
    module = attn.attention(batch=1, heads=(4, 2), q_len=16, kv_len=24)
    assert "tensor<1x4x16x64xf32>" in str(module)
    kernel = attn.compile_cpu(attn.Module.parse(str(module)))
    q, k, v = inputs((1, 4, 16, 64), (1, 2, 24, 64))
    out = np.zeros_like(q)
    kernel(q, k, v, out)
    assert relative_error(out, reference_attention(q, k, v)[0]) < 1e-5


def test_bad_arrays_raise_before_running():
    kernel = attn.compile_cpu(attn.attention(heads=(4, 4), head_dim=64))
    q, k, v = inputs((1, 4, 8, 64), (1, 4, 8, 64))
    out = np.zeros_like(q)
    with pytest.raises(TypeError, match="takes 4 arrays, got 3"):
        kernel(q, k, v)
    with pytest.raises(TypeError, match="expected f32 elements"):
        kernel(q.astype(np.float64), k, v, out)
    with pytest.raises(ValueError, match="expected rank 4, got 3"):
        kernel(q[0], k, v, out)
    with pytest.raises(ValueError, match="dim 1 must be 4, got 2"):
        kernel(q[:, :2].copy(), k, v, out)
    with pytest.raises(ValueError, match="C-contiguous"):
        kernel(q.transpose(0, 2, 1, 3), k, v, out)


def test_softmax_on_the_cpu():
    kernel = attn.compile_cpu(attn.softmax("f32"))
    x = rng.normal(size=(5, 3000)).astype(np.float32) * 10
    x[1, :] = -np.inf
    y = np.zeros_like(x)
    kernel(x, y)
    e = np.exp(x[[0, 2, 3, 4]].astype(np.float64) -
               x[[0, 2, 3, 4]].max(axis=1, keepdims=True))
    assert relative_error(y[[0, 2, 3, 4]], e / e.sum(axis=1, keepdims=True)) < 1e-5
    assert np.all(y[1] == 0)


def test_pipelines_ptx_and_bundles(tmp_path):
    module = attn.attention(dtype="bf16", head_dim=128, causal=True)
    lowered = module.clone()
    lowered.run_pipeline("builtin.module(attn-lower-to-nvvm{chip=sm_90})")
    ptx = lowered.ptx()
    assert ".target sm_90" in next(iter(ptx.values()))
    assert "attn.attention" in str(module)  # the original is untouched
    lowered.write_bundle(str(tmp_path) + "/")
    kernel = attn.Kernel(str(tmp_path / "bundle.json"))
    launch = kernel.launches[0]
    assert int(launch["shared_memory_bytes"]) > 48 * 1024
    assert os.path.exists(tmp_path / (launch["module"] + ".ptx"))
    # Any named pipeline, stopped at a stage.
    tiled = module.clone()
    tiled.run_pipeline("builtin.module(attn-lower-to-cpu{until=tile})")
    assert "scf.forall" in str(tiled)


def test_pipeline_errors():
    module = attn.attention()
    with pytest.raises(ValueError, match="bad pipeline"):
        module.run_pipeline("builtin.module(no-such-pass)")
    with pytest.raises(ValueError, match="missing target chip"):
        module.run_pipeline("attn-lower-to-nvvm")
    # A pipeline that fails on the IR names the op and the reason.
    softmax3d = attn.Module.parse("""
    func.func @s(%x: tensor<2x?x?xf32>, %y: tensor<2x?x?xf32>) -> tensor<2x?x?xf32> {
      %r = attn.softmax ins(%x : tensor<2x?x?xf32>) outs(%y : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
      return %r : tensor<2x?x?xf32>
    }""")
    with pytest.raises(RuntimeError, match="for rank 2"):
        softmax3d.run_pipeline("attn-lower-to-nvvm{chip=sm_90}")
    # attn.softmax of [rows, N] compiles for the GPU.
    lowered = attn.softmax("f16")
    lowered.run_pipeline("attn-lower-to-nvvm{chip=sm_90}")
    assert "shfl.sync" in next(iter(lowered.ptx().values()))
    with pytest.raises(ValueError, match="holds no PTX"):
        module.ptx()
