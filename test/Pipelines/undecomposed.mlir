// attn ops the pipelines cannot lower yet get an error naming them.
// RUN: not attn-opt %s --attn-lower-to-cpu 2>&1 | FileCheck %s
// RUN: not attn-opt %s --attn-lower-to-nvvm=chip=sm_90 2>&1 | FileCheck %s
// RUN: not attn-opt %s --attn-check-decomposed 2>&1 | FileCheck %s

// CHECK: undecomposed.mlir:[[@LINE+6]]:9: error: 'attn.create_block_mask' op is left after the decompositions
func.func @field(%n: index) -> tensor<?x?x?xi32> {
  %c1 = arith.constant 1 : index
  // A block mask whose fields are read: nothing computes them yet (the
  // attention lowering evaluates mask_mod on every tile and needs no block
  // mask to be correct).
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %keep = arith.cmpi uge, %q, %kv : index
        attn.yield %keep : i1
      }
  %num = attn.block_mask_field kv_num_blocks of %bm
      : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?xi32>
  return %num : tensor<?x?x?xi32>
}
