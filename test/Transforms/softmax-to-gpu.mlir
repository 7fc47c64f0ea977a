// RUN: attn-opt %s --attn-softmax-to-gpu --split-input-file --verify-diagnostics | FileCheck %s

// A block per row, on the op's buffers; threads from N (about two 16-byte
// vectors each, whole warps, 64 to 1024). 16-byte vector loads when N is a
// multiple of the vector width (8 f16), scalars otherwise. Rows of at most
// two vectors per thread are loaded once into registers, reduced with
// gpu.all_reduce (max, then sum) and written from there; longer rows sweep
// twice: an online (max, sum), the reductions, then a writing sweep.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf16>, %[[Y:.*]]: tensor<?x?xf16>)
// CHECK-DAG: %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<?x?xf16> to memref<?x?xf16>
// CHECK-DAG: %[[OUT:.*]] = bufferization.to_buffer %[[Y]] : tensor<?x?xf16> to memref<?x?xf16>
// CHECK: %[[ROWS:.*]] = memref.dim %[[IN]], %c0
// CHECK: %[[N:.*]] = memref.dim %[[IN]], %c1
// CHECK: arith.ceildivui %[[N]], %c512
// CHECK: %[[T:.*]] = arith.minui %{{.*}}, %c1024
// CHECK: gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ROWS]], {{.*}} threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in (%[[BS:.*]] = %[[T]],
// CHECK:   %[[REM:.*]] = arith.remui %[[N]], %c8
// CHECK:   %[[ALIGNED:.*]] = arith.cmpi eq, %[[REM]], %c0
// CHECK:   scf.if %[[ALIGNED]]
// CHECK:     %[[CAP:.*]] = arith.muli %[[T]], %c16
// CHECK:     %[[FITS:.*]] = arith.cmpi ule, %[[N]], %[[CAP]]
// CHECK:     scf.if %[[FITS]]
// CHECK:       scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:         vector.load %[[IN]][%[[ROW]], %{{.*}}] {alignment = 16 : i64} : memref<?x?xf16>, vector<8xf16>
// CHECK:       gpu.all_reduce maximumf %{{.*}} uniform
// CHECK:       gpu.all_reduce add %{{.*}} uniform
// CHECK:       vector.store %{{.*}}, %[[OUT]][%[[ROW]], %{{.*}}] {alignment = 16 : i64} : memref<?x?xf16>, vector<8xf16>
// CHECK:     } else {
// CHECK:       scf.for {{.*}} iter_args
// CHECK:         vector.load %[[IN]]
// CHECK:         math.exp2
// CHECK:       gpu.all_reduce maximumf
// CHECK:       gpu.all_reduce add
// CHECK:       scf.for
// CHECK:         vector.store
// CHECK:   } else {
// CHECK:     memref.load %[[IN]]
// CHECK:     memref.store %{{.*}}, %[[OUT]]
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<?x?xf16>, %y: tensor<?x?xf16>) -> tensor<?x?xf16> {
  %r = attn.softmax ins(%x : tensor<?x?xf16>) outs(%y : tensor<?x?xf16>) -> tensor<?x?xf16>
  return %r : tensor<?x?xf16>
}

// -----

func.func @rank3(%x: tensor<2x?x?xf32>, %y: tensor<2x?x?xf32>) -> tensor<2x?x?xf32> {
  // expected-error @+1 {{lowers to the GPU for rank 2 ([rows, N]) only, got rank 3}}
  %r = attn.softmax ins(%x : tensor<2x?x?xf32>) outs(%y : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  return %r : tensor<2x?x?xf32>
}
