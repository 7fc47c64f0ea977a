"""attn.cache: a kernel per traced mods, types and chip, compiled once,
kept in memory and on disk, safe when processes compile it at once."""

import os
import subprocess
import sys

import numpy as np
import pytest

import attn
from conftest import needs_compiler
from flex_mods import N, mods

pytestmark = needs_compiler

DOC = (np.arange(N) // 50).astype(np.int32)
BIAS = np.zeros((4, 2 * N - 1), np.float32)


def test_compiled_once_then_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(attn.cache, "_loaded", {})
    _, mask_mod, score_mod = mods(DOC, BIAS)[1]
    kernel, traced = attn.cache.forward_kernel("bf16", 64, 64, "sm_90a",
                                               mask_mod, score_mod)
    assert kernel.function == "attention"
    assert traced.arrays[0] is DOC and traced.arrays[1] is BIAS
    (entry,) = os.listdir(tmp_path / "kernels")
    assert attn.cache.forward_kernel("bf16", 64, 64, "sm_90a", mask_mod,
                                     score_mod)[0] is kernel
    # Another dtype, head dim or chip, or other mods: another kernel.
    attn.cache.forward_kernel("f16", 64, 64, "sm_90a", mask_mod, score_mod)
    attn.cache.forward_kernel("bf16", 64, 64, "sm_90a", mods(DOC, BIAS)[0][1])
    assert len(os.listdir(tmp_path / "kernels")) == 3

    # A new process (an empty memory cache) loads it without compiling.
    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled again")
    monkeypatch.setattr(attn.cache, "_loaded", {})
    monkeypatch.setattr(attn.compiler, "compile_gpu", no_compiling)
    loaded, _ = attn.cache.forward_kernel("bf16", 64, 64, "sm_90a", mask_mod,
                                          score_mod)
    assert loaded.function == "attention"
    # New values in the captured arrays are read at the call: same kernel.
    bias = np.ones_like(BIAS)
    same = mods(DOC, bias)[1]
    assert attn.cache.forward_kernel("bf16", 64, 64, "sm_90a", same[1],
                                     same[2])[0] is loaded


def test_processes_compiling_at_once_share_one_kernel(tmp_path):
    tests = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {tests!r})\n"
            "import numpy as np, attn.cache\n"
            "from flex_mods import N, mods\n"
            "doc, bias = np.zeros(N, np.int32), np.zeros((4, 2 * N - 1), "
            "np.float32)\n"
            "attn.cache.forward_kernel('f16', 64, 64, 'sm_80', "
            "*mods(doc, bias)[1][1:])\n")
    env = dict(os.environ, ATTN_CACHE_DIR=str(tmp_path))
    runs = [subprocess.Popen([sys.executable, "-c", code], env=env)
            for _ in range(3)]
    assert [run.wait() for run in runs] == [0, 0, 0]
    (entry,) = os.listdir(tmp_path / "kernels")
    assert os.path.isfile(tmp_path / "kernels" / entry / "bundle.json")
