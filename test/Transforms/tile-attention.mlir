// RUN: attn-opt %s --attn-tile-attention="q-tile=32" --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-tile-attention="q-tile=32 gpu-mapping" --split-input-file | FileCheck %s --check-prefix=GPU
// RUN: not attn-opt %s --attn-tile-attention="q-tile=0" 2>&1 | FileCheck %s --check-prefix=BAD

// A grid over (batch, head, q-tile); each tile is an attention on one q-tile
// of one head, reading its kv head (h / 4) and knowing its position.
// CHECK-LABEL: func.func @gqa
// CHECK: %[[B:.*]] = tensor.dim %{{.*}}, %c0
// CHECK: %[[M:.*]] = tensor.dim %{{.*}}, %c2
// CHECK: scf.forall (%[[IB:.*]], %[[IH:.*]], %[[IM:.*]]) = (0, 0, 0) to (%[[B]], 8, %[[M]]) step (1, 1, 32)
// CHECK: %[[ROWS:.*]] = affine.min
// CHECK: %[[KVH:.*]] = arith.divui %[[IH]], %c4
// CHECK: %[[Q:.*]] = tensor.extract_slice %{{.*}}[%[[IB]], %[[IH]], %[[IM]], 0] [1, 1, %[[ROWS]], 64]
// CHECK: %[[K:.*]] = tensor.extract_slice %{{.*}}[%[[IB]], %[[KVH]], 0, 0] [1, 1, %{{.*}}, 64]
// CHECK: attn.attention ins(%[[Q]], %[[K]], %{{.*}} : tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>)
// CHECK-SAME: offsets(%[[IB]], %[[IH]], %[[IM]], %{{.*}})
// CHECK-SAME: {causal}
// CHECK: tensor.parallel_insert_slice
// GPU-LABEL: func.func @gqa
// GPU: mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]
// BAD: attn-tile-attention: need q-tile > 0, kv-tile >= 0 and 0 <= thread-rows <= q-tile, got q-tile=0 kv-tile=0 thread-rows=0
func.func @gqa(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>,
               %v: tensor<?x2x?x64xf16>, %o: tensor<?x8x?x64xf16>) -> tensor<?x8x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>)
      outs(%o : tensor<?x8x?x64xf16>) {causal} -> tensor<?x8x?x64xf16>
  return %r : tensor<?x8x?x64xf16>
}

// -----

// The logsumexp is tiled with the output; regions move into the tile.
// CHECK-LABEL: func.func @lse_and_regions
// CHECK: scf.forall
// CHECK: %[[L:.*]] = tensor.extract_slice {{.*}} to tensor<1x1x?xf32>
// CHECK: attn.attention {{.*}} outs(%{{.*}}, %[[L]] : tensor<1x1x?x32xf32>, tensor<1x1x?xf32>) offsets(
// CHECK: mask_mod {
// CHECK: arith.cmpi ult
// CHECK: tensor.parallel_insert_slice
// CHECK: tensor.parallel_insert_slice
func.func @lse_and_regions(%q: tensor<2x4x100x32xf32>, %k: tensor<2x4x80x32xf32>,
                           %v: tensor<2x4x80x32xf32>, %o: tensor<2x4x100x32xf32>,
                           %lse: tensor<2x4x100xf32>)
    -> (tensor<2x4x100x32xf32>, tensor<2x4x100xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<2x4x100x32xf32>, tensor<2x4x80x32xf32>, tensor<2x4x80x32xf32>)
      outs(%o, %lse : tensor<2x4x100x32xf32>, tensor<2x4x100xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c10 = arith.constant 10 : index
        %keep = arith.cmpi ult, %kv, %c10 : index
        attn.yield %keep : i1
      }
      -> tensor<2x4x100x32xf32>, tensor<2x4x100xf32>
  return %r#0, %r#1 : tensor<2x4x100x32xf32>, tensor<2x4x100xf32>
}
