// RUN: attn-opt %s --attn-copies-to-linalg | FileCheck %s

// Copies inside GPU-mapped loops become linalg.copy (loops later); copies
// on the host stay memref.copy.
// CHECK-LABEL: func.func @copies
// CHECK: scf.forall
// CHECK: linalg.copy ins(%{{.*}} : memref<1x16xf32>) outs(%{{.*}} : memref<1x16xf32, strided<[?, 1], offset: ?>>)
// CHECK: } {mapping = [#gpu.thread<x>]}
// CHECK: memref.copy
func.func @copies(%src: memref<1x16xf32>, %dst: memref<8x16xf32, strided<[?, 1], offset: ?>>,
                  %a: memref<4xf32>, %b: memref<4xf32>) {
  scf.forall (%i) in (8) {
    %view = memref.subview %dst[%i, 0] [1, 16] [1, 1] : memref<8x16xf32, strided<[?, 1], offset: ?>> to memref<1x16xf32, strided<[?, 1], offset: ?>>
    memref.copy %src, %view : memref<1x16xf32> to memref<1x16xf32, strided<[?, 1], offset: ?>>
  } {mapping = [#gpu.thread<x>]}
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  return
}
