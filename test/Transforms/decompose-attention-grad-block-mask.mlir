// attn-decompose applies an attention_grad's block mask element by element:
// each (batch, head) marks its blocks from the kv-side lists (partial 1,
// full 2, unlisted 0), and P keeps an element of a full block, of a
// partial one where the mask_mod does, and nothing else. A block mask not
// yet lowered to lists is refused.
// RUN: attn-opt %s --split-input-file --attn-decompose="kv-tile=32" --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @given
// CHECK: scf.for %[[H:.*]] = %{{.*}} iter_args(
// CHECK: %[[QB:.*]] = arith.ceildivui %{{.*}}, %c128
// CHECK: %[[KB:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[QB]], %[[KB]]) : tensor<?x?xi8>
// CHECK: linalg.fill ins(%c0_i8 : i8) outs(%[[EMPTY]]
// CHECK: tensor.insert %c1_i8
// CHECK: tensor.insert %c2_i8
// CHECK: linalg.generic
// CHECK: %[[STATE:.*]] = tensor.extract %{{.*}} : tensor<?x?xi8>
// CHECK: %[[FULL:.*]] = arith.cmpi eq, %[[STATE]], %c2_i8
// CHECK: %[[PARTIAL:.*]] = arith.cmpi eq, %[[STATE]], %c1_i8
// CHECK: %[[MASKED:.*]] = arith.andi %[[PARTIAL]],
// CHECK: arith.ori %[[FULL]], %[[MASKED]]
func.func @given(%q: tensor<1x2x?x32xf32>, %o: tensor<1x2x?x32xf32>,
                 %lse: tensor<1x2x?xf32>, %num: tensor<1x1x?xi32>,
                 %idx: tensor<1x1x?x?xi32>)
    -> (tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) {
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      full_kv(%num, %idx : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      : !attn.block_mask<q_block = 128, kv_block = 64>
  %r:3 = attn.attention_grad ins(%q, %q, %q, %o, %o, %lse : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?xf32>)
      outs(%o, %o, %o : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 64>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %keep = arith.cmpi uge, %i, %j : index
        attn.yield %keep : i1
      }
      -> tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>
  return %r#0, %r#1, %r#2 : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>
}

// -----

func.func @unlowered(%q: tensor<1x2x?x32xf32>, %o: tensor<1x2x?x32xf32>,
                     %lse: tensor<1x2x?xf32>)
    -> (tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %q, %c2 : tensor<1x2x?x32xf32>
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m) kv_len(%m)
      : !attn.block_mask<q_block = 128, kv_block = 64> mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %keep = arith.cmpi uge, %i, %j : index
        attn.yield %keep : i1
      }
  // expected-error @+1 {{has a block mask that is not an attn.make_block_mask in its function (run attn-lower-block-masks first)}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %o, %o, %lse : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?xf32>)
      outs(%o, %o, %o : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 64>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %keep = arith.cmpi uge, %i, %j : index
        attn.yield %keep : i1
      }
      -> tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>
  return %r#0, %r#1, %r#2 : tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>, tensor<1x2x?x32xf32>
}
