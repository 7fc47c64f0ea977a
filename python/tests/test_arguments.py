"""Python arguments are checked before any C++ runs, and errors name the
Python parameter (`mask=`, `heads=`, ...), never a command-line flag; lowering
options are values, never pasted into pipeline text; compile_gpu's defaults
and its temporary directory."""

import math
import os

import numpy as np
import pytest

import attn
from conftest import driver_present, needs_compiler

pytestmark = needs_compiler


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(dtype="f64"), ValueError, r"dtype= must be 'f32', 'f16' or 'bf16'"),
    (dict(dtype=np.float32), ValueError, "dtype="),
    (dict(head_dim=20), ValueError, r"head_dim= must be a multiple of 8 from 16 to 256"),
    (dict(head_dim=8), ValueError, "head_dim="),
    (dict(head_dim=264), ValueError, "head_dim="),
    (dict(head_dim=64.0), TypeError, "head_dim= must be an int"),
    (dict(head_dim=True), TypeError, "head_dim="),
    (dict(value_dim=12), ValueError, "value_dim="),
    (dict(causal=1), TypeError, "causal= must be True or False"),
    (dict(causal="yes"), TypeError, "causal="),
    (dict(lse=None), TypeError, "lse="),
    (dict(scale=math.nan), ValueError, "scale= must be a finite positive number"),
    (dict(scale=math.inf), ValueError, "scale="),
    (dict(scale=0), ValueError, "scale="),
    (dict(scale=-0.5), ValueError, "scale="),
    (dict(scale=1e300), ValueError, "scale=.*float32"),
    (dict(scale=1e-300), ValueError, "scale=.*float32"),
    (dict(scale="0.1"), TypeError, "scale= must be a number"),
    (dict(heads=(8, 0)), ValueError, r"heads=\(8, 0\): Hkv must be None"),
    (dict(heads=(0, 1)), ValueError, "Hq must be None"),
    (dict(heads=(8, 3)), ValueError, r"heads=\(8, 3\): Hq must be a multiple of Hkv"),
    (dict(heads=(2, 8)), ValueError, "Hq must be a multiple of Hkv"),
    (dict(heads=(8, 2, 1)), ValueError, "heads= must be Hq or"),
    (dict(heads=-5), ValueError, "heads= must be None"),
    (dict(heads=0), ValueError, "0 included"),
    (dict(heads=2.0), TypeError, "heads="),
    (dict(batch=-5), ValueError, "batch= must be None"),
    (dict(batch=0), ValueError, "batch="),
    (dict(q_len=-1), ValueError, "q_len="),
    (dict(kv_len=0), ValueError, "kv_len="),
    (dict(kv_len="8"), TypeError, "kv_len="),
    (dict(mask="diagonal"), ValueError, "mask= must be one of"),
    (dict(mask="sliding-window"), ValueError, "mask= must be one of"),
    (dict(mask="sliding-window:0"), ValueError, "sliding-window:W' needs W a positive int"),
    (dict(mask="sliding-window:-3"), ValueError, "W a positive int"),
    (dict(mask="sliding-window:2.5"), ValueError, "W a positive int"),
    (dict(mask="sliding-window:99999999999999999999"), ValueError, "W a positive int"),
    (dict(mask="prefix:-1"), ValueError, "prefix:P' needs P a non-negative int"),
    (dict(mask="prefix:x"), ValueError, "P a non-negative int"),
    (dict(mask="jagged:-1"), ValueError, "jagged:P' needs P a non-negative int"),
    (dict(mask="sasa:16"), ValueError, "sasa:W:K' needs W and K positive ints"),
    (dict(mask="sasa:16:0"), ValueError, "sasa:W:K'"),
    (dict(mask="sasa:a:3"), ValueError, "sasa:W:K'"),
    (dict(mask="natten:4:16:5"), ValueError, "natten:H:W:K' needs .* inside H x W"),
    (dict(mask="natten:8:16"), ValueError, "natten:H:W:K'"),
    (dict(mask=True), TypeError, "mask= must be one of"),
    (dict(mask=lambda b, h, q, kv: q - kv), TypeError,
     "mask_mod returns a non-boolean"),
    (dict(score_mod=lambda s, b, h, q, kv: s if s > 0 else 0), TypeError,
     "Python control flow on a traced value"),
    (dict(score_mod="softcap:inf"), ValueError, "softcap:C' needs C a finite positive number"),
    (dict(score_mod="softcap:nan"), ValueError, "softcap:C"),
    (dict(score_mod="softcap:-1"), ValueError, "softcap:C"),
    (dict(score_mod="softcap:0"), ValueError, "softcap:C"),
    (dict(score_mod="softcap:1e39"), ValueError, "softcap:C.*float32"),
    (dict(score_mod="softcap:1e400"), ValueError, "softcap:C"),
    (dict(score_mod="softcap:"), ValueError, "softcap:C"),
    (dict(score_mod="tanh"), ValueError, "score_mod= must be one of"),
    (dict(score_mod=3), TypeError, "score_mod="),
])
def test_attention_arguments(kwargs, error, message):
    with pytest.raises(error, match=message) as raised:
        attn.attention(**kwargs)
    assert "--" not in str(raised.value)  # no command-line flags


