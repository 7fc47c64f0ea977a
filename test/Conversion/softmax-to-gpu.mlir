// RUN: attn-opt %s --attn-softmax-to-gpu --split-input-file --verify-diagnostics | FileCheck %s
// RUN: attn-opt %s --attn-softmax-to-gpu="threads=256 split-threads=128 elements-per-thread=32 split-vectors=8" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=OPTIONS
// RUN: not attn-opt %s --attn-softmax-to-gpu="threads=48" --split-input-file 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not attn-opt %s --attn-softmax-to-gpu="elements-per-thread=1024" --split-input-file 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not attn-opt %s --attn-softmax-to-gpu="split-vectors=64" --split-input-file 2>&1 | FileCheck %s --check-prefix=SPLIT-TILE
// RUN: not attn-opt %s --attn-softmax-to-gpu="shared-memory-per-sm=1000" --split-input-file 2>&1 | FileCheck %s --check-prefix=SMEM-OPTION
// RUN: attn-opt %s --attn-softmax-to-gpu="shared-memory-per-sm=167936" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=SM80
// RUN: attn-opt %s --attn-softmax-to-gpu=first-wave-stagger=0 --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=NO-STAGGER
// RUN: not attn-opt %s --attn-softmax-to-gpu=first-wave-stagger=-1 --split-input-file 2>&1 | FileCheck %s --check-prefix=STAGGER-OPTION

