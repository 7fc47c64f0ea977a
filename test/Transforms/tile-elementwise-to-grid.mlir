// RUN: attn-opt %s --attn-tile-elementwise-to-grid=row-tile=256 --split-input-file | FileCheck %s
// RUN: not attn-opt %s --attn-tile-elementwise-to-grid=row-tile=0 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: attn-tile-elementwise-to-grid: row-tile must be positive, got 0

// A copy of a block mask's index list into a result: one block per
// 256-element piece of a row and per index of the two dims above it; the
// outermost dim stays whole in each block.
// CHECK-LABEL: func.func @copy
// CHECK:       scf.forall (%[[H:.*]], %[[Q:.*]], %[[K:.*]]) = (0, 0, 0) to (%{{.*}}, %{{.*}}, %{{.*}}) step (1, 1, 256)
// CHECK:         %[[SIZE:.*]] = affine.min
// CHECK:         tensor.extract_slice %arg0[0, %[[H]], %[[Q]], %[[K]]] [%{{.*}}, 1, 1, %[[SIZE]]]
// CHECK:         linalg.copy
// CHECK:       } {mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]}
func.func @copy(%x: tensor<?x?x?x?xi32>, %y: tensor<?x?x?x?xi32>) -> tensor<?x?x?x?xi32> {
  %r = linalg.copy ins(%x : tensor<?x?x?x?xi32>) outs(%y : tensor<?x?x?x?xi32>) -> tensor<?x?x?x?xi32>
  return %r : tensor<?x?x?x?xi32>
}

// -----

// A fill of a vector: one dim, on x. Ops already inside a grid and ops
// with reductions are left alone.
// CHECK-LABEL: func.func @fill_and_matmul
// CHECK:       scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (256)
// CHECK:         linalg.fill
// CHECK:       } {mapping = [#gpu.block<x>]}
// CHECK-NOT:   scf.forall
// CHECK:       linalg.matmul
func.func @fill_and_matmul(%v: tensor<?xf32>, %a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>, %s: f32) -> (tensor<?xf32>, tensor<?x?xf32>) {
  %f = linalg.fill ins(%s : f32) outs(%v : tensor<?xf32>) -> tensor<?xf32>
  %m = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %f, %m : tensor<?xf32>, tensor<?x?xf32>
}
