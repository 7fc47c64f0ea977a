# -*- Python -*-
# lit configuration of the attn test suite (run through ctest: `ctest`).

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")
config.excludes = ["Inputs", "consumer", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%attn_libs", config.attn_libs_dir))
config.substitutions.append(("%attn_src", config.attn_src_root))
config.substitutions.append(("%attn_obj", config.attn_obj_root))
config.substitutions.append(("%mlir_dir", config.mlir_dir))
config.substitutions.append(("%cmake_generator", config.cmake_generator))
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%cxx", config.cxx_compiler))
for lib in ["mlir_runner_utils", "mlir_c_runner_utils"]:
    config.substitutions.append(
        ("%" + lib, os.path.join(config.llvm_lib_dir, "lib" + lib + config.llvm_shlib_ext)))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Upstream mlir-opt (Debian's, not ours) proves the plugin works in a
# compiler that is not attn's own.
tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["attn-opt", "attn-run", "attn-bundle-run", "attn-capi-test", "mlir-opt",
     "mlir-runner", "mlir-translate"], tool_dirs)

# The size matrix of the CPU numerics tests (issue: B, (Hq, Hkv), M, N).
config.substitutions.append(
    ("%{sweep}",
     "--batch=1,2 --heads=4:4,8:2,8:1 --q-len=1,17,64,130,257 "
     "--kv-len=1,17,64,130,257"))

# The backward's CPU matrix: GQA, one row, odd lengths, several kv-tiles.
config.substitutions.append(
    ("%{grads}",
     "--batch=1,2 --heads=8:2,8:1 --q-len=1,130,257 --kv-len=17,130"))

# Softmax row lengths: 1 to 2^20, powers of two and odd sizes around the
# row tile (4096).
config.substitutions.append(
    ("%{rowlens}",
     "1,2,3,7,16,100,1000,4095,4096,4097,10000,65536,262144,1048576"))

# Machines without a CUDA driver (CI) check the runtime's error for that.
import ctypes.util
if not ctypes.util.find_library("cuda"):
    config.available_features.add("no-cuda-driver")

# ptxas assembles generated PTX where the CUDA toolkit is installed; tests
# that need it say `REQUIRES: ptxas` and show as UNSUPPORTED elsewhere.
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
elif os.environ.get("ATTN_REQUIRE_PTXAS", "0") != "0":
    # CI has the CUDA toolkit: a missing ptxas must fail, not skip tests.
    lit_config.fatal("ATTN_REQUIRE_PTXAS is set but ptxas is not on PATH "
                     "or in /usr/local/cuda/bin")
