// RUN: attn-opt %s --attn-derive-block-masks --split-input-file | FileCheck %s --check-prefix=DERIVE
// RUN: attn-opt %s --attn-derive-block-masks="q-block=32 kv-block=64" --split-input-file | FileCheck %s --check-prefix=SIZES
// RUN: attn-opt %s --attn-derive-block-masks --attn-lower-block-masks --split-input-file | FileCheck %s --check-prefix=CPU
// RUN: attn-opt %s --attn-derive-block-masks --attn-block-masks-to-gpu --split-input-file | FileCheck %s --check-prefix=GPU
// RUN: attn-opt %s --attn-derive-block-masks --attn-lower-block-masks --attn-tile-attention=q-tile=256 --attn-decompose-attention=kv-tile=32 --split-input-file | FileCheck %s --check-prefix=LOOP
// RUN: not attn-opt %s --attn-derive-block-masks=q-block=48 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: attn-derive-block-masks: q-block and kv-block must be powers of two from 16 to 1024, got 48 and 128

// A sliding window that reads neither b nor h: one mask (batch and heads
// 1) of the same mask_mod, read by the attention.
// DERIVE-LABEL: func.func @window
// DERIVE-DAG:   %[[ONE:.*]] = arith.constant 1 : index
// DERIVE-DAG:   %[[M:.*]] = tensor.dim %arg0, %c2
// DERIVE-DAG:   %[[N:.*]] = tensor.dim %arg1, %c2
// DERIVE:       %[[BM:.*]] = attn.create_block_mask batch(%[[ONE]]) heads(%[[ONE]]) q_len(%[[M]]) kv_len(%[[N]]) : <q_block = 128, kv_block = 128> mask_mod
// DERIVE:         arith.cmpi ult
// DERIVE:       attn.attention {{.*}} block_mask(%[[BM]] : !attn.block_mask<q_block = 128, kv_block = 128>)
// SIZES:        attn.create_block_mask {{.*}} : <q_block = 32, kv_block = 64>

// Host code, for the CPU. Four lists allocated and zeroed, a loop nest over (b, h,
// q-block, kv-block) that scans each block with the mask_mod and appends
// it to the partial or the full list, then make_block_mask of the lists.
// CPU-LABEL: func.func @window
// CPU-COUNT-4: memref.alloc
// CPU:         scf.for
// CPU:           scf.for
// CPU:             scf.for
// CPU:               scf.for {{.*}} iter_args
// CPU:                 scf.for {{.*}} iter_args({{.*}}) -> (i1, i1)
// CPU:                   arith.cmpi ult
// CPU:                   arith.ori
// CPU:                 scf.if
// CPU:                   memref.store
// CPU:                 scf.if
// CPU:                   memref.store
// CPU:               memref.store
// CPU:               memref.store
// CPU-COUNT-4: bufferization.to_tensor
// CPU:         attn.make_block_mask kv({{.*}}) full_kv({{.*}})
// CPU-NOT:     attn.create_block_mask

