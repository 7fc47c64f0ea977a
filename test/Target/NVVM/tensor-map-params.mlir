// RUN: attn-opt %s --split-input-file --attn-tensor-map-params --verify-diagnostics | FileCheck %s

// The launch's tensor maps become 128-byte by-value parameters of the
// kernel; the memref before them counts as its descriptor's seven fields,
// and the other parameters stay as they are.
// CHECK-LABEL: llvm.func @kernel
// CHECK-SAME: (%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: i64, %arg3: i64, %arg4: i64, %arg5: i64, %arg6: i64,
// CHECK-SAME: %arg7: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg8: f32,
// CHECK-SAME: %arg9: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%a: !llvm.ptr, %b: !llvm.ptr, %c: i64, %d: i64, %e: i64,
                      %f: i64, %g: i64, %map0: !llvm.ptr, %s: f32,
                      %map1: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%x: memref<?x64xf16>, %k: memref<?x64xbf16>) {
    %c1 = arith.constant 1 : index
    %scale = arith.constant 1.0 : f32
    %map0 = attn.tensor_map %k box [128, 64] : memref<?x64xbf16> -> !llvm.ptr
    %map1 = attn.tensor_map %x box [64, 64] : memref<?x64xf16> -> !llvm.ptr
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%x : memref<?x64xf16>, %map0 : !llvm.ptr, %scale : f32, %map1 : !llvm.ptr)
    return
  }
}

// -----

// A kernel whose parameters do not match its launch's operands: an error,
// not a mark on the wrong parameter.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel(%map: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
  func.func @host(%x: memref<?x64xf16>, %k: memref<?x64xbf16>) {
    %c1 = arith.constant 1 : index
    %map = attn.tensor_map %k box [128, 64] : memref<?x64xbf16> -> !llvm.ptr
    // expected-error @+1 {{the launch's operands lower to 8 parameters, but @kernels::@kernel has 1}}
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%x : memref<?x64xf16>, %map : !llvm.ptr)
    return
  }
}
