// RUN: attn-opt %s --attn-lower-block-masks --canonicalize --split-input-file | FileCheck %s
// RUN: attn-opt %s --attn-lower-block-masks=bound-blocks=false --canonicalize --split-input-file | FileCheck %s --check-prefix=SCAN
// RUN: attn-opt %s --attn-block-masks-to-gpu --canonicalize --split-input-file | FileCheck %s --check-prefix=GPU

// A block is first bounded: the window's ops on the i64 bounds of the
// block's positions (the subtraction's bounds cross the block corners,
// unsigned compares only of bounds that do not straddle zero), and the
// mask_mod is evaluated position by position only when the bounds leave
// both a kept and a dropped position possible.
// CHECK-LABEL: func.func @window
// CHECK:         %[[Q0:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:         %[[Q1:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:         %[[KV0:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:         %[[KV1:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-DAG:     arith.subi %[[Q0]], %[[KV1]] : i64
// CHECK-DAG:     arith.subi %[[Q1]], %[[KV0]] : i64
// CHECK:         arith.cmpi ult, %{{.*}}, %c64_i64 : i64
// CHECK:         %[[UNKNOWN:.*]] = arith.andi
// CHECK:         scf.if %[[UNKNOWN]] -> (i1, i1) {
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               arith.cmpi uge, %{{.*}}, %{{.*}} : index
// Without bounds, every block is scanned.
// SCAN-LABEL: func.func @window
// SCAN-NOT:     i64
// SCAN:         arith.cmpi uge, %{{.*}}, %{{.*}} : index
// On the GPU a warp decides a block: by the bounds of the whole block
// where they tell (every read split across the 32 lanes), the same on all
// lanes; otherwise by one position a lane on a 4 x 8 grid with the block's
// corners, partial if those keep and drop; otherwise by 64 boxes of it, 32 at a time: 16 x 32 blocks are 8
// rows of 8 boxes of 2 x 4 positions. Every lane bounds a box (an empty
// one, past the problem's edge, its block's last row or column) so that
// lanes can share reads, and drops an empty box's result. A box the bounds
// leave undecided is scanned only if the bounds gave up or its warp's
// decided boxes do not already keep and drop, and the second 32 boxes are
// not looked at once the first show the block partial.
// GPU-LABEL: func.func @window
// GPU:         gpu.launch blocks({{.*}}) threads(%[[THREAD:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1024,
// GPU:           %[[LANE:.*]] = arith.remui %[[THREAD]], %c32 : index
// GPU:           arith.cmpi ult, %{{.*}}, %c64_i64 : i64
// GPU:           %[[BOTH:.*]] = arith.andi %[[BLOCK_KEEPS:.*]], %[[BLOCK_DROPS:.*]] : i1
// GPU-NEXT:      %[[ONE_OF:.*]] = arith.xori %[[BOTH]], %true : i1
// GPU-NEXT:      %[[DECIDED:.*]] = arith.andi %{{.*}}, %[[ONE_OF]] : i1
// GPU:           scf.if %[[DECIDED]] -> (i1, i1) {
// GPU:             scf.yield %[[BLOCK_KEEPS]], %[[BLOCK_DROPS]] : i1, i1
// GPU:           } else {
// GPU:             %[[PROBE_ROW:.*]] = arith.divui %[[LANE]], %c8 : index
// GPU:             arith.muli %{{.*}}, %[[PROBE_ROW]] : index
// GPU:             arith.divui %{{.*}}, %c3 : index
// GPU:             %[[PROBE_COLUMN:.*]] = arith.remui %[[LANE]], %c8 : index
// GPU:             arith.muli %{{.*}}, %[[PROBE_COLUMN]] : index
// GPU:             arith.divui %{{.*}}, %c7 : index
// GPU:             %[[PROBE_KEPT:.*]] = arith.andi
// GPU:             %[[PROBE_DROPPED:.*]] = arith.xori %[[PROBE_KEPT]], %true : i1
// GPU:             %[[ANY_DROPPED:.*]] = nvvm.vote.sync any %{{.*}}, %[[PROBE_DROPPED]] -> i1
// GPU:             %[[ANY_KEPT:.*]] = nvvm.vote.sync any %{{.*}}, %[[PROBE_KEPT]] -> i1
// GPU:             %[[PROBED:.*]] = arith.andi %[[ANY_KEPT]], %[[ANY_DROPPED]] : i1
// GPU:             scf.if %[[PROBED]] -> (i1, i1) {
// GPU-NEXT:          scf.yield %true, %true : i1, i1
// GPU-NEXT:        } else {
// GPU:             arith.divui %[[LANE]], %c8 : index
// GPU:             %[[COLUMN_PART:.*]] = arith.remui %[[LANE]], %c8 : index
// GPU:             arith.muli %[[COLUMN_PART]], %c4 : index
// GPU:             %[[NON_EMPTY:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// GPU-NOT:         scf.if
// GPU:             arith.cmpi ult, %{{.*}}, %c64_i64 : i64
// GPU:             %[[MAY_KEEP:.*]] = arith.andi %[[NON_EMPTY]], %{{.*}} : i1
// GPU:             %[[MAY_DROP:.*]] = arith.andi %[[NON_EMPTY]], %{{.*}} : i1
// GPU:             %[[EMPTY:.*]] = arith.xori %[[NON_EMPTY]], %true : i1
// GPU:             %[[EXACT:.*]] = arith.ori %[[EMPTY]], %{{.*}} : i1
// GPU:             %[[UNKNOWN:.*]] = arith.andi %[[MAY_KEEP]], %[[MAY_DROP]] : i1
// GPU:             %[[KNOWN:.*]] = arith.xori %[[UNKNOWN]], %true : i1
// GPU:             %[[DROPS:.*]] = arith.andi %[[KNOWN]], %[[MAY_DROP]] : i1
// GPU:             %[[WARP_DROPS:.*]] = nvvm.vote.sync any %{{.*}}, %[[DROPS]] -> i1
// GPU:             %[[KEEPS:.*]] = arith.andi %[[KNOWN]], %[[MAY_KEEP]] : i1
// GPU:             %[[WARP_KEEPS:.*]] = nvvm.vote.sync any %{{.*}}, %[[KEEPS]] -> i1
// GPU:             %[[PARTIAL:.*]] = arith.andi %[[WARP_KEEPS]], %[[WARP_DROPS]] : i1
// GPU:             %[[UNDECIDED:.*]] = arith.xori %[[PARTIAL]], %true : i1
// GPU:             %[[GAVE_UP:.*]] = arith.xori %[[EXACT]], %true : i1
// GPU:             %[[NEEDED:.*]] = arith.ori %[[GAVE_UP]], %[[UNDECIDED]] : i1
// GPU:             %[[LOOK:.*]] = arith.andi %[[UNKNOWN]], %[[NEEDED]] : i1
// GPU:             %[[FIRST:.*]]:2 = scf.if %[[LOOK]] -> (i1, i1) {
// GPU:               scf.for
// GPU:             } else {
// GPU:               scf.yield %[[MAY_KEEP]], %[[MAY_DROP]] : i1, i1
// GPU:             nvvm.vote.sync any %{{.*}}, %[[FIRST]]#1 -> i1
// GPU:             nvvm.vote.sync any %{{.*}}, %[[FIRST]]#0 -> i1
// GPU:             scf.if %{{.*}} -> (i1, i1) {
// GPU-NEXT:          scf.yield %[[FIRST]]#0, %[[FIRST]]#1 : i1, i1
// GPU-NEXT:        } else {
// GPU-NEXT:          %[[SECOND:.*]] = arith.addi %[[LANE]], %c32 : index
// GPU-NEXT:          arith.divui %[[SECOND]], %c8 : index
// GPU:           nvvm.vote.sync any
func.func @window(%n: index) -> (tensor<?x?x?xi32>, tensor<?x?x?x?xi32>) {
  %c1 = arith.constant 1 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 16, kv_block = 32> mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c64 = arith.constant 64 : index
        %d = arith.subi %qi, %kv : index
        %ge = arith.cmpi uge, %qi, %kv : index
        %lt = arith.cmpi ult, %d, %c64 : index
        %keep = arith.andi %ge, %lt : i1
        attn.yield %keep : i1
      }
  %num = attn.block_mask_field kv_num_blocks of %bm
      : !attn.block_mask<q_block = 16, kv_block = 32> -> tensor<?x?x?xi32>
  %idx = attn.block_mask_field kv_indices of %bm
      : !attn.block_mask<q_block = 16, kv_block = 32> -> tensor<?x?x?x?xi32>
  return %num, %idx : tensor<?x?x?xi32>, tensor<?x?x?x?xi32>
}

