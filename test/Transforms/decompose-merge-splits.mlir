// RUN: attn-opt %s --attn-decompose-merge-splits --split-input-file | FileCheck %s

// The merge of four kv splits: row max and exp-sum of the splits'
// logsumexps (reductions over S), the merged logsumexp (-inf where the sum
// is 0), the exp2-weighted sum of the outputs, rounded to bf16.
// CHECK-LABEL: func.func @merge
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[PL:.*]] : tensor<1x8x?x4xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[PL]], %[[MAX]] : tensor<1x8x?x4xf32>, tensor<1x8x?xf32>)
// CHECK:   arith.subf
// CHECK:   arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK:   math.exp2
// CHECK:   arith.cmpf oeq
// CHECK:   arith.select
// CHECK:   arith.addf
// CHECK: %[[LSE:.*]] = linalg.generic {{.*}} ins(%[[MAX]], %[[SUM]] : {{.*}}) outs(%{{.*}} : tensor<1x8x?xf32>)
// CHECK:   math.log2
// CHECK:   arith.select
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[PL]], %[[LSE]] : tensor<1x8x?x64x4xf32>, tensor<1x8x?x4xf32>, tensor<1x8x?xf32>) outs(%{{.*}} : tensor<1x8x?x64xf32>)
// CHECK:   math.exp2
// CHECK:   arith.select
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: %[[OUT:.*]] = linalg.generic {{.*}} ins(%[[ACC]] : tensor<1x8x?x64xf32>) outs(%{{.*}} : tensor<1x8x?x64xbf16>)
// CHECK:   arith.truncf
// CHECK: return %[[OUT]], %[[LSE]]
func.func @merge(%po: tensor<1x8x?x64x4xf32>, %pl: tensor<1x8x?x4xf32>,
                 %o: tensor<1x8x?x64xbf16>, %l: tensor<1x8x?xf32>)
    -> (tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>) {
  %r:2 = attn.merge_splits ins(%po, %pl : tensor<1x8x?x64x4xf32>, tensor<1x8x?x4xf32>)
      outs(%o, %l : tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>) -> tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
  return %r#0, %r#1 : tensor<1x8x?x64xbf16>, tensor<1x8x?xf32>
}

// -----

// An f32 output is accumulated in place: no rounding step, no logsumexp
// result.
// CHECK-LABEL: func.func @merge_f32
// CHECK-SAME: %[[O:[a-z0-9]+]]: tensor<2x4x16x128xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[O]] : tensor<2x4x16x128xf32>)
// CHECK: %[[ACC:.*]] = linalg.generic {{.*}} outs(%[[ZERO]] : tensor<2x4x16x128xf32>)
// CHECK-NOT: arith.truncf
// CHECK: return %[[ACC]]
func.func @merge_f32(%po: tensor<2x4x16x128x3xf32>, %pl: tensor<2x4x16x3xf32>,
                     %o: tensor<2x4x16x128xf32>) -> tensor<2x4x16x128xf32> {
  %r = attn.merge_splits ins(%po, %pl : tensor<2x4x16x128x3xf32>, tensor<2x4x16x3xf32>)
      outs(%o : tensor<2x4x16x128xf32>) -> tensor<2x4x16x128xf32>
  return %r : tensor<2x4x16x128xf32>
}