@pytest.mark.parametrize("kwargs, text", [
    (dict(mask="sliding-window:16"), "arith.constant 16 : index"),
    (dict(mask="sliding-window:007"), "arith.constant 7 : index"),
    (dict(mask="prefix:0"), "arith.constant 0 : index"),
    (dict(mask="jagged:3"), "tensor<?xi32>, %arg5: tensor<?xi32>)"),
    (dict(mask="sasa:016:5"), "arith.constant 16 : index"),
    (dict(mask="natten:5:7:5"), "arith.minui"),
    (dict(mask="none", score_mod="none"), "attn.attention"),
    (dict(score_mod="softcap:2.5e1"), "2.500000e+01"),
    (dict(score_mod="softcap:.5"), "5.000000e-01"),
    (dict(scale=np.float32(0.25)), "scale = 2.500000e-01"),
    (dict(causal=np.True_), "causal"),
    (dict(heads=np.int64(4), batch=np.int32(2)), "tensor<2x4x?x64xf32>"),
    (dict(heads=(None, 2)), "tensor<?x2x?x64xf32>"),
    (dict(heads=[8, None]), "tensor<?x8x?x64xf32>"),
    (dict(head_dim=16, value_dim=256), "tensor<?x?x?x256xf32>"),
])
def test_accepted_arguments(kwargs, text):
    assert text in str(attn.attention(**kwargs))


def test_alibi_slopes():
    slopes = attn.alibi_slopes(8)
    assert slopes.dtype == np.float32 and slopes.shape == (8,)
    want = [2.0 ** (-8 * (h + 1) / 8) for h in range(8)]
    assert np.array_equal(slopes, np.float32(want))
    assert attn.alibi_slopes(np.int64(3)).shape == (3,)
    with pytest.raises(ValueError, match="num_heads= must be a positive int"):
        attn.alibi_slopes(0)
    with pytest.raises(TypeError, match="num_heads="):
        attn.alibi_slopes(2.0)


def test_softmax_arguments():
    with pytest.raises(ValueError, match="dtype= must be"):
        attn.softmax("float32")


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(q_tile=0), ValueError, "q_tile= must be a positive int"),
    (dict(kv_tile=-64), ValueError, "kv_tile="),
    (dict(row_tile=1 << 17), ValueError, "row_tile= must be a positive int up to 65536"),
    (dict(row_tile=1.5), TypeError, "row_tile="),
    (dict(q_tile=True), TypeError, "q_tile="),
    (dict(bounds_checks=1), TypeError, "bounds_checks= must be True or False"),
    (dict(function=3), TypeError, "function= must be a str"),
    (dict(function="nope"), ValueError, "no function @nope"),
])
def test_compile_cpu_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        attn.compile_cpu(attn.attention(), **kwargs)


def test_compile_cpu_takes_a_module():
    with pytest.raises(TypeError, match="expected an attn.Module"):
        attn.compile_cpu(str(attn.attention()))


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(chip="90"), ValueError, "chip= must look like 'sm_90'"),
    (dict(chip="sm_90} ,canonicalize{"), ValueError, "chip= must look like"),
    (dict(chip=90), ValueError, "chip="),
    (dict(chip="sm_90", q_tile=0), ValueError, "q_tile= must be a positive int"),
    (dict(chip="sm_90", q_tile=-8), ValueError, "q_tile= must be a positive int"),
    (dict(chip="sm_90", threads=2048), ValueError, "threads= must be a positive int up to 1024"),
    (dict(chip="sm_90", kv_tile=1 << 17), ValueError, "kv_tile= must be a positive int up to 65536"),
    (dict(chip="sm_90", kv_tile="64"), TypeError, "kv_tile="),
    (dict(chip="sm_90", bounds_checks="no"), TypeError, "bounds_checks="),
    (dict(chip="sm_90", directory=3), TypeError, "directory="),
    (dict(chip="sm_90", strategy=3), TypeError, "strategy="),
    (dict(chip="sm_90", strategy="mma"), ValueError, "unknown strategy 'mma'"),
])
def test_compile_gpu_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        attn.compile_gpu(attn.attention(), **kwargs)