// One gpu.launch on the op's buffers. Host side: a row spans N + 7 f16
// elements of 16-byte vectors when N is not a multiple of 8; a block has
// enough threads for a row (64 elements each), in whole warps, up to 512,
// else split-threads (256) for a row split across blocks, with tiles of
// split-vectors (16) vectors per thread (32768 f16) evened out over the
// row's tiles, or smaller tiles where an SM holds more of the rows so; a
// row is split across up to one block per SM
// (attn.multiprocessor_count); the blocks exchange their (max, sum) in an
// attn.workspace of 2 rows + 2 rows x splits words; the tile is dynamic
// shared memory.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<?x?xf16>, %[[Y:.*]]: tensor<?x?xf16>)
// CHECK-DAG: %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<?x?xf16> to memref<?x?xf16>
// CHECK-DAG: %[[OUT:.*]] = bufferization.to_buffer %[[Y]] : tensor<?x?xf16> to memref<?x?xf16>
// CHECK: %[[ROWS:.*]] = memref.dim %[[IN]], %c0
// CHECK: %[[N:.*]] = memref.dim %[[IN]], %c1
// CHECK: arith.divui %[[N]], %c8
// CHECK: %[[SPAN:.*]] = arith.addi %[[N]], %{{.*}} : index
// CHECK: arith.ceildivui %[[SPAN]], %c2048
// CHECK: arith.divui %{{.*}}, %c513
// CHECK: %[[SPLIT:.*]] = arith.minui %{{.*}}, %c1
// CHECK: %[[SPLITTING:.*]] = arith.cmpi ne, %[[SPLIT]], %c0
// CHECK: %[[T:.*]] = arith.select %[[SPLITTING]], %c256, %{{.*}} : index
// Counts stay at least 1 (an empty row divides by none of them).
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[SPAN]], %c32768
// CHECK: %[[FEW:.*]] = arith.maxui %[[TILES]], %[[ONE:.*]] : index
// Or tiles of 13 vectors (26624 f16), the most with which an SM of 228 KiB
// holds one more block (each block's tile plus 2 KiB), where that holds
// over 10% more of the rows per SM, and within one tile per SM.
// CHECK: %[[SMALLER:.*]] = arith.ceildivui %[[SPAN]], %c26624
// CHECK: %[[MORE:.*]] = arith.maxui %[[SMALLER]], %[[ONE]] : index
// CHECK: arith.muli %{{.*}}, %c4096
// CHECK: arith.addi %{{.*}}, %c2048
// CHECK: arith.divui %c233472, %{{.*}}
// CHECK: arith.muli %{{.*}}, %[[FEW]]
// CHECK: arith.muli %{{.*}}, %c10
// CHECK: arith.divui %c233472
// CHECK: arith.muli %{{.*}}, %[[MORE]]
// CHECK: arith.muli %{{.*}}, %c11
// CHECK: %[[BETTER:.*]] = arith.minui
// CHECK: attn.multiprocessor_count
// CHECK: %[[ROOM:.*]] = arith.minui
// CHECK: %[[DENSER:.*]] = arith.muli %[[BETTER]], %[[ROOM]]
// CHECK: %[[DENSE:.*]] = arith.cmpi ne, %[[DENSER]], %c0
// CHECK: %[[EVEN:.*]] = arith.select %[[DENSE]], %[[MORE]], %[[FEW]] : index
// CHECK: arith.muli %[[EVEN]], %c2048
// CHECK: %[[USED:.*]] = arith.maxui %{{.*}}, %[[ONE]] : index
// CHECK: %[[SMS:.*]] = attn.multiprocessor_count : index
// CHECK: %[[FEWER:.*]] = arith.minui %{{.*}}, %[[SMS]] : index
// CHECK: %[[SPLITS:.*]] = arith.maxui %[[FEWER]], %[[ONE]] : index
// CHECK: %[[SLICE:.*]] = arith.ceildivui %{{.*}}, %[[SPLITS]] : index
// The launch's first wave of split-row blocks: SMs x blocks per SM (the
// used vectors' tile plus 2 KiB in 228 KiB).
// CHECK: arith.muli %[[USED]], %c4096
// CHECK: %[[PER_SM:.*]] = arith.divui %c233472
// CHECK: %[[SMS2:.*]] = attn.multiprocessor_count
// CHECK: %[[WAVE:.*]] = arith.muli %[[SMS2]], %[[PER_SM]]
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[ROWS]], %[[SPLITS]] : index
// CHECK: %[[WS:.*]] = attn.workspace %{{.*}} : memref<?xi32>
// CHECK: %[[BYTES:.*]] = arith.index_cast %{{.*}} : index to i32
// The block reduction's warp pairs take 256 bytes of static shared memory
// (the dynamic tile after them stays on a 128-byte line).
// CHECK: gpu.launch blocks(%[[BID:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], {{.*}} threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[T]], {{.*}} dynamic_shared_memory_size %[[BYTES]] workgroup(%[[SCRATCH:.*]] : memref<64xf32, #gpu.address_space<workgroup>>) {
// CHECK:   %[[FLAT_IN:.*]] = memref.collapse_shape %[[IN]] {{\[}}[0, 1]] : memref<?x?xf16> into memref<?xf16>
// CHECK:   %[[FLAT_OUT:.*]] = memref.collapse_shape %[[OUT]]
// CHECK:   %[[SHARED:.*]] = gpu.dynamic_shared_memory
// CHECK:   %[[STAGE:.*]] = memref.view %[[SHARED]]
// A row in one block: block i holds row i.
// CHECK:   %[[ONE:.*]] = arith.cmpi eq, %[[SPLIT]], %c0
// CHECK:   scf.if %[[ONE]] {
// CHECK:     arith.muli %[[BID]], %[[N]]
// The input's alignment decides between vectors and elements; tiles start
// on a 128-byte line (64 f16) where the row's tiles have room.
// CHECK:     memref.extract_aligned_pointer_as_index %[[FLAT_IN]]
// CHECK:     %[[HEAD16:.*]] = arith.select %{{.*}}, %{{.*}}, %c0
// CHECK:     memref.extract_aligned_pointer_as_index %[[FLAT_IN]]
// CHECK:     %[[LINEHEAD:.*]] = arith.remui %{{.*}}, %c64 : index
// CHECK:     %[[ROOM:.*]] = arith.cmpi ule
// CHECK:     %[[USE:.*]] = arith.andi %{{.*}}, %[[ROOM]]
// CHECK:     arith.select %[[USE]], %[[LINEHEAD]], %[[HEAD16]]
// A warp whose vectors all lie in the row skips per-vector checks: the
// tile's 16-byte copies go to shared memory with cp.async, committed in
// four groups (8 vectors of f16 per thread: two each).
// CHECK:     nvvm.vote.sync all
// CHECK:     nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
// CHECK-NOT: nvvm.cp.async.wait.group
// CHECK-COUNT-4: nvvm.cp.async.commit.group
// CHECK-NOT: nvvm.cp.async.wait.group
// The warps at a row's ends copy in a loop (small code), vectors that
// straddle an end element by element, and wait for all of it.
// CHECK:     scf.for
// CHECK:       nvvm.cp.async.shared.global
// CHECK:       memref.load %[[FLAT_IN]]
// CHECK:       memref.store %{{.*}}, %[[STAGE]]
// CHECK:     nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// The block's (max, sum) from the staged tile, each group reduced as soon
// as it has landed, the later ones still in flight.
// CHECK:     nvvm.cp.async.wait.group 3
// CHECK:     vector.load %[[STAGE]]
// CHECK:     math.exp2
// CHECK:     nvvm.cp.async.wait.group 2
// CHECK:     nvvm.cp.async.wait.group 1
// CHECK:     nvvm.cp.async.wait.group 0
// One block reduction of (max, sum): a warp's butterfly, lane 0's pair in
// the scratch, one barrier, every thread merging the warps' pairs.
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK:     memref.store %{{.*}}, %[[SCRATCH]]
// CHECK:     memref.store %{{.*}}, %[[SCRATCH]]
// CHECK:     gpu.barrier
// CHECK:     scf.for
// CHECK:       memref.load %[[SCRATCH]]
// CHECK:       memref.load %[[SCRATCH]]
// CHECK-NOT: gpu.all_reduce
// The probabilities are written from shared memory, 16 bytes at a time;
// a row in one block needs no workspace.
// CHECK:     vector.load %[[STAGE]]
// CHECK:     vector.store %{{.*}}, %[[FLAT_OUT]][%{{.*}}] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// CHECK-NOT: red.release
// CHECK:   } else {
// Split rows: a row's splits are consecutive blocks. Those in the first
// wave start 0, 4 or 8 us late by row mod 3 (1 us naps).
// CHECK:     scf.if %{{.*}} {
// CHECK:       %[[ROW:.*]] = arith.divui %[[BID]], %[[SPLITS]]
// CHECK:       %[[SPLIT_IDX:.*]] = arith.remui %[[BID]], %[[SPLITS]]
// CHECK:       %[[STEP:.*]] = arith.remui %[[ROW]], %c3
// CHECK:       %[[LATE_ROW:.*]] = arith.cmpi ne, %[[STEP]], %c0
// CHECK:       %[[ITEM:.*]] = arith.addi %{{.*}}, %[[SPLIT_IDX]]
// CHECK:       %[[IN_WAVE:.*]] = arith.cmpi ult, %[[ITEM]], %[[WAVE]]
// CHECK:       %[[LATE:.*]] = arith.andi %[[IN_WAVE]], %[[LATE_ROW]]
// CHECK:       scf.if %[[LATE]] {
// CHECK:         %[[NAPS:.*]] = arith.muli %[[STEP]], %c4
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[NAPS]]
// CHECK-NEXT:      arith.constant 1000 : i32
// CHECK-NEXT:      nvvm.nanosleep
// CHECK:       nvvm.vote.sync all
// CHECK:       nvvm.cp.async.shared.global
// The warps at the row's ends copy their whole vectors too, each behind a
// check, in the same four groups, and stage -inf for the others with one
// 16-byte store each (no loop); an input that is not 16-byte aligned is
// staged in a loop after that; then they load the row's elements of the
// vectors that straddle its ends, by the thread that holds each (32-bit
// owner arithmetic), with no branch per element; and do not wait: the
// first pass waits group by group. (The branches are the warps with every
// vector in the row, those with the tile's used vectors in it, then
// these.)
// CHECK:       } else {
// CHECK:       } else {
// CHECK:         scf.if
// CHECK-NEXT:      arith.constant 2
// CHECK-NOT:     scf.for
// CHECK:           nvvm.cp.async.shared.global
// CHECK:         } else {
// CHECK-NEXT:      arith.constant dense<0xFC00> : vector<8xf16>
// CHECK-NEXT:      vector.store %{{.*}}, %[[STAGE]]
// CHECK-NOT:     scf.for
// CHECK-COUNT-4: nvvm.cp.async.commit.group
// CHECK-NOT:     nvvm.cp.async.wait.group
// CHECK:         arith.xori
// CHECK-NEXT:    scf.if
// CHECK:           scf.for
// CHECK:         arith.divui %{{.*}}, %c8_i32{{.*}} : i32
// CHECK:         arith.remui %{{.*}}, %{{.*}} : i32
// CHECK:         memref.load %[[FLAT_IN]]
// CHECK-NEXT:    arith.select
// CHECK-NOT:     nvvm.cp.async.wait.group
// CHECK:       }
// CHECK:       nvvm.cp.async.wait.group 3
// CHECK:       nvvm.cp.async.wait.group 0
// CHECK:       memref.store %{{.*}}, %[[SCRATCH]]
// CHECK:       gpu.barrier
// CHECK:       memref.load %[[SCRATCH]]
// Each publishes its partial, releases it, waits for the row's other
// blocks (trapping after far longer than any real wait); each warp merges
// theirs (lane j the partials of splits j, j + 32, ..., then a butterfly of
// shuffles, no block-wide reduction); after a barrier the block counts
// itself out.
// CHECK:       memref.store %{{.*}}, %[[WS]]
// CHECK:       llvm.inline_asm has_side_effects "red.release.gpu.global.add.u32 [$0], 1;"
// CHECK:       scf.while
// CHECK:         llvm.load %{{.*}} atomic syncscope("device") acquire
// CHECK:         llvm.intr.trap
// CHECK:         nvvm.nanosleep
// CHECK:       gpu.barrier
// CHECK:       %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK:       scf.for %{{.*}} = %[[LANE]] to %[[SPLITS]] step %c32
// CHECK:         memref.load %[[WS]]
// CHECK-COUNT-5: gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NOT:   gpu.all_reduce
// CHECK:       gpu.barrier
// CHECK:       arith.cmpi eq, %[[TID]]
// CHECK:       llvm.atomicrmw add
// Then it writes its tile; the last block of the row to leave zeroes the
// row's words.
// CHECK:       vector.load %[[STAGE]]
// CHECK:       vector.store %{{.*}}, %[[FLAT_OUT]]
// CHECK:       scf.for
// CHECK:         memref.store %{{.*}}, %[[WS]]
// Slices of several tiles (rows longer than one tile per SM) sweep twice.
// CHECK:     } else {
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:           vector.load %[[FLAT_IN]]
// CHECK:       llvm.inline_asm has_side_effects "red.release.gpu.global.add.u32 [$0], 1;"
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]

