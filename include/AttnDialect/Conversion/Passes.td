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
    and the tile sizes; docs/Performance.md has the measurements behind it.
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

#endif // ATTN_CONVERSION_PASSES_TD
