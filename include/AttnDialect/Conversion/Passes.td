//===- Passes.td - attn ops to GPU kernels -----------------*- tablegen -*-===//

#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def SoftmaxToGpu : Pass<"attn-softmax-to-gpu"> {
  let summary = "attn.softmax of [rows, N] to a GPU kernel that reads each "
                "element once";
  let description = [{
    Replaces each `attn.softmax` over a [rows, N] tensor (N any length,
    dynamic sizes included) with one `gpu.launch` on the op's buffers
    (`bufferization.to_buffer` / `to_tensor`, so it runs before
    bufferization). A block copies a tile of its row into dynamic shared
    memory with `cp.async` (16-byte copies, `elements-per-thread` elements
    per thread: no registers are held while the copies are in flight, so
    many blocks fit on an SM), committed in four groups that its first
    pass reduces one at a time as they land, and writes it from there.
    Its threads are chosen from N at launch: enough for the row, in
    whole warps, up to `threads`; short rows use fewer vectors per thread.
    The strategy follows from the shape:

    - a row that fits one tile is one block: read once, reduced (one online
      max/sum pass, then a block reduction of the (max, sum) pairs: warp
      shuffles, the warps' pairs in 256 bytes of workgroup memory, one
      barrier) and written;
    - a longer row is split across up to `attn.multiprocessor_count` blocks
      of `split-threads` with `split-vectors` vectors per thread (tiles
      evened out over the row; or more, smaller tiles where an SM of
      `shared-memory-per-sm` then holds one more block and over 10% more of
      the rows), each holding a tile of it: each publishes its (max, sum)
      in an `attn.workspace`, waits for its row's other blocks, merges
      their partials and writes its tile, so the row is still read once
      and a few long rows keep the whole GPU busy. A row's splits are
      consecutive blocks, which relies on GPUs starting blocks in index
      order (CUDA does not promise it; a wait far longer than any real one
      traps rather than hangs). The last block of a row to leave zeroes the
      row's words, leaving the workspace zeroed;
    - a row longer than that many tiles gives each block a slice of several
      tiles, swept twice from global memory (an online max/sum, then the
      writes), the partials merged as above.

    Vectors are aligned to 16 bytes of the buffer's address (tiles to a
    128-byte line where the row's tiles have room), so a row may start
    anywhere (odd N): a vector that straddles a row's end is copied element
    by element (staged as -inf outside the row) and written element by
    element; a buffer that is not 16-byte aligned is read and written by
    elements. A warp whose vectors all lie in the row (a `nvvm.vote.sync`)
    skips every per-vector check. The launch's first wave of split-row
    blocks starts in three steps (`first-wave-stagger`), so that some of it
    copies while the rest exchanges. exp(x - max) is exp2((x - max) *
    log2(e)); -inf entries give 0 and rows that are all -inf give 0. Empty
    rows (N = 0) launch blocks that touch nothing, no rows an empty grid.

    [docs/Softmax.md](../Softmax.md) describes the design: when rows are
    split, the workspace's layout and protocol, the start-order assumption
    and the tile sizes.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"512",
           "most threads per block for a row in one block (a multiple of "
           "32, at most 1024)">,
    Option<"splitThreads", "split-threads", "int64_t", /*default=*/"256",
           "threads per block for rows split across blocks">,
    Option<"elementsPerThread", "elements-per-thread", "int64_t",
           /*default=*/"64",
           "elements each thread copies into the block's tile in shared "
           "memory, in 16-byte vectors (a multiple of 4 for f32, 8 for "
           "f16/bf16): 16 vectors f32, 8 f16, as a thread's registers hold "
           "its vectors widened to f32">,
    Option<"splitVectors", "split-vectors", "int64_t", /*default=*/"16",
           "16-byte vectors each thread copies for a row split across "
           "blocks (16: 64 KiB tiles with 256 threads, for every element "
           "type: fewer, fuller blocks wait less for each other per byte)">,
    Option<"sharedMemoryPerSm", "shared-memory-per-sm", "int64_t",
           /*default=*/"233472",
           "bytes of shared memory an SM gives its blocks (228 KiB on sm_90, "
           "164 KiB on sm_80): a split row takes smaller tiles where an SM "
           "then holds one more of its blocks and over 10% more of the rows">,
    Option<"firstWaveStagger", "first-wave-stagger", "int64_t",
           /*default=*/"4000",
           "nanoseconds by which a split row's blocks in the launch's first "
           "wave (SMs x blocks per SM) start later per row mod 3 (0, 1 or 2 "
           "times this): otherwise the first wave's blocks all reach their "
           "exchange at once and memory idles while they wait (tuned on an "
           "H100; 0 turns it off)">,
    Option<"asyncCopy", "async-copy", "bool", /*default=*/"true",
           "whether the target has cp.async (sm_80 and newer; "
           "attn-lower-to-nvvm sets it from the chip): the kernel stages its "
           "tiles with it, so without it each attn.softmax is an error">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::attn::AttnDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def ChooseKernel : Pass<"attn-choose-kernel"> {
  let summary = "record on each attn.attention the GPU kernel that computes "
                "it, with its tiles";
  let description = [{
    Sets each `attn.attention`'s `kernel` attribute (an `#attn.kernel`,
    outside GPU kernels) to the kernel `chip` runs it on and the tiles that
    fit it: the one place the GPU pipeline decides which kernel runs. The
    lowerings follow it: `attn-attention-to-mma` builds the tensor-core
    kinds, `attn-tile-attention` and `attn-decompose-attention` the SIMT
    one.

    `strategy` picks the kind:
    - `auto` (the default): `wgmma_ws` on sm_90a for f16/bf16 head dims of
      16 (causal ops), 32, 64, 128 and 256; `mma_sync` for other f16/bf16
      ops with head dims that are multiples of 16 on sm_80 and newer; `simt` for the rest (f32,
      which tf32 would not compute to its tolerance; head dims of 8 mod
      16; older chips).
    - `simt`, `mma-sync`, `wgmma` and `wgmma-ws` put every op on that kind,
      or fail naming the op and why it cannot run there.

    Tiles: FlashAttention-2's shapes for mma.sync (128 rows in 4 warps of
    two 16-row bands where the registers hold them, kv-tiles of 64 or 32 by
    head dim), FlashAttention-3's for wgmma (two warpgroups of 64 rows,
    kv-tiles of 128, or 64 where regions take registers or D = 256), the
    largest that fit the chip's shared memory for SIMT. The tensor-core
    tiles divide the op's block-mask blocks; under `auto`, blocks of fewer
    than 64 rows take mma.sync. `q-tile`, `kv-tile`, `bands`, `warps` and
    `stages` fix what they set (0: chosen); under `auto`, values wgmma
    cannot take (bands of 32 rows, one stage) keep mma.sync.

    An op that already has a `kernel` keeps it if the chip can run it
    (wgmma needs sm_90a, mma.sync sm_80, and the tiles must fit the chip's
    shared memory per block); otherwise the pass fails naming the op.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"",
           "the chip the kernels run on (sm_75 ... sm_90a)">,
    Option<"strategy", "strategy", "::mlir::attn::KernelStrategy",
           /*default=*/"::mlir::attn::KernelStrategy::Auto",
           "which kernel: auto takes the fastest the chip has for each op; "
           "simt, mma-sync, wgmma and wgmma-ws serve every op or fail "
           "naming why",
           [{::mlir::attn::kernelStrategyValues()}]>,
    Option<"qTile", "q-tile", "int64_t", /*default=*/"0",
           "query rows per block; tensor cores: a multiple of 16, one warp "
           "per 16-row band (0: chosen per op)">,
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"0",
           "keys per kv step; tensor cores: a multiple of 16 (0: chosen per "
           "op)">,
    Option<"bands", "bands", "int64_t", /*default=*/"0",
           "tensor cores: bands of 16 rows per warp, 1 or 2; a warp's K and "
           "V fragments feed each band (0: chosen per head dim and masks)">,
    Option<"warps", "warps", "int64_t", /*default=*/"0",
           "tensor cores: warps per block, up to 32; with q-tile given it "
           "sets the bands (q-tile / (16 warps)), else the q-tile (16 x "
           "bands x warps) (0: q-tile / (16 x bands))">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "tensor cores: K/V buffers in shared memory, 1 or 2: with 2, the "
           "copy of K_j+1 goes out before the other warps finish with K_j; "
           "with 1, after a barrier, in less shared memory (0: 2)">
  ];
}

