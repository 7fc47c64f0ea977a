// attn ops the pipelines cannot lower get an error naming them.
// RUN: not attn-opt %s --attn-lower-to-cpu --split-input-file 2>&1 | FileCheck %s --check-prefix=QSIDE
// RUN: not attn-opt %s --attn-lower-to-nvvm=chip=sm_90 --split-input-file 2>&1 | FileCheck %s --check-prefix=QSIDE
// RUN: not attn-opt %s --attn-check-decomposed --split-input-file 2>&1 | FileCheck %s

// An attn.make_block_mask holds the kv-side lists it is given and no
// transposed (q-side) ones: reading one is an error; its kv-side fields are
// the given lists.
// QSIDE: undecomposed.mlir:[[@LINE+5]]:8: error: 'attn.block_mask_field' op reads q_indices of an attn.make_block_mask that was not given it
func.func @given(%num: tensor<1x1x?xi32>, %idx: tensor<1x1x?x?xi32>) -> (tensor<?x?x?xi32>, tensor<?x?x?x?xi32>) {
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      : !attn.block_mask<q_block = 128, kv_block = 128>
  %n = attn.block_mask_field kv_num_blocks of %bm : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?xi32>
  %q = attn.block_mask_field q_indices of %bm : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?x?xi32>
  return %n, %q : tensor<?x?x?xi32>, tensor<?x?x?x?xi32>
}

// -----

// attn-check-decomposed alone: every attn op the decompositions should
// have removed is reported.
// CHECK: undecomposed.mlir:[[@LINE+3]]:9: error: 'attn.create_block_mask' op is left after the decompositions
func.func @field(%n: index) -> tensor<?x?x?xi32> {
  %c1 = arith.constant 1 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %keep = arith.cmpi uge, %q, %kv : index
        attn.yield %keep : i1
      }
  %num = attn.block_mask_field q_num_blocks of %bm
      : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?xi32>
  return %num : tensor<?x?x?xi32>
}
