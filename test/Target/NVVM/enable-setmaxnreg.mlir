// RUN: attn-opt %s --split-input-file --attn-enable-setmaxnreg --verify-diagnostics | FileCheck %s

// A kernel that moves registers between its warpgroups declares one block
// per SM; one that does not is left alone, and so are non-kernels.
// CHECK-LABEL: llvm.func @moves
// CHECK-SAME: nvvm.minctasm = 1 : i32
// CHECK-LABEL: llvm.func @keeps
// CHECK-NOT: nvvm.minctasm
// CHECK-LABEL: llvm.func @helper
// CHECK-NOT: nvvm.minctasm
gpu.module @kernels {
  llvm.func @moves() attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>} {
    nvvm.setmaxregister increase 232
    llvm.return
  }
  llvm.func @keeps() attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
    llvm.return
  }
  llvm.func @helper() {
    nvvm.setmaxregister decrease 40
    llvm.return
  }
}

// -----

// Without a declared block size ptxas would ignore setmaxnreg: an error.
gpu.module @kernels {
  // expected-error @+1 {{uses setmaxnreg but declares no block size (nvvm.maxntid or nvvm.reqntid), without which ptxas ignores it}}
  llvm.func @unsized() attributes {gpu.kernel, nvvm.kernel} {
    nvvm.setmaxregister increase 232
    llvm.return
  }
}
