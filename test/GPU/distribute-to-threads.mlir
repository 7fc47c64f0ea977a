// RUN: attn-opt %s --attn-distribute-to-threads --split-input-file --verify-diagnostics | FileCheck %s

// A block-wide 2-d parallel loop (a linalg op on a [rows, 64] tile) becomes
// one loop over rows * 64 strided by the block size from the thread id;
// the column index is the fastest (a remainder by the constant 64), and a
// barrier follows. A nested reduction loop stays inside the iteration.
// CHECK-LABEL: func.func @tile_loop
// CHECK: gpu.launch
// CHECK: %[[TOTAL:.*]] = arith.muli %{{.*}}, %c64
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[TOTAL]] step %c128
// CHECK:   %[[COL:.*]] = arith.remui %[[I]], %c64
// CHECK:   %[[ROW:.*]] = arith.divui %[[I]], %c64
// CHECK:   scf.for
// CHECK:     memref.store %{{.*}}, %{{.*}}[%[[ROW]], %[[COL]]]
// CHECK: gpu.barrier
func.func @tile_loop(%buf: memref<?x64xf32, #gpu.address_space<workgroup>>, %rows: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    scf.parallel (%r, %c) = (%c0, %c0) to (%rows, %c64) step (%c1, %c1) {
      scf.for %k = %c0 to %c4 step %c1 {
        memref.store %x, %buf[%r, %c] : memref<?x64xf32, #gpu.address_space<workgroup>>
      }
      scf.reduce
    }
    gpu.terminator
  }
  return
}

// -----

// An inner dim clipped at the edge (at most 64) is laid out by its bound
// and guarded by its real trip count.
// CHECK-LABEL: func.func @clipped_inner
// CHECK: %[[LEN:.*]] = affine.min
// CHECK: scf.for %[[I:.*]] =
// CHECK:   %[[COL:.*]] = arith.remui %[[I]], %c64
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[COL]], %[[LEN]]
// CHECK:   scf.if %[[IN]]
// CHECK:     memref.store
// CHECK: gpu.barrier
func.func @clipped_inner(%buf: memref<16x64xf32, #gpu.address_space<workgroup>>, %n: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %len = affine.min affine_map<()[s0] -> (64, s0)>()[%n]
    scf.parallel (%r, %c) = (%c0, %c0) to (%c16, %len) step (%c1, %c1) {
      memref.store %x, %buf[%r, %c] : memref<16x64xf32, #gpu.address_space<workgroup>>
      scf.reduce
    }
    gpu.terminator
  }
  return
}

// -----

func.func @two_d_blocks(%buf: memref<64xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  // expected-error @+1 {{distributes loops over one-dimensional blocks only}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c8, %sz = %c1) {
    scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
      memref.store %x, %buf[%i] : memref<64xf32>
      scf.reduce
    }
    gpu.terminator
  }
  return
}
