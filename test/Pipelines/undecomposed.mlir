// attn ops the pipelines cannot lower yet get an error naming them.
// RUN: not attn-opt %s --attn-lower-to-cpu 2>&1 | FileCheck %s --check-prefix=QSIDE
// RUN: not attn-opt %s --attn-lower-to-nvvm=chip=sm_90 2>&1 | FileCheck %s --check-prefix=QSIDE
// RUN: not attn-opt %s --attn-check-decomposed 2>&1 | FileCheck %s

// QSIDE: undecomposed.mlir:[[@LINE+13]]:10: error: 'attn.block_mask_field' op reads a q-side field, which attn-lower-block-masks does not compute
// CHECK: undecomposed.mlir:[[@LINE+5]]:9: error: 'attn.create_block_mask' op is left after the decompositions
func.func @field(%n: index) -> tensor<?x?x?xi32> {
  %c1 = arith.constant 1 : index
  // The transposed (q-side) lists a backward pass would walk: nothing
  // computes them yet.
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