// Device code. The scratch buffer and the zeroed workspace of the lines'
// counters, one kernel: a block of 32 warps per 32 kv-blocks of a q-block's
// line, a warp per block, whose lane 0 stores its voted word. After a
// barrier, lane 0 of the first warp counts the block's kv-blocks in their
// line (acquire-release) where the line spans more than one block of
// threads; the warp that completes the line (after a warp barrier, which
// orders every lane's reads after lane 0's acquire) appends its blocks with
// ballots (reading the words at the GPU's scope, two chunks ahead), fills
// the rest of each list with zeros and resets the counter. Then views of
// the lists: nothing runs after the attention, as the scratch buffer needs
// no clearing. A side of no blocks still has a block of threads: it
// writes the other side's lines empty.
// GPU-LABEL: func.func @window
// GPU:         %[[WS:.*]] = attn.workspace %{{.*}} scratch
// GPU:         %[[COUNTERS:.*]] = attn.workspace %{{.*}} : memref<?xi32>
// GPU:         %[[CHUNKS:.*]] = arith.ceildivui %[[KB:.*]], %c32 : index
// GPU:         %[[KVGRID:.*]] = arith.maxui %[[CHUNKS]], %[[ONE:.*]] : index
// GPU:         %[[QGRID:.*]] = arith.maxui %[[QB:.*]], %[[ONE]] : index
// GPU:         gpu.launch {{.*}} in (%{{.*}} = %[[KVGRID]], %{{.*}} = %[[QGRID]],
// GPU:           nvvm.vote.sync any
// GPU:           nvvm.vote.sync any
// GPU:           memref.store %{{.*}}, %[[WS]]
// GPU:         gpu.barrier
// GPU:         arith.cmpi ugt, %[[CHUNKS]], %[[ONE]] : index
// GPU:           memref.extract_aligned_pointer_as_index %[[COUNTERS]]
// GPU:           llvm.inline_asm has_side_effects "atom.acq_rel.gpu.global.add.u32 $0, [$1], $2;"
// GPU:         gpu.shuffle idx
// GPU:         scf.if
// GPU:           nvvm.bar.warp.sync
// GPU:           memref.atomic_rmw addi %{{.*}}, %[[WS]]
// GPU:           memref.atomic_rmw addi %{{.*}}, %[[WS]]
// GPU:           scf.for
// GPU:             memref.atomic_rmw addi %{{.*}}, %[[WS]]
// GPU:             nvvm.vote.sync ballot
// GPU:           scf.for
// GPU:             memref.store %{{.*}}, %[[WS]]
// GPU:           memref.store %{{.*}}, %[[COUNTERS]]
// GPU:         } else {
// GPU:           nvvm.vote.sync ballot
// GPU-NOT:     gpu.launch
// GPU-COUNT-4: memref.reinterpret_cast %[[WS]]
// GPU:         attn.make_block_mask
// GPU:         attn.attention
// GPU-NOT:     gpu.launch
// GPU:         return

// The flash loop walks the lists: the tile pass cut q-tile 256 to the
// q-block (128); the partial blocks apply the mask_mod, the full ones not.
// LOOP-LABEL: func.func @window
// LOOP:         scf.forall {{.*}} = (0, 0, 0) to ({{.*}}) step (1, 1, 128)
// LOOP:           arith.divui %{{.*}}, %c128
// LOOP:           scf.for {{.*}} iter_args
// LOOP:             tensor.extract %{{.*}} : tensor<?x?x?x?xi32>
// LOOP:             scf.for
// LOOP:               arith.cmpi ult
// LOOP:               attn.online_softmax
// LOOP:           scf.for {{.*}} iter_args
// LOOP:             tensor.extract %{{.*}} : tensor<?x?x?x?xi32>
// LOOP:             scf.for
// LOOP-NOT:           arith.cmpi ult
// LOOP:               attn.online_softmax
func.func @window(%q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>,
                  %v: tensor<?x2x?x32xf32>, %o: tensor<?x2x?x32xf32>)
    -> tensor<?x2x?x32xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>)
      outs(%o : tensor<?x2x?x32xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c64 = arith.constant 64 : index
        %d = arith.subi %qi, %kv : index
        %ge = arith.cmpi uge, %qi, %kv : index
        %lt = arith.cmpi ult, %d, %c64 : index
        %keep = arith.andi %ge, %lt : i1
        attn.yield %keep : i1
      } -> tensor<?x2x?x32xf32>
  return %r : tensor<?x2x?x32xf32>
}

// -----

// A document mask reads b: one mask per batch. Without a mask_mod, or with
// a block mask given, nothing is derived.
// DERIVE-LABEL: func.func @documents
// DERIVE:       %[[B:.*]] = tensor.dim %arg0, %c0
// DERIVE:       attn.create_block_mask batch(%[[B]]) heads(%c1
// DERIVE-LABEL: func.func @dense
// DERIVE-NOT:   attn.create_block_mask
func.func @documents(%q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>,
                     %v: tensor<?x2x?x32xf32>, %o: tensor<?x2x?x32xf32>,
                     %ids: tensor<?x?xi32>) -> tensor<?x2x?x32xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>)
      outs(%o : tensor<?x2x?x32xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %a = tensor.extract %ids[%b, %qi] : tensor<?x?xi32>
        %c = tensor.extract %ids[%b, %kv] : tensor<?x?xi32>
        %keep = arith.cmpi eq, %a, %c : i32
        attn.yield %keep : i1
      } -> tensor<?x2x?x32xf32>
  return %r : tensor<?x2x?x32xf32>
}