// -----

// A captured read is bounded by the elements its index bounds cover, read
// eight at a time (the last ones repeated past the bound) after checking
// that the bounds lie in the tensor; the comparison of two reads is decided
// when their bounds are one equal value or do not overlap.
// CHECK-LABEL: func.func @documents
// CHECK:         tensor.dim %[[IDS:.*]], %c0
// CHECK:         scf.for %{{.*}} step %c8 iter_args
// CHECK-COUNT-8:   tensor.extract %[[IDS]]
// CHECK:         scf.for %{{.*}} step %c8 iter_args
// CHECK-COUNT-8:   tensor.extract %[[IDS]]
// CHECK:         arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// SCAN-LABEL: func.func @documents
// SCAN-NOT:     step %c8
// On the GPU the 8 lanes that bound the same rows (16 of a 128-row block)
// split the read of their ids, two each, and combine the bounds by xor
// shuffles over 1, 2 and 4 (as i32: the ids are i32); the 4 lanes of a
// warp that bound the same 16 columns read four each, over 8 and 16.
// GPU-LABEL: func.func @documents
// GPU:         gpu.launch
// GPU:           scf.for %{{.*}} step %c16 iter_args
// GPU-COUNT-2:     tensor.extract
// GPU-NOT:         tensor.extract
// GPU:           nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32, %c31_i32
// GPU:           nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c2_i32, %c31_i32
// GPU:           nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32, %c31_i32
// GPU:           scf.for %{{.*}} step %c16 iter_args
// GPU-COUNT-4:     tensor.extract
// GPU-NOT:         tensor.extract
// GPU:           nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c8_i32, %c31_i32
// GPU:           nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32, %c31_i32
// GPU:           arith.cmpi eq, %{{.*}}, %{{.*}} : i64
// GPU:           nvvm.vote.sync any
func.func @documents(%n: index, %ids: tensor<?xi32>)
    -> (tensor<?x?x?xi32>, tensor<?x?x?x?xi32>) {
  %c1 = arith.constant 1 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 128, kv_block = 128> mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %a = tensor.extract %ids[%qi] : tensor<?xi32>
        %c = tensor.extract %ids[%kv] : tensor<?xi32>
        %keep = arith.cmpi eq, %a, %c : i32
        attn.yield %keep : i1
      }
  %num = attn.block_mask_field kv_num_blocks of %bm
      : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?xi32>
  %idx = attn.block_mask_field kv_indices of %bm
      : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?x?xi32>
  return %num, %idx : tensor<?x?x?xi32>, tensor<?x?x?x?xi32>
}

// -----

// A mask_mod with ops that have no bounds here (float arithmetic) is
// scanned position by position.
// CHECK-LABEL: func.func @float_mask
// CHECK-NOT:     : i64
// CHECK:         arith.mulf
func.func @float_mask(%n: index) -> (tensor<?x?x?xi32>, tensor<?x?x?x?xi32>) {
  %c1 = arith.constant 1 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 16, kv_block = 16> mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %d = arith.subi %qi, %kv : index
        %di = arith.index_cast %d : index to i32
        %f = arith.sitofp %di : i32 to f32
        %square = arith.mulf %f, %f : f32
        %limit = arith.constant 100.0 : f32
        %keep = arith.cmpf olt, %square, %limit : f32
        attn.yield %keep : i1
      }
  %num = attn.block_mask_field kv_num_blocks of %bm
      : !attn.block_mask<q_block = 16, kv_block = 16> -> tensor<?x?x?xi32>
  %idx = attn.block_mask_field kv_indices of %bm
      : !attn.block_mask<q_block = 16, kv_block = 16> -> tensor<?x?x?x?xi32>
  return %num, %idx : tensor<?x?x?xi32>, tensor<?x?x?x?xi32>
}
