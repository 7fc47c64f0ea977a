// RUN: attn-opt %s --attn-skip-llvm-vectorizers | FileCheck %s
// RUN: attn-opt %s --attn-skip-llvm-vectorizers --attn-skip-llvm-vectorizers | FileCheck %s

// Tensor-core kernels get noimplicitfloat, next to what passthrough already
// holds and once only; kernels without mma and other functions are left
// alone.
// CHECK-LABEL: llvm.func @mma_sync
// CHECK-SAME: passthrough = ["noimplicitfloat"]
// CHECK-LABEL: llvm.func @wgmma
// CHECK-SAME: passthrough = ["noinline", "noimplicitfloat"]
// CHECK-LABEL: llvm.func @fenced
// CHECK-SAME: passthrough = ["noimplicitfloat"]
// CHECK-LABEL: llvm.func @simt
// CHECK-NOT: passthrough
// CHECK-LABEL: llvm.func @helper
// CHECK-NOT: passthrough
gpu.module @kernels {
  llvm.func @mma_sync(%a0: vector<2xf16>, %a1: vector<2xf16>, %a2: vector<2xf16>, %a3: vector<2xf16>, %b0: vector<2xf16>, %b1: vector<2xf16>, %c0: f32, %c1: f32, %c2: f32, %c3: f32) attributes {gpu.kernel, nvvm.kernel} {
    %d = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0, %c1, %c2, %c3]
      {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
       shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    llvm.return
  }
  llvm.func @wgmma(%acc: !llvm.struct<(f32, f32, f32, f32)>, %a: i64, %b: i64) attributes {gpu.kernel, nvvm.kernel, passthrough = ["noinline"]} {
    %d = nvvm.wgmma.mma_async %a, %b, %acc, <m = 64, n = 8, k = 16>, D [<f32>, <one>, <wrapped>], A [<f16>, <one>, <row>], B [<f16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
    llvm.return
  }
  llvm.func @fenced() attributes {gpu.kernel, nvvm.kernel} {
    nvvm.wgmma.fence.aligned
    llvm.return
  }
  llvm.func @simt() attributes {gpu.kernel, nvvm.kernel} {
    llvm.return
  }
  llvm.func @helper() {
    llvm.return
  }
}