func.func @dense(%q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>,
                 %v: tensor<?x2x?x32xf32>, %o: tensor<?x2x?x32xf32>)
    -> tensor<?x2x?x32xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>)
      outs(%o : tensor<?x2x?x32xf32>) {causal} -> tensor<?x2x?x32xf32>
  return %r : tensor<?x2x?x32xf32>
}

// -----

// A read of a q-side field adds the transposed lists: on the CPU a second
// loop nest over (b, h, kv-block, q-block) into four more buffers [B, H,
// KB(, QB)]; on the GPU a counter per kv-block too, counted warp by warp
// before the barrier, whose last warp compacts the column, and four more
// views of the scratch buffer.
// DERIVE-LABEL: func.func @q_side
// CPU-LABEL: func.func @q_side
// CPU-COUNT-4: memref.alloc
// CPU:         scf.for
// CPU:         %[[QNUM:.*]] = memref.alloc(%{{.*}}, %{{.*}}, %[[KB:.*]]) : memref<?x?x?xi32>
// CPU:         memref.alloc(%{{.*}}, %{{.*}}, %[[KB]], %[[QB:.*]]) : memref<?x?x?x?xi32>
// CPU:         memref.alloc(%{{.*}}, %{{.*}}, %[[KB]]) : memref<?x?x?xi32>
// CPU:         %[[FQIDX:.*]] = memref.alloc(%{{.*}}, %{{.*}}, %[[KB]], %[[QB]]) : memref<?x?x?x?xi32>
// CPU:         scf.for
// CPU:           scf.for
// CPU:             scf.for {{.*}} to %[[KB]]
// CPU:               scf.for {{.*}} to %[[QB]] {{.*}} iter_args
// CPU:         %[[NUM:.*]] = bufferization.to_tensor %[[QNUM]]
// CPU:         %[[IDX:.*]] = bufferization.to_tensor %[[FQIDX]]
// CPU:         %[[R0:.*]] = tensor.cast %[[NUM]]
// CPU:         %[[R1:.*]] = tensor.cast %[[IDX]]
// CPU:         return %[[R0]], %[[R1]]
// GPU-LABEL: func.func @q_side
// GPU:         %[[WS:.*]] = attn.workspace %{{.*}} scratch
// GPU:         %[[COUNTERS:.*]] = attn.workspace %{{.*}} : memref<?xi32>
// GPU:         gpu.launch
// GPU:           memref.store %{{.*}}, %[[WS]]
// GPU:           llvm.inline_asm has_side_effects "atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;"
// GPU:           nvvm.bar.warp.sync
// GPU:           memref.atomic_rmw addi %{{.*}}, %[[WS]]
// GPU:           nvvm.vote.sync ballot
// GPU:           memref.store %{{.*}}, %[[COUNTERS]]
// GPU:           gpu.barrier
// GPU:           llvm.inline_asm has_side_effects "atom.acq_rel.gpu.global.add.u32 $0, [$1], $2;"
// GPU:           nvvm.bar.warp.sync
// GPU:           memref.atomic_rmw addi %{{.*}}, %[[WS]]
// GPU:           nvvm.vote.sync ballot
// GPU:           memref.store %{{.*}}, %[[COUNTERS]]
// GPU-NOT:     gpu.launch
// GPU-COUNT-8: memref.reinterpret_cast %[[WS]]
// GPU-NOT:     gpu.launch
// GPU:         return
func.func @q_side(%n: index) -> (tensor<?x?x?xi32>, tensor<?x?x?x?xi32>) {
  %c1 = arith.constant 1 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 128, kv_block = 64>
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %keep = arith.cmpi uge, %q, %kv : index
        attn.yield %keep : i1
      }
  %num = attn.block_mask_field q_num_blocks of %bm
      : !attn.block_mask<q_block = 128, kv_block = 64> -> tensor<?x?x?xi32>
  %idx = attn.block_mask_field full_q_indices of %bm
      : !attn.block_mask<q_block = 128, kv_block = 64> -> tensor<?x?x?x?xi32>
  return %num, %idx : tensor<?x?x?xi32>, tensor<?x?x?x?xi32>
}