def test_typed_lowering():
    module = attn.attention(dtype="f16")
    lowered = module.clone()
    lowered.lower_to_nvvm("sm_90", q_tile=64, kv_tile=32, threads=128)
    assert ".target sm_90" in next(iter(lowered.ptx().values()))
    tiled = module.clone()
    tiled.lower_to_cpu(q_tile=32, until="tile")
    assert "scf.forall" in str(tiled)
    # Values are values: no pipeline text is built from them.
    for chip in ("sm_90 q-tile=1", "sm_90},canonicalize{", "sm_80a", ""):
        with pytest.raises(ValueError, match="chip"):
            module.clone().lower_to_nvvm(chip)
    with pytest.raises(ValueError, match="q_tile= must be a positive int"):
        module.clone().lower_to_nvvm("sm_90", q_tile=-1)
    # q_tile=0 and kv_tile=0 (the defaults) choose tiles that fit the chip.
    chosen = module.clone()
    chosen.lower_to_nvvm("sm_90", until="tile", strategy="simt")
    assert "#attn.kernel<simt, q_tile = 64, kv_tile = 64>" in str(chosen)
    # f16 goes to a tensor-core kernel by default; each op records its
    # kernel and tiles.
    chosen = module.clone()
    chosen.lower_to_nvvm("sm_90", until="choose")
    assert "#attn.kernel<mma_sync, q_tile = 128, kv_tile = 64, bands = 2>" in str(
        chosen
    )
    with pytest.raises(ValueError, match="unknown strategy 'tf32'"):
        module.clone().lower_to_nvvm("sm_90", strategy="tf32")
    # Every kernel by name; one that cannot serve the op, or that the chip
    # lacks, is an error saying why.
    chosen = module.clone()
    chosen.lower_to_nvvm("sm_90a", until="choose", strategy="wgmma")
    assert "#attn.kernel<wgmma, q_tile = 128" in str(chosen)
    with pytest.raises(ValueError, match="strategy wgmma-ws needs wgmma"):
        module.clone().lower_to_nvvm("sm_90", strategy="wgmma-ws")
    f32 = attn.Module.parse(str(module).replace("f16", "f32"))
    with pytest.raises(RuntimeError, match="cannot run on strategy mma-sync: "
                                           "it needs f16 or bf16 inputs"):
        f32.lower_to_nvvm("sm_90", strategy="mma-sync")
    with pytest.raises(ValueError, match="unknown stage"):
        module.clone().lower_to_cpu(until="tile},canonicalize{")
    with pytest.raises(ValueError, match="format"):
        module.clone().lower_to_nvvm("sm_90", format="isa}")


def test_write_bundle_needs_lowered_ir(tmp_path):
    module = attn.attention()
    with pytest.raises(ValueError, match=r"attn-lower-to-nvvm\{chip=\.\.\.\}"):
        module.write_bundle(str(tmp_path) + "/")
    # Stopped before the binary: still nothing to write.
    gpu = module.clone()
    gpu.lower_to_nvvm("sm_90", until="gpu")
    with pytest.raises(ValueError, match="no GPU kernels"):
        gpu.write_bundle(str(tmp_path) + "/")
    assert not os.listdir(tmp_path)


def test_write_bundle_prefix_is_a_path(tmp_path):
    """A prefix that would close the pass's options and add a pass is just
    a file name prefix."""
    lowered = attn.softmax("f32")
    lowered.lower_to_nvvm("sm_90")
    prefix = str(tmp_path) + "/x} ,canonicalize{"
    lowered.write_bundle(prefix)
    kernel = attn.Kernel(str(tmp_path / "x} ,canonicalize{bundle.json"))
    assert kernel.function == "softmax"


def test_compile_gpu_directories(tmp_path, monkeypatch):
    """A user's directory is kept; the temporary one is gone once the kernel
    is loaded, and the kernel still has its code."""
    kept = tmp_path / "kept"
    kept.mkdir()
    kernel = attn.compile_gpu(attn.softmax("f32"), "sm_90", str(kept))
    assert (kept / "bundle.json").exists() and kernel.function == "softmax"

    import attn.compiler as compiler
    made = []
    real = compiler.tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        made.append(real(*args, dir=str(tmp_path), **kwargs))
        return made[-1]

    monkeypatch.setattr(compiler.tempfile, "mkdtemp", mkdtemp)
    kernel = attn.compile_gpu(attn.softmax("f32"), "sm_90")
    assert len(made) == 1 and not os.path.exists(made[0])
    assert kernel.arg_types == [([-1, -1], "f32"), ([-1, -1], "f32")]
    # Also when compiling fails.
    with pytest.raises(RuntimeError):
        attn.compile_gpu(attn.Module.parse("""
        func.func @s(%x: tensor<2x?x?xf32>, %y: tensor<2x?x?xf32>) -> tensor<2x?x?xf32> {
          %r = attn.softmax ins(%x : tensor<2x?x?xf32>) outs(%y : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
          return %r : tensor<2x?x?xf32>
        }"""), "sm_90")
    assert all(not os.path.exists(d) for d in made)


@pytest.mark.skipif(driver_present(), reason="a CUDA driver is present")
def test_compile_gpu_without_a_gpu_needs_a_chip():
    with pytest.raises(RuntimeError, match="compile_gpu needs chip="):
        attn.compile_gpu(attn.softmax("f32"))


@pytest.mark.skipif(not driver_present(), reason="no CUDA driver")
def test_compile_gpu_defaults_to_this_gpu():
    kernel = attn.compile_gpu(attn.softmax("f32"))
    assert kernel.function == "softmax"
