// RUN: attn-opt %s --attn-stage-in-workgroup --split-input-file --verify-diagnostics | FileCheck %s

// A block reads a global K tile in each kv step: it is copied into
// workgroup memory of its bound (rows of 64 f16 = 128 bytes, padded by two
// elements) and the contraction reads the staged copy. The tile the block
// writes (its output) and tiles already in workgroup memory are left alone.
// CHECK-LABEL: func.func @stage_k
// CHECK: scf.for %[[KV:.*]] =
// CHECK:   %[[LEN:.*]] = affine.min
// CHECK:   %[[K:.*]] = memref.subview %{{.*}}[%[[KV]], 0] [%[[LEN]], 64] [1, 1]
// CHECK:   %[[BUF:.*]] = memref.alloc() : memref<64x66xf16, #gpu.address_space<workgroup>>
// CHECK:   %[[STAGED:.*]] = memref.subview %[[BUF]][0, 0] [%[[LEN]], 64] [1, 1] : memref<64x66xf16, #gpu.address_space<workgroup>> to memref<?x64xf16, strided<[66, 1]>, #gpu.address_space<workgroup>>
// CHECK:   linalg.copy ins(%[[K]] : {{.*}}) outs(%[[STAGED]] : {{.*}})
// CHECK:   linalg.generic {{.*}} ins(%[[STAGED]] : {{.*}}) outs(%[[OUT:.*]] : memref<?x16xf32, strided<[16, 1], offset: ?>>)
// CHECK-NOT: memref.alloc
func.func @stage_k(%k: memref<?x64xf16>, %out: memref<?x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  scf.forall (%b) in (4) {
    %o = memref.subview %out[%b, 0] [1, 16] [1, 1] : memref<?x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
    scf.for %kv = %c0 to %n step %c64 {
      %len = affine.min affine_map<(d0)[s0] -> (64, s0 - d0)>(%kv)[%n]
      %tile = memref.subview %k[%kv, 0] [%len, 64] [1, 1] : memref<?x64xf16> to memref<?x64xf16, strided<[64, 1], offset: ?>>
      %ow = memref.subview %out[%kv, 0] [%len, 16] [1, 1] : memref<?x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
      linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                      iterator_types = ["parallel", "parallel", "reduction"]}
          ins(%tile : memref<?x64xf16, strided<[64, 1], offset: ?>>) outs(%ow : memref<?x16xf32, strided<[16, 1], offset: ?>>) {
      ^bb0(%x: f16, %acc: f32):
        %e = arith.extf %x : f16 to f32
        %s = arith.addf %e, %acc : f32
        linalg.yield %s : f32
      }
    }
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @unbounded(%k: memref<?x64xf16>, %out: memref<?x64xf32>, %n: index) {
  scf.forall (%b) in (4) {
    // expected-error @+1 {{is a tile read by a GPU block whose dim 0 has no constant upper bound}}
    %tile = memref.subview %k[0, 0] [%n, 64] [1, 1] : memref<?x64xf16> to memref<?x64xf16, strided<[64, 1]>>
    %o = memref.subview %out[0, 0] [%n, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    linalg.copy ins(%tile : memref<?x64xf16, strided<[64, 1]>>) outs(%o : memref<?x64xf32, strided<[64, 1]>>)
  } {mapping = [#gpu.block<x>]}
  return
}