def AttentionGradToMma : Pass<"attn-attention-grad-to-mma"> {
  let summary = "build the gpu.launches of each attention_grad on mma.sync "
                "or wgmma tensor cores";
  let description = [{
    Replaces each `attn.attention_grad` whose `kernel` (set by
    `attn-choose-kernel`) is `mma_sync` or `wgmma` by three `gpu.launch`es
    on the op's
    buffers, FlashAttention-2's backward split so that every gradient is
    summed in one block's registers, in a fixed order, with no atomics: two
    runs give the same bits.

    - The dQ kernel, grid (ceil(M / q-tile), Hq, B), q-tile / 16 warps of
      16 rows each: Delta = rowsum(dO * O) of the block's rows (two threads
      a row), kept in shared memory and left in B * Hq * M words of the
      zeroed `attn.workspace` for the other kernel; then for each kv-tile (up
      to the diagonal when causal) S = Q K^T and dP = dO V^T, P =
      exp(score_mod(scale S) - L) and dS = P (dP - Delta) d score_mod / ds
      at each register's (b, h, q, kv), and dQ += dS K.
    - The dK/dV kernel, grid (ceil(N / kv-tile), Hkv, B), kv-tile / 16
      warps of 16 keys: for each query head of the kv head (GQA) and each
      q-tile from the diagonal on when causal, S^T = K Q^T and
      dP^T = V dO^T, P^T and dS^T as above with L and Delta of each
      column (copied into shared memory with the step's tiles), dV += P^T
      dO and dK += dS^T Q.
    - A launch that zeroes Delta's words again, as the workspace must be
      left.

    Head dims over 128 (mma_sync) split a tile's gradients into column
    slices of at most 128 that are whole k16 steps, a block each: the
    grids' x extents are the tiles times the slices (dQ's split d, dK and
    dV's split d and dv alike). Each slice computes S and dP over the whole
    head dims and accumulates its own columns; the first stores Delta.

    The streamed tiles (K and V, or Q and dO) land through 16-byte
    `cp.async` in `stages` buffers (two: the next tile's copy overlaps this
    step), padded rows, `ldmatrix` operands (transposed for the
    accumulations) and `nvvm.mma.sync` m16n8k16 with f32 accumulators; P
    and dS become A operands in registers. A warp's own Q and dO (K and V)
    fragments stay in registers when D + Dv <= 128. With `wgmma` (sm_90a),
    each block is one or two warpgroups of 64 rows; every tile lies in
    wgmma's swizzle layout, S and dP (or their transposes) are wgmmas of
    two shared-memory descriptors, and the accumulations take P and dS
    from the registers and the streamed tile as an MN-major operand. Steps that need no mask
    arithmetic (no mask_mod, inside the problem, wholly below the causal
    diagonal) skip it. dQ and dK are scaled once at the end; rows with
    L = -inf get zero gradients.

    With a mask_mod (and `block-masks`), the op's block mask in blocks of
    its tiles is built first (`attn.create_block_mask` of the mask_mod and
    causal, read through `attn.block_mask_field`, for
    `attn-block-masks-to-gpu` to build on the GPU): the dQ blocks step over
    the kv-blocks their q-block lists, the dK/dV blocks over the q-blocks
    their kv-block lists (the transposed lists), full blocks first and
    without the mask arithmetic; unlisted blocks are never visited.
  }];
  let options = [
    Option<"boundsChecks", "bounds-checks", "bool", /*default=*/"false",
           "guard the regions' reads of captured tensors and their integer "
           "divisions; a violation prints what and where and traps">,
    Option<"blockMasks", "block-masks", "bool", /*default=*/"true",
           "skip the blocks a mask_mod removes, by the block mask of its "
           "tiles">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def AttentionToMma : Pass<"attn-attention-to-mma"> {
  let summary = "build the gpu.launch of each attention on a tensor-core "
                "kernel";
  let description = [{
    Replaces each `attn.attention` whose `kernel` (set by
    `attn-choose-kernel`) is `mma_sync`, `wgmma` or `wgmma_ws` by one
    `gpu.launch` on the op's buffers (`bufferization.to_buffer` /
    `to_tensor`, so it runs before bufferization) that computes it with
    the kernel's tiles; other ops are left for the SIMT lowering. The
    `mma_sync` kernel is the FlashAttention-2 forward on `mma.sync`
    tensor cores.

    A block computes `q-tile` query rows of one (batch, head) over every
    kv-block; each of its q-tile / 16 warps owns 16 rows. The grid is
    (ceil(M / q-tile), Hq, B), computed at launch, so one kernel serves
    every B, H, M and N. Per block:

    - Q, then each K and V tile, is copied into shared memory with 16-byte
      `cp.async` (`nvgpu.device_async_copy`; rows past M or N are
      zero-filled). The copy of V_j overlaps S_j = Q K_j^T, and that of
      K_j+1 the softmax and P V_j: with two stages (the default) K and V
      are double-buffered, with one they take half the shared memory and
      one more barrier. Shared rows are padded by 16 bytes, so the copies
      and `ldmatrix` touch every bank once.
    - S = Q K^T and O += P V are `nvvm.mma.sync` m16n8k16 with f32
      accumulators, their operands read by `nvgpu.ldmatrix` (V transposed).
      Each warp's Q fragments stay in registers when D <= 128.
    - The online softmax runs on the accumulator fragments: row max and sum
      by quad shuffles (`gpu.shuffle xor` 1 and 2), exp2 with the scale
      folded in, O rescaled by the correction factor at every step. P is
      converted from S in registers as PV's A operand.
    - `score_mod`, `mask_mod` (with captured tensors), `causal` and the kv
      tail are applied per register at its whole-problem (b, h, q, kv);
      positions past M or N are clamped before a region sees them. Kv-tiles
      that need no mask arithmetic (no mask_mod, inside N, and wholly below
      the causal diagonal) skip it; causal blocks stop at the diagonal and
      the grid runs the longest q-tiles first.
    - GQA reads kv head h / (Hq / Hkv) without copying K or V.
    - The epilogue divides by the row sum (0 for a fully masked row, whose
      logsumexp is -inf), rounds to the output type, stages the warp's rows
      in shared memory and stores them in 16-byte vectors; the logsumexp
      output, when present, is natural-log.

    The `wgmma` kernel (for head dims D and Dv of 16, 32, 64, 128 or 256)
    runs both contractions on Hopper's `wgmma.mma_async` instead: two
    warpgroups of 64 rows per block, Q, K and V in shared memory in the
    128-byte swizzle layout (64- and 32-byte at D = 32 and 16), S from two
    shared-memory descriptors, P V with P from registers, and the softmax
    of S_j overlapping the P_j-1 V_j-1 wgmma (FlashAttention-3's
    intra-warpgroup pipelining).

    `wgmma_ws` (auto's choice on sm_90a) is persistent and
    warp-specialized, as FlashAttention-3's: min(tiles, SMs) blocks
    (`attn.multiprocessor_count`) of 384 threads take q-tiles from a
    counter in a zeroed two-word `attn.workspace` (the last block out
    zeroes it again). The producer warpgroup's first thread copies Q (two
    buffers, so the next tile's Q lands during this one; one at D = 256,
    where two leave no room for K and V), K and V with
    TMA, from `attn.tensor_map`s of the three made on the host, each
    buffer's mbarrier expecting the copies' bytes; the two consumer
    warpgroups wait on those barriers instead of block barriers, release
    each buffer once their wgmmas have read it, and store O from
    registers. `setmaxnreg` moves registers from the producer to the
    consumers (the kernel's register split, 40 and 232 by default).

    [docs/GPU.md](../GPU.md) describes the kernels.
  }];
  let options = [
    Option<"boundsChecks", "bounds-checks", "bool", /*default=*/"false",
           "guard the regions' reads of captured tensors and their integer "
           "divisions; a violation prints what and where and traps">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def BlockMasksToGpu : Pass<"attn-block-masks-to-gpu", "::mlir::ModuleOp"> {
  let summary = "compute each attn.create_block_mask's block lists on the GPU";
  let description = [{
    `attn-lower-block-masks` on the GPU: the same lists, the same
    `attn.make_block_mask` and field reads, and the same decisions of
    boxes by the mask_mod's bounds (`bound-blocks`), built by a kernel.

    One kernel on the runtime's scratch buffer
    (`attn.workspace ... scratch`, which needs no clearing afterwards;
    a function's block masks follow one another in it). A warp decides
    each (kv-block, q-block, b * h), 32 of a line's kv-blocks in a
    block of threads (one, for a mask_mod of more than two captured
    reads, which spills in 64 registers). With bounds, the warp first
    bounds the whole block, each captured read that depends on the rows
    (or the columns) alone split across its 32 lanes and combined with
    shuffles; where that cannot tell, each lane evaluates the mask_mod
    at one position of a grid over the block (its corners included),
    and the block is partial if those keep and drop; otherwise it
    bounds 64 boxes of the block, a lane's each, 32 at a time (reads
    shared by the lanes of a box row or column; the second 32 only if
    the first do not already show the block partial), and scans a box
    the bounds leave open only when the other boxes of its warp do not
    already keep and drop (the block is then partial whatever the box
    holds) or when its bounds gave up. Without bounds, the lanes scan
    the block row by row, each its columns. Lane 0 writes whether the
    block keeps and drops (warp votes), and for the q side counts the
    block in its (b, h, kv-block) column in a zeroed `attn.workspace`
    (an acquire-release atomic); the warp that counts a column's last
    block compacts it. After a barrier, a line that spans several
    blocks of threads has each count its kv-blocks in once, and the
    block that completes the line compacts it (at once where one block
    holds the line) into the lists with ballots, fills the rest with
    zeros and resets the counter: one launch, no clearing afterwards.
  }];
  let options = [
    Option<"boundsChecks", "bounds-checks", "bool", /*default=*/"false",
           "trap on the mask_mod's out-of-range captured reads and integer "
           "divisions, as attn-decompose-attention does">,
    Option<"boundBlocks", "bound-blocks", "bool", /*default=*/"true",
           "decide blocks by interval bounds of the mask_mod where they "
           "tell, before evaluating it position by position">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // ATTN_CONVERSION_PASSES_TD
