// Upstream transform-dialect tiling drives attn.attention through its
// TilingInterface.
// RUN: attn-opt %s --transform-interpreter --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @tile_heads_and_rows
// CHECK: scf.forall (%[[B:.*]], %[[HT:.*]], %[[MT:.*]]) in (2, 4, 8)
// CHECK: %[[H:.*]] = affine.apply {{.*}}(%[[HT]])
// CHECK: %[[M:.*]] = affine.apply {{.*}}(%[[MT]])
// Heads tiled by 2 with groups of 2 query heads per kv head: one kv head.
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[KVH]], 0, 0] [1, 1, 256, 64]
// CHECK: attn.attention {{.*}} tensor<1x2x16x64xf32>, tensor<1x1x256x64xf32>, tensor<1x1x256x64xf32>
// CHECK-SAME: offsets(%[[B]], %[[H]], %[[M]], %{{.*}})
func.func @tile_heads_and_rows(%q: tensor<2x8x128x64xf32>, %k: tensor<2x4x256x64xf32>,
                               %v: tensor<2x4x256x64xf32>, %o: tensor<2x8x128x64xf32>)
    -> tensor<2x8x128x64xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x128x64xf32>, tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>)
      outs(%o : tensor<2x8x128x64xf32>) -> tensor<2x8x128x64xf32>
  return %r : tensor<2x8x128x64xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %a tile_sizes [1, 2, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Tiles of 3 heads do not map onto whole kv heads (groups of 2).
func.func @bad_head_tile(%q: tensor<2x8x128x64xf32>, %k: tensor<2x4x256x64xf32>,
                         %v: tensor<2x4x256x64xf32>, %o: tensor<2x8x128x64xf32>)
    -> tensor<2x8x128x64xf32> {
  // expected-error @+4 {{cannot tile the query heads into groups that do not map onto whole kv heads}}
  // expected-error @+3 {{faild to tile operation}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-note @+1 {{when applied to this op}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x128x64xf32>, tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>)
      outs(%o : tensor<2x8x128x64xf32>) -> tensor<2x8x128x64xf32>
  return %r : tensor<2x8x128x64xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{transform.structured.tile_using_forall failed to apply}}
    %tiled, %forall = transform.structured.tile_using_forall %a tile_sizes [1, 3, 16]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Dv is never split.
func.func @bad_dv_tile(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x256x64xf32>,
                       %v: tensor<2x8x256x64xf32>, %o: tensor<2x8x128x64xf32>)
    -> tensor<2x8x128x64xf32> {
  // expected-error @+4 {{cannot tile the value head dim (Dv = 64)}}
  // expected-error @+3 {{faild to tile operation}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-note @+1 {{when applied to this op}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>, tensor<2x8x256x64xf32>)
      outs(%o : tensor<2x8x128x64xf32>) -> tensor<2x8x128x64xf32>
  return %r : tensor<2x8x128x64xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{transform.structured.tile_using_forall failed to apply}}
    %tiled, %forall = transform.structured.tile_using_forall %a tile_sizes [1, 1, 16, 32]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
