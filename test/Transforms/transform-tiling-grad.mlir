// Upstream transform-dialect tiling drives attn.attention_grad through its
// TilingInterface over (B, Hkv): a tile holds whole kv heads with every
// query head of their groups.
// RUN: attn-opt %s --transform-interpreter --split-input-file --verify-diagnostics | FileCheck %s

!q = tensor<2x8x128x64xf32>
!kv = tensor<2x2x256x64xf32>
!l = tensor<2x8x128xf32>

// GQA 8:2, tiles of one batch and one kv head: each reads its kv head's
// K and V and the four query heads of its group, and its offsets give the
// whole-problem batch and first query head.
// CHECK-LABEL: func.func @tile_kv_heads
// CHECK: scf.forall (%[[B:.*]], %[[KVH:.*]]) in (2, 2)
// CHECK: %[[H:.*]] = arith.muli %[[KVH]], %c4
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[H]], 0, 0] [1, 4, 128, 64]
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[KVH]], 0, 0] [1, 1, 256, 64]
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[H]], 0] [1, 4, 128]
// CHECK: attn.attention_grad ins({{.*}} : tensor<1x4x128x64xf32>, tensor<1x1x256x64xf32>, tensor<1x1x256x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128xf32>)
// CHECK-SAME: offsets(%[[B]], %[[H]]) {causal} mask_mod
// CHECK: tensor.parallel_insert_slice %{{.*}}#0 into %{{.*}}[%[[B]], %{{.*}}, 0, 0] [1, 4, 128, 64]
// CHECK: tensor.parallel_insert_slice %{{.*}}#1 into %{{.*}}[%[[B]], %[[KVH]], 0, 0] [1, 1, 256, 64]
// CHECK: tensor.parallel_insert_slice %{{.*}}#2 into %{{.*}}[%[[B]], %[[KVH]], 0, 0] [1, 1, 256, 64]

func.func @tile_kv_heads(%q: !q, %k: !kv, %v: !kv, %o: !q, %do: !q, %lse: !l,
                         %dq: !q, %dk: !kv, %dv: !kv) -> (!q, !kv, !kv) {
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %lse : !q, !kv, !kv, !q, !q, !l)
      outs(%dq, %dk, %dv : !q, !kv, !kv) {causal}
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c3 = arith.constant 3 : index
        %odd = arith.cmpi ult, %h, %c3 : index
        attn.yield %odd : i1
      } -> !q, !kv, !kv
  return %r#0, %r#1, %r#2 : !q, !kv, !kv
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %g = transform.structured.match ops{["attn.attention_grad"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %g tile_sizes [1, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Dynamic heads tiled two kv heads at a time, the batch not tiled: the last
// tile may be partial (affine.min), and its query heads are G = Hq / Hkv
// per kv head.
// CHECK-LABEL: func.func @dynamic_heads
// CHECK: scf.forall (%[[T:.*]]) in (%{{.*}})
// CHECK: %[[KV0:.*]] = affine.apply {{.*}}(%[[T]])
// CHECK: %[[KVN:.*]] = affine.min
// CHECK: %[[G:.*]] = arith.divui
// CHECK: %[[H0:.*]] = arith.muli %[[KV0]], %[[G]]
// CHECK: %[[HN:.*]] = arith.muli %[[KVN]], %[[G]]
// CHECK: tensor.extract_slice %{{.*}}[0, %[[H0]], 0, 0] [%{{.*}}, %[[HN]], %{{.*}}, 64]
// CHECK: tensor.extract_slice %{{.*}}[0, %[[KV0]], 0, 0] [%{{.*}}, %[[KVN]], %{{.*}}, 64]
// CHECK: attn.attention_grad
// CHECK-SAME: offsets(%{{.*}}, %[[H0]])
// CHECK: tensor.parallel_insert_slice %{{.*}}#0 into %{{.*}}[0, %{{.*}}, 0, 0] [%{{.*}}, %{{.*}}, %{{.*}}, 64]
// CHECK: tensor.parallel_insert_slice %{{.*}}#1 into %{{.*}}[0, %[[KV0]], 0, 0] [%{{.*}}, %[[KVN]], %{{.*}}, 64]
func.func @dynamic_heads(%q: tensor<?x?x?x64xf32>, %k: tensor<?x?x?x64xf32>, %v: tensor<?x?x?x64xf32>,
                         %o: tensor<?x?x?x64xf32>, %do: tensor<?x?x?x64xf32>, %lse: tensor<?x?x?xf32>)
    -> (tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>) {
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %lse : tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>,
          tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?xf32>)
      outs(%q, %k, %v : tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>)
      -> tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>
  return %r#0, %r#1, %r#2 : tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %g = transform.structured.match ops{["attn.attention_grad"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %forall = transform.structured.tile_using_forall %g tile_sizes [0, 2]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

!q = tensor<2x8x128x64xf32>
!kv = tensor<2x2x256x64xf32>
!l = tensor<2x8x128xf32>

// Capture gradients sum over every tile.
func.func @with_wrt(%q: !q, %k: !kv, %v: !kv, %o: !q, %do: !q, %lse: !l,
                    %dq: !q, %dk: !kv, %dv: !kv, %bias: tensor<8xf32>)
    -> (!q, !kv, !kv, tensor<8xf32>) {
  // expected-error @+4 {{cannot be tiled with wrt tensors: every tile adds to the whole of each wrt gradient}}
  // expected-error @+3 {{faild to tile operation}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-note @+1 {{when applied to this op}}
  %r:4 = attn.attention_grad ins(%q, %k, %v, %o, %do, %lse : !q, !kv, !kv, !q, !q, !l)
      wrt(%bias : tensor<8xf32>)
      outs(%dq, %dk, %dv, %bias : !q, !kv, !kv, tensor<8xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %x = tensor.extract %bias[%h] : tensor<8xf32>
        %y = arith.addf %s, %x : f32
        attn.yield %y : f32
      } -> !q, !kv, !kv, tensor<8xf32>
  return %r#0, %r#1, %r#2, %r#3 : !q, !kv, !kv, tensor<8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %g = transform.structured.match ops{["attn.attention_grad"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{transform.structured.tile_using_forall failed to apply}}
    %tiled, %forall = transform.structured.tile_using_forall %g tile_sizes [1, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

!l = tensor<2x8x128xf32>

// The GPU kernels compute whole problems.
func.func @with_kernel(%q: tensor<2x8x128x64xbf16>, %k: tensor<2x2x256x64xbf16>,
                       %v: tensor<2x2x256x64xbf16>, %o: tensor<2x8x128x64xbf16>,
                       %do: tensor<2x8x128x64xbf16>, %lse: !l)
    -> (tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>) {
  // expected-error @+4 {{cannot be tiled once it has a kernel: the GPU backward kernels compute whole problems}}
  // expected-error @+3 {{faild to tile operation}}
  // expected-error @+2 {{failed to generate tiling loops}}
  // expected-note @+1 {{when applied to this op}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %lse : tensor<2x8x128x64xbf16>,
          tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x8x128x64xbf16>,
          tensor<2x8x128x64xbf16>, !l)
      outs(%q, %k, %v : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>)
      {kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64, stages = 2>}
      -> tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>
  return %r#0, %r#1, %r#2 : tensor<2x8x128x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %g = transform.structured.match ops{["attn.attention_grad"]} in %root : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{transform.structured.tile_using_forall failed to apply}}
    %tiled, %forall = transform.structured.tile_using_forall %g tile_sizes [1, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
