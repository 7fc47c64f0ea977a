// RUN: attn-opt %s --attn-decompose-online-softmax --split-input-file | FileCheck %s

// Four linalg.generic ops: the tile's row max, the per-row statistics
// (the new max written over the old one, so loops update in place), probs
// fused with the tile's row sum (from 0), and the new sum written over the
// old one. Probs are exp2((scale * s - max) * log2(e)): the difference comes
// first, so the row's max gives exactly 1 (no fma with a rounded
// -max * log2(e)).
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[S:.*]]: tensor<4x?xf32>, %[[M:.*]]: tensor<4xf32>, %[[L:.*]]: tensor<4xf32>)
// CHECK-NOT: attn.online_softmax
// CHECK: %[[NEGINF:.*]] = linalg.fill
// CHECK: %[[TILEMAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[S]] : tensor<4x?xf32>) outs(%[[NEGINF]] : tensor<4xf32>)
// CHECK: arith.mulf
// CHECK: arith.maximumf
// CHECK: %[[ROW:.*]]:4 = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[M]], %[[TILEMAX]], %[[L]] : {{.*}}) outs(%[[M]], {{.*}})
// CHECK: arith.maximumf
// CHECK: arith.cmpf oeq
// CHECK: math.exp2
// CHECK: arith.select
// CHECK-NOT: arith.negf
// CHECK: %[[DIM:.*]] = tensor.dim %[[S]]
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[DIM]]) : tensor<4x?xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[P:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[S]], %[[ROW]]#2 : tensor<4x?xf32>, tensor<4xf32>) outs(%[[EMPTY]], %[[ZERO]] : tensor<4x?xf32>, tensor<4xf32>)
// CHECK: ^bb0(%[[X:[a-z0-9_]+]]: f32, %[[MAX:[a-z0-9_]+]]: f32,
// CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[SCALED:.*]] = arith.mulf %[[X]], %[[HALF]] : f32
// CHECK: %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// CHECK: %[[D:.*]] = arith.subf %[[SCALED]], %[[MAX]] : f32
// CHECK: %[[E:.*]] = arith.mulf %[[D]], %[[LOG2E]] : f32
// CHECK: math.exp2 %[[E]]
// CHECK-NOT: math.fma
// CHECK: arith.addf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[ROW]]#3, %[[P]]#1 : tensor<4xf32>, tensor<4xf32>) outs(%[[L]] : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: return %[[P]]#0, %[[ROW]]#0, %[[SUM]], %[[ROW]]#1
func.func @step(%s: tensor<4x?xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>)
    -> (tensor<4x?xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l {scale = 0.5 : f32}
      : tensor<4x?xf32>, tensor<4xf32>
  return %p, %m1, %l1, %c : tensor<4x?xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Leading batch dims stay parallel; only the last dim is reduced.
// CHECK-LABEL: func.func @batched
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: iterator_types = ["parallel", "parallel"]
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.constant 1.44269502 : f32
func.func @batched(%s: tensor<2x?x?xf32>, %m: tensor<2x?xf32>, %l: tensor<2x?xf32>)
    -> tensor<2x?x?xf32> {
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l : tensor<2x?x?xf32>, tensor<2x?xf32>
  return %p : tensor<2x?x?xf32>
}

// -----

// Other ops are left alone.
// CHECK-LABEL: func.func @untouched
// CHECK: attn.softmax
func.func @untouched(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = attn.softmax ins(%x : tensor<4x8xf32>) outs(%y : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