// OPTIONS-LABEL: func.func @softmax
// OPTIONS: arith.ceildivui %{{.*}}, %c1024
// OPTIONS: arith.divui %{{.*}}, %c257
// OPTIONS: arith.minui %{{.*}}, %c1
// OPTIONS: arith.select %{{.*}}, %c128, %{{.*}} : index
// OPTIONS: arith.ceildivui %{{.*}}, %c8192

// SM80-LABEL: func.func @softmax
// SM80: arith.divui %c167936

// THREADS: attn-softmax-to-gpu: threads and split-threads must be multiples of 32 in [32, 1024], got 48
// TILE: attn-softmax-to-gpu: elements-per-thread must be at least 1 and a block's f32 tile (threads x elements-per-thread x 4 bytes) at most 163 KiB, got 1024 x 512
// SMEM-OPTION: attn-softmax-to-gpu: shared-memory-per-sm must be at least 16 KiB, got 1000
// STAGGER-OPTION: attn-softmax-to-gpu: first-wave-stagger must be in [0, 100000] ns, got -1
// Without the stagger, no block naps before its copies (the only
// nanosleep is the exchange's poll).
// NO-STAGGER-LABEL: func.func @softmax
// NO-STAGGER-NOT: nvvm.nanosleep %c1000_i32
// NO-STAGGER-NOT: arith.remui %{{.*}}, %c3 : index
// SPLIT-TILE: attn-softmax-to-gpu: split-vectors must be at least 1 and a split row's tile (split-threads x split-vectors x 16 bytes) at most 163 KiB, got 64 x 256
func.func @softmax(%x: tensor<?x?xf16>, %y: tensor<?x?xf16>) -> tensor<?x?xf16> {
  %r = attn.softmax ins(%x : tensor<?x?xf16>) outs(%y : tensor<?x?xf16>) -> tensor<?x?xf16>
  return %r : tensor<?x?xf16>
}

// -----

func.func @rank3(%x: tensor<2x?x?xf32>, %y: tensor<2x?x?xf32>) -> tensor<2x?x?xf32> {
  // expected-error @+1 {{lowers to the GPU for rank 2 ([rows, N]) only, got rank 3}}
  %r = attn.softmax ins(%x : tensor<2x?x?xf32>) outs(%y : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  return %r : tensor<2x?x?xf32>
}
