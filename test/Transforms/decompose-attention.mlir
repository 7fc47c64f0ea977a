// RUN: attn-opt %s --attn-decompose-attention="kv-tile=16" --canonicalize --cse --split-input-file | FileCheck %s
// RUN: not attn-opt %s --attn-decompose-attention="kv-tile=-1" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: attn-decompose-attention: kv-tile must be positive, got -1

// Causal: two kv loops. The first stops before the diagonal and has no mask
// arithmetic; the second stops at the diagonal and compares q with kv. The
// scale (1/sqrt(64) = 0.125) is left to attn.online_softmax.
// CHECK-LABEL: func.func @causal_tile
// CHECK-SAME: %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index, %[[Q0:[a-z0-9]+]]: index)
// CHECK: %[[FULL:.*]]:3 = scf.for %{{.*}} = %c0 to %[[MID:.*]] step %c16 iter_args
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.extf
// CHECK-NOT: arith.cmpi
// CHECK: attn.online_softmax {{.*}} {scale = 1.250000e-01 : f32}
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %[[MID]] to %{{.*}} step %c16 iter_args(%{{.*}} = %[[FULL]]#0, %{{.*}} = %[[FULL]]#1, %{{.*}} = %[[FULL]]#2)
// CHECK: linalg.index 0
// CHECK: arith.addi %[[Q0]]
// CHECK: arith.cmpi uge
// CHECK: arith.select
// CHECK: attn.online_softmax {{.*}} {scale = 1.250000e-01 : f32}
// Normalize: 0 for rows with nothing unmasked, rounded to f16.
// CHECK: arith.divf
// CHECK: arith.select
// CHECK: arith.truncf
// CHECK: tensor.insert_slice
func.func @causal_tile(%q: tensor<1x1x?x64xf16>, %k: tensor<1x1x?x64xf16>,
                       %v: tensor<1x1x?x64xf16>, %o: tensor<1x1x?x64xf16>,
                       %b0: index, %h0: index, %q0: index) -> tensor<1x1x?x64xf16> {
  %c0 = arith.constant 0 : index
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>)
      outs(%o : tensor<1x1x?x64xf16>) offsets(%b0, %h0, %q0, %c0) {causal} -> tensor<1x1x?x64xf16>
  return %r : tensor<1x1x?x64xf16>
}

// -----

// score_mod and mask_mod are inlined with whole-problem indices; with a
// score_mod the scale is applied before it and the softmax gets scale 1.
// The logsumexp is max + log(sum), -inf for empty rows.
// CHECK-LABEL: func.func @regions
// CHECK-SAME: %[[SLOPES:[a-z0-9]+]]: tensor<4xf32>, %{{[a-z0-9]+}}: index, %[[H0:[a-z0-9]+]]: index
// CHECK: scf.for %{{.*}} = %c0 to %c2
// CHECK: scf.for %[[HI:[a-z0-9]+]] = %c0 to %c4
// CHECK: %[[H:.*]] = arith.addi %[[H0]], %[[HI]]
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK: arith.mulf %{{.*}}, %cst
// CHECK: tensor.extract %[[SLOPES]][%[[H]]]
// CHECK: arith.cmpi ult
// CHECK: arith.select
// CHECK: attn.online_softmax {{[^{]*}} : tensor<?x?xf32>, tensor<?xf32>
// CHECK: math.log
// CHECK: arith.select
func.func @regions(%q: tensor<2x4x10x32xf32>, %k: tensor<2x4x20x32xf32>,
                   %v: tensor<2x4x20x32xf32>, %o: tensor<2x4x10x32xf32>,
                   %lse: tensor<2x4x10xf32>, %slopes: tensor<4xf32>,
                   %b0: index, %h0: index)
    -> (tensor<2x4x10x32xf32>, tensor<2x4x10xf32>) {
  %c0 = arith.constant 0 : index
  %r:2 = attn.attention ins(%q, %k, %v : tensor<2x4x10x32xf32>, tensor<2x4x20x32xf32>, tensor<2x4x20x32xf32>)
      outs(%o, %lse : tensor<2x4x10x32xf32>, tensor<2x4x10xf32>) offsets(%b0, %h0, %c0, %c0)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %slope = tensor.extract %slopes[%h] : tensor<4xf32>
        %r = arith.addf %s, %slope : f32
        attn.yield %r : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c3 = arith.constant 3 : index
        %keep = arith.cmpi ult, %kv, %c3 : index
        attn.yield %keep : i1
      }
      -> tensor<2x4x10x32xf32>, tensor<2x4x10xf32>
  return %r#0, %r#1 : tensor<2x4x10x32xf32>, tensor<2x4x10xf32>
}
