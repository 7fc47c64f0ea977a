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

// -----

// Split-kv (FlashDecoding) through PartialReductionOpInterface: four kv
// splits in an scf.forall, each an attention on its kv range (offsets give
// its whole-problem kv position) written into its slot of the f32 partials,
// then attn.merge_splits.
// CHECK-LABEL: func.func @split_kv_forall
// CHECK: %[[N:.*]] = tensor.dim %{{.*}}, %c2 : tensor<1x2x?x64xf16>
// CHECK: %[[PO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x8x1x64x4xf32>)
// CHECK: %[[PL:.*]] = linalg.fill ins(%cst{{.*}} : f32) outs(%{{.*}} : tensor<1x8x1x4xf32>)
// CHECK: %[[SPLITS:.*]]:2 = scf.forall (%[[S:.*]]) in (4) shared_outs(%[[O:.*]] = %[[PO]], %[[L:.*]] = %[[PL]])
// CHECK:   %[[START:.*]] = affine.apply {{.*}}(%[[S]])[%[[N]]]
// CHECK:   %[[OSLOT:.*]] = tensor.extract_slice %[[O]][0, 0, 0, 0, %[[S]]] [1, 8, 1, 64, 1]
// CHECK:   %[[LSLOT:.*]] = tensor.extract_slice %[[L]][0, 0, 0, %[[S]]] [1, 8, 1, 1]
// CHECK:   %[[K:.*]] = tensor.extract_slice %{{.*}}[0, 0, %[[START]], 0] [1, 2, %{{.*}}, 64]
// CHECK:   attn.attention ins(%{{.*}}, %[[K]], %{{.*}} : tensor<1x8x1x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>)
// CHECK-SAME: outs(%[[OSLOT]], %[[LSLOT]] : tensor<1x8x1x64xf32>, tensor<1x8x1xf32>)
// CHECK-SAME: offsets(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {causal}
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[O]][0, 0, 0, 0, %[[S]]] [1, 8, 1, 64, 1]
// CHECK:     tensor.parallel_insert_slice %{{.*}} into %[[L]][0, 0, 0, %[[S]]] [1, 8, 1, 1]
// CHECK: attn.merge_splits ins(%[[SPLITS]]#0, %[[SPLITS]]#1 : tensor<1x8x1x64x4xf32>, tensor<1x8x1x4xf32>) outs(%{{.*}} : tensor<1x8x1x64xf16>)
func.func @split_kv_forall(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x?x64xf16>,
                           %v: tensor<1x2x?x64xf16>, %o: tensor<1x8x1x64xf16>)
    -> tensor<1x8x1x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x8x1x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>)
      outs(%o : tensor<1x8x1x64xf16>) {causal} -> tensor<1x8x1x64xf16>
  return %r : tensor<1x8x1x64xf16>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %fill:2, %split, %merge, %forall = transform.structured.tile_reduction_using_forall %a
        by num_threads = [0, 0, 0, 0, 4]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// tile_reduction_using_for: a loop over kv chunks of 32 carrying the
// running (output, logsumexp) in slot 0 of the partials; each chunk's
// attention is merged into it with attn.merge_splits over two slots, and the
// last merge writes the op's own outputs (here with the logsumexp).
// CHECK-LABEL: func.func @split_kv_for
// CHECK: %[[PO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4x?x64x32xf32>)
// CHECK: %[[PL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4x?x32xf32>)
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[KV:.*]] = %c0 to %{{.*}} step %c32 iter_args(%[[O:.*]] = %[[PO]], %[[L:.*]] = %[[PL]])
// CHECK:   %[[CHUNK:.*]] = affine.min
// CHECK:   %[[RUNO:.*]] = tensor.extract_slice %[[O]][0, 0, 0, 0, 0] [2, 4, %{{.*}}, 64, 1]
// CHECK:   %[[K:.*]] = tensor.extract_slice %{{.*}}[0, 0, %[[KV]], 0] [2, 4, %[[CHUNK]], 64]
// CHECK:   %[[NEW:.*]]:2 = attn.attention {{.*}} offsets(%{{.*}}, %{{.*}}, %{{.*}}, %[[KV]])
// CHECK:   tensor.insert_slice %[[RUNO]] into %{{.*}}[0, 0, 0, 0, 0] [2, 4, %{{.*}}, 64, 1]
// CHECK:   tensor.insert_slice %[[NEW]]#0 into %{{.*}}[0, 0, 0, 0, 1] [2, 4, %{{.*}}, 64, 1]
// CHECK:   %[[MERGED:.*]]:2 = attn.merge_splits {{.*}} : tensor<2x4x?x64x2xf32>, tensor<2x4x?x2xf32>
// CHECK:   tensor.insert_slice %[[MERGED]]#0 into %[[O]][0, 0, 0, 0, 0]
// CHECK:   scf.yield
// CHECK: attn.merge_splits ins(%[[LOOP]]#0, %[[LOOP]]#1 : {{.*}}) outs(%{{.*}}, %{{.*}} : tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>)
func.func @split_kv_for(%q: tensor<2x4x?x64xbf16>, %k: tensor<2x4x?x64xbf16>,
                        %v: tensor<2x4x?x64xbf16>, %o: tensor<2x4x?x64xbf16>,
                        %lse: tensor<2x4x?xf32>)
    -> (tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16>, tensor<2x4x?x64xbf16>)
      outs(%o, %lse : tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>) -> tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>
  return %r#0, %r#1 : tensor<2x4x?x64xbf16>, tensor<2x4x?xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %fill:2, %split, %merge, %for = transform.structured.tile_reduction_using_for %a
        by tile_sizes = [0, 0, 0, 0, 32]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// A plain loop over N would overwrite, not accumulate: refused.
func.func @bad_kv_loop(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x256x64xf32>,
                       %v: tensor<2x8x256x64xf32>, %o: tensor<2x8x128x64xf32>)
    -> tensor<2x8x128x64xf32> {
  // expected-error @+3 {{cannot tile the kv length N as a plain loop}}
  // expected-error @+2 {{faild to tile operation}}
  // expected-error @+1 {{failed to generate tiling loops}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>, tensor<2x8x256x64xf32>)
      outs(%o : tensor<2x8x128x64xf32>) -> tensor<2x8x128x64xf32>
  return %r : tensor<2x8x128x64xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["attn.attention"]} in %root : (!transform.any_op) -> !transform.any_op
    %tiled, %loop = transform.structured.tile_using_for %a tile_sizes [0, 0, 0, 0, 64]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}