// -----

// The kv-side fields of an attn.make_block_mask are the lists it was given.
// CPU-LABEL: func.func @given
// CPU-SAME:    %[[NUM:[^:]*]]: tensor<1x1x?xi32>, %[[IDX:[^:]*]]: tensor<1x1x?x?xi32>
// CPU:         %[[CAST:.*]] = tensor.cast %[[IDX]] : tensor<1x1x?x?xi32> to tensor<?x?x?x?xi32>
// CPU:         return %[[CAST]]
func.func @given(%num: tensor<1x1x?xi32>, %idx: tensor<1x1x?x?xi32>) -> tensor<?x?x?x?xi32> {
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      : !attn.block_mask<q_block = 128, kv_block = 128>
  %i = attn.block_mask_field kv_indices of %bm : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?x?xi32>
  return %i : tensor<?x?x?x?xi32>
}

// -----

// Of a causal op, the derived block mask keeps kv <= q as well: blocks
// above the diagonal are not listed.
// DERIVE-LABEL: func.func @causal_prefix
// DERIVE:       attn.create_block_mask
// DERIVE:       ^bb0(%{{.*}}: index, %{{.*}}: index, %[[Q:.*]]: index, %[[KV:.*]]: index):
// DERIVE:         %[[PREFIX:.*]] = arith.cmpi ule, %[[KV]], %{{.*}} : index
// DERIVE:         %[[BELOW:.*]] = arith.cmpi uge, %[[Q]], %[[KV]] : index
// DERIVE:         %[[KEEP:.*]] = arith.andi %[[PREFIX]], %[[BELOW]] : i1
// DERIVE:         attn.yield %[[KEEP]] : i1
// DERIVE:       attn.attention {{.*}} block_mask
func.func @causal_prefix(%q: tensor<?x2x?x32xf32>, %k: tensor<?x2x?x32xf32>,
                         %v: tensor<?x2x?x32xf32>, %o: tensor<?x2x?x32xf32>)
    -> tensor<?x2x?x32xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>, tensor<?x2x?x32xf32>)
      outs(%o : tensor<?x2x?x32xf32>) {causal}
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c8 = arith.constant 8 : index
        %keep = arith.cmpi ule, %kv, %c8 : index
        attn.yield %keep : i1
      } -> tensor<?x2x?x32xf32>
  return %r : tensor<?x2x?x32xf32>
}

// -----

// Two block masks in one function: the second's words in the scratch buffer
// start where the first's end.
// GPU-LABEL: func.func @two_masks
// GPU:         attn.workspace %[[END:[0-9]+]] scratch
// GPU:         %{{.*}} = arith.addi %[[END]], %{{.*}} : index
// GPU:         attn.workspace %{{.*}} scratch
func.func @two_masks(%n: index) -> (tensor<?x?x?xi32>, tensor<?x?x?xi32>) {
  %c1 = arith.constant 1 : index
  %a = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 128, kv_block = 64>
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %keep = arith.cmpi uge, %q, %kv : index
        attn.yield %keep : i1
      }
  %z = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 128, kv_block = 64>
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %keep = arith.cmpi ule, %q, %kv : index
        attn.yield %keep : i1
      }
  %na = attn.block_mask_field kv_num_blocks of %a
      : !attn.block_mask<q_block = 128, kv_block = 64> -> tensor<?x?x?xi32>
  %nz = attn.block_mask_field kv_num_blocks of %z
      : !attn.block_mask<q_block = 128, kv_block = 64> -> tensor<?x?x?xi32>
  return %na, %nz : tensor<?x?x?xi32>, tensor<?x?x?xi32>
}
