//===- Passes.td - attn transformation passes --------------*- tablegen -*-===//

#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RecordShapeContract
    : Pass<"attn-record-shape-contract", "::mlir::ModuleOp"> {
  let summary = "record which argument sizes each function's attn ops tie";
  let description = [{
    Attaches `attn.shape_contract` to every `func.func` whose arguments attn
    ops read or write directly: argument names by role (q, k, v, out, lse;
    input and out of a softmax) and the constraints between their sizes
    (equal batch, heads and lengths; Hq a multiple of Hkv; a captured tensor
    indexed by a region's position at least as long as that dimension).
    Runs first in both pipelines, while the attn ops still say what each
    argument is; the CPU runner and the kernel bundle's runtime check actual
    shapes against it before running anything, so mismatched buffers are an
    error naming both arguments, never an out-of-bounds access.
  }];
}

def DecomposeOnlineSoftmax : Pass<"attn-decompose-online-softmax"> {
  let summary = "lower attn.online_softmax to linalg on tensors";
  let description = [{
    Rewrites each `attn.online_softmax` into `linalg.generic` reductions and
    elementwise maps on tensors, in base 2:

    ```
    new_max    = max(max, rowmax(scale * S))
    probs      = exp2((scale * S - new_max) * log2(e))  (0 where S is -inf)
    correction = exp2((max - new_max) * log2(e))        (1 where new_max is -inf)
    new_sum    = sum * correction + rowsum(probs)
    ```

    The difference is taken before the multiplication by log2(e): the row's
    max then gives exactly 1, and the probs summed are the probs returned.
    Folding log2(e) into one fused multiply-add with a rounded
    new_max * log2(e) would save an instruction but lose precision as |S|
    grows (the rounding of that product does not cancel: 2e-3 relative
    error at |S| = 1e5 in f32). Rows whose running max is still -inf (every
    score so far masked) get probs 0 and correction 1, never NaN from
    (-inf) - (-inf).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def TileAttention : Pass<"attn-tile-attention"> {
  let summary = "grid of attention tiles over (batch, head, q-tile)";
  let description = [{
    Tiles every `attn.attention` through its `TilingInterface` into an
    `scf.forall` over (batch, query head, q-tile): each iteration is an
    `attn.attention` on one q-tile of one head, with `offsets` recording
    where the tile sits. With `gpu-mapping`, the loop is marked
    `#gpu.block<z/y/x>` (q-tiles on x) for `attn-map-forall-to-gpu`.

    With `thread-rows=R`, each tile is tiled once more into a nested
    `scf.forall` over groups of R query rows marked `#gpu.thread<x>`: one
    GPU thread per R rows of the q-tile.

    With `shared-memory-per-block=S` (a GPU's limit), `q-tile=0` and
    `kv-tile=0` mean "choose": each op gets the largest of 64x64, 64x32,
    32x32, 32x16, 16x16, 16x8 and 8x8 (q-tile x kv-tile, keeping whichever
    of the two is given) whose block tiles fit in S bytes for its head dims
    and element type. The tile op records its kv-tile as `attn.kv_tile`,
    which `attn-decompose-attention` follows.
  }];
  let options = [
    Option<"qTile", "q-tile", "int64_t", /*default=*/"64",
           "query rows per tile (0: choose, with shared-memory-per-block)">,
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"0",
           "keys per kv step to record on GPU tiles (0: choose, with "
           "shared-memory-per-block)">,
    Option<"sharedMemoryPerBlock", "shared-memory-per-block", "int64_t",
           /*default=*/"0",
           "bytes of shared memory a block may use (0: do not choose tiles)">,
    Option<"gpuMapping", "gpu-mapping", "bool", /*default=*/"false",
           "mark the forall with #gpu.block mapping attributes">,
    Option<"threadRows", "thread-rows", "int64_t", /*default=*/"0",
           "query rows per thread in a nested #gpu.thread forall (0: none)">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DecomposeAttention : Pass<"attn-decompose-attention"> {
  let summary = "attn.attention to a kv-tile loop over attn.online_softmax";
  let description = [{
    Rewrites each `attn.attention` (typically one q-tile, after
    `attn-tile-attention`) into the FlashAttention loop on tensors:

    ```
    for each (b, h) of the op:            (trip count 1 after tiling)
      acc = 0, max = -inf, sum = 0
      for kv0 in [0, N) step kv-tile:      carrying (acc, max, sum)
        S = Q_tile . K_tile^T              (linalg.generic contraction, f32)
        S = score_mod(scale * S, b, h, q, kv); -inf where masked
        P, max, sum, c = attn.online_softmax S, max, sum
        acc = acc * c + P . V_tile          (linalg.generic contraction)
      O = acc / sum (0 for fully masked rows); lse = max + log(sum)
    ```

    `score_mod` and `mask_mod` are inlined with whole-problem indices (the
    op's `offsets` added). An op's `attn.kv_tile` attribute (what
    `attn-tile-attention` chose for a GPU block) overrides `kv-tile`. Causal ops stop the loop at the diagonal and
    split it in two: kv-tiles wholly below the diagonal run without any mask
    arithmetic, only the tiles that cross it compare indices. Without a
    `score_mod` the scale is left to `attn.online_softmax`, which applies
    it with the max. A block mask is not needed for correctness (`mask_mod`
    decides every element) and is not read here.

    With `bounds-checks`, each `tensor.extract` in a region (nested ones
    included) is guarded (an index outside the tensor reads nothing and
    yields 0), and each integer division or remainder is checked for a zero
    divisor and for INT_MIN / -1 (it then divides by 1). Regions run on
    whole tiles, masked positions included, so checks see those too. A failed check is reported: on
    the host by calling `attnReportRegionError(error, region, argument, dim,
    index, size)`, which the CPU runner defines and turns into an error
    naming the argument and the index; in GPU kernels by printing the same
    and trapping, so the launch fails. Regions are only ever evaluated for
    positions inside the problem (q < M, kv < N).
  }];
  let options = [
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"64",
           "keys per step of the kv loop (an op's attn.kv_tile wins)">,
    Option<"boundsChecks", "bounds-checks", "bool", /*default=*/"false",
           "check the regions' captured reads and integer divisions">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DecomposeMergeSplits : Pass<"attn-decompose-merge-splits"> {
  let summary = "attn.merge_splits to linalg";
  let description = [{
    Lowers the merge of split-kv attention to linalg.generic ops on
    tensors, in f32 with exp2/log2:
    1. the row maximum of the splits' logsumexps (a reduction over S);
    2. the sum of exp(lse_s - max) over the splits (a reduction over S);
    3. the merged logsumexp, max + ln(sum), -inf where every split is -inf;
    4. the output, sum_s exp(lse_s - lse) * out_s (a reduction over S), 0
       on rows whose logsumexp is -inf;
    5. a rounding to the output type when it is not f32.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DecomposeSoftmax : Pass<"attn-decompose-softmax"> {
  let summary = "attn.softmax to attn.online_softmax steps";
  let description = [{
    Lowers `attn.softmax` by the row length N:
    - N static and at most `row-tile`: one `attn.online_softmax` over the
      whole row (started from max -inf, sum 0), then probs / sum: the row
      is read once.
    - otherwise (long or dynamic rows): the two-loop online form. The first
      loop folds chunks of `row-tile` elements into the running (max, sum)
      with `attn.online_softmax`; the second writes
      exp2((x - max) * log2(e)) / sum chunk by chunk.
    Rows that are all -inf (sum 0) give 0, not NaN. Inputs of f16/bf16 are
    widened to f32; the result is rounded to the output type.
  }];
  let options = [
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"4096",
           "elements of a row handled at once">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

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
      the rows), each holding a tile of it: each publishes
      its (max, sum) in an `attn.workspace` (a PTX release reduction),
      waits for its row's other blocks (acquiring loads), merges their
      partials and writes its tile, so the row is still read once and a
      few long rows keep the whole GPU busy. A row's splits are
      consecutive blocks: as GPUs start blocks in index order in practice
      (CUDA does not promise it) and a row has at most one block per SM,
      the blocks a block waits for are running or start as earlier rows
      finish (a wait far longer than any real one traps rather than
      hangs). The last block of a row to leave zeroes the
      row's words, leaving the workspace zeroed;
    - a row longer than that many tiles gives each block a slice of several
      tiles, swept twice from global memory (an online max/sum, then the
      writes), the partials merged as above.

    Vectors are aligned to 16 bytes of the buffer's address (tiles to a
    128-byte line where the row's tiles have room: from a 16-byte boundary
    L2 serves half again as many sector reads), so a row may start
    anywhere (odd N): a vector that straddles a row's end is copied
    element by element (staged as -inf outside the row) and written element
    by element; a buffer that is not 16-byte aligned is read and written by
    elements. A warp whose vectors all lie in the row (a `nvvm.vote.sync`)
    skips every per-vector check; the warps at a row's ends check each
    vector: in a split row they copy the whole ones and stage -inf for the
    others with one store each (a loop of element stores there made the
    blocks holding a row's ends, which the rest of the row waits for, 2 us
    late), at a short row's ends they stage in a loop, and both write in a
    loop (small code). The launch's first wave of split-row blocks starts
    in three steps (`first-wave-stagger`), so that some of it copies while
    the rest exchanges. `timeline` stamps when each block passes each phase
    (bench/softmax_timeline.py reads them). exp(x -
    max) is exp2((x - max) * log2(e)); -inf entries give 0 and rows that
    are all -inf give 0. Empty rows (N = 0) launch blocks that touch
    nothing, no rows an empty grid.
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
           "tiles with it, so without it each attn.softmax is an error">,
    Option<"timeline", "timeline", "bool", /*default=*/"false",
           "profiling aid: each block's thread 0 writes %globaltimer at its "
           "start, first pass's end, exchange and end, and its SM, into 8 "
           "words per block after the workspace's own "
           "(bench/softmax_timeline.py reads them; the workspace is then "
           "left non-zero)">
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

def CheckDecomposed : Pass<"attn-check-decomposed"> {
  let summary = "fail on attn ops that the decompositions left behind";
  let description = [{
    Runs after the decomposition passes of a pipeline: any `attn` op still
    there (a block mask read with `attn.block_mask_field`, say, whose tensors
    nothing computes yet) gets an error naming it, instead of an opaque
    failure in bufferization or LLVM translation later.
  }];
}

def BoundTemporaries : Pass<"attn-bound-temporaries"> {
  let summary = "static sizes and GPU memory spaces for kernel temporaries";
  let description = [{
    Kernels cannot allocate: every temporary needs a size known when the
    kernel is compiled. Inside an `scf.forall` mapped to GPU blocks or
    threads, rewrites each `tensor.empty` into storage of its constant upper
    bounds (found with `ValueBoundsOpInterface`, e.g. from the `affine.min`
    that clips the last tile) and an `extract_slice` of the used part:
    - a thread's temporaries (inside a `#gpu.thread` loop) stay
      `tensor.empty`, so that after bufferization upstream
      `promote-buffers-to-stack` places them in registers or local memory;
    - a block's temporaries (inside the `#gpu.block` grid, outside thread
      loops: the tiles that all threads of a block work on together) become
      `bufferization.alloc_tensor` in `#gpu.address_space<workgroup>`, so
      that they bufferize to shared memory.
    A temporary with no upper bound is an error naming it.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def StageInWorkgroup : Pass<"attn-stage-in-workgroup"> {
  let summary = "copy the global tiles a GPU block reads into shared memory";
  let description = [{
    Runs on buffers, inside the `#gpu.block` grid and outside thread loops:
    each `memref.subview` of global memory that only linalg ops read (the Q
    tile of a block, the K and V tiles of each kv step) gets a buffer in
    `#gpu.address_space<workgroup>` of its constant bounds and a
    `linalg.copy` into it right after the subview; the readers then read the
    staged tile. Once threads are distributed, the block's threads copy the
    tile together and the barrier after the copy publishes it. Rows of 128
    bytes or a multiple of it are padded by one 4-byte word, so threads that
    read down a column of the tile hit different banks.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def CopiesToLinalg : Pass<"attn-copies-to-linalg"> {
  let summary = "memref.copy inside GPU-mapped loops to linalg.copy";
  let description = [{
    Bufferization writes results back with `memref.copy`; between strided
    memrefs that lowers to a call into MLIR's C runner utils, which a GPU
    kernel does not have. Inside `scf.forall` loops mapped to GPU blocks or
    threads this pass makes them `linalg.copy`, which
    `convert-linalg-to-loops` turns into loads and stores.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def MapForallToGpu : Pass<"attn-map-forall-to-gpu"> {
  let summary = "scf.forall loops marked #gpu.block / #gpu.thread to gpu.launch";
  let description = [{
    On buffers: each `scf.forall` marked with `#gpu.block` mapping becomes a
    `gpu.launch` whose grid is the loop's trip counts (computed on the host,
    so they may be dynamic: one kernel for every problem size), and each
    `scf.forall` marked `#gpu.thread<x>` inside it becomes a guarded
    `if (thread_id.x < trip count)`. The block size is the constant upper
    bound of the thread loops' trip counts (via `ValueBoundsOpInterface`),
    so tiles clipped at the edge of the problem run with idle threads.
    Unlike upstream's `transform.gpu.map_nested_forall_to_threads`, thread
    loops need not have static trip counts. A grid with no thread loops
    (its tiles are shared by the block: `attn-distribute-to-threads` splits
    the work later) gets `threads` threads per block.

    Workgroup buffers of the grid (`memref.alloc` in
    `#gpu.address_space<workgroup>`, static shapes) become `memref.view`s of
    the kernel's dynamic shared memory (`gpu.dynamic_shared_memory`), and
    the launch asks for their total: buffers of sibling loops share bytes,
    since one loop's buffers are dead when the next starts. The runtime opts
    in to more than 48 KiB where a kernel needs it.

    Unless `allow-host-linalg` is set, a linalg op left outside every grid is
    an error: it would otherwise run, slowly and silently, on the host.
  }];
  let options = [
    Option<"allowHostLinalg", "allow-host-linalg", "bool", /*default=*/"false",
           "accept linalg ops outside GPU grids">,
    Option<"threads", "threads", "int64_t", /*default=*/"128",
           "threads per block of a grid that has no thread loops">,
    Option<"sharedMemoryPerBlock", "shared-memory-per-block", "int64_t",
           /*default=*/"232448",
           "bytes of shared memory a block may use on the target">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def DistributeToThreads : Pass<"attn-distribute-to-threads"> {
  let summary = "a GPU block's parallel loops strided over its threads";
  let description = [{
    Inside each `gpu.launch` (one-dimensional blocks), every outermost
    `scf.parallel` (a linalg op on a tile that the whole block shares, after
    `convert-linalg-to-parallel-loops`) becomes an `scf.for` over its
    linearized iteration space from the thread id, stepping by the block
    size; the innermost index varies fastest, so neighbouring threads touch
    neighbouring elements. A `gpu.barrier` follows each loop: the next loop
    may read anything it wrote. Reductions stay sequential inside an
    iteration (they are `scf.for` loops in the body).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def ExternDynamicSharedMemory : Pass<"attn-extern-dynamic-shared-memory"> {
  let summary = "make dynamic shared memory an extern PTX array";
  let description = [{
    `convert-gpu-to-nvvm` lowers `gpu.dynamic_shared_memory` to an internal
    `llvm.mlir.global` of type `!llvm.array<0 x i8>` in address space 3.
    The NVPTX backend demotes such a global into its one kernel as a 1-byte
    *static* `.shared` variable, laid out with the kernel's other static
    shared memory (for instance the softmax kernel's workgroup memory), so the
    dynamic region overlaps them. Dynamic shared memory must then be
    `.extern .shared .b8 name[]`, which starts after all static shared
    memory, as CUDA C's `extern __shared__` is: this pass gives those
    globals external linkage in each module that also has static shared
    memory. A module without any keeps the internal form, whose variable
    sits where the dynamic region begins and whose accesses LLVM optimizes
    better (the attention kernels run 1.8x slower with the extern form).
    Run it after `convert-gpu-to-nvvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ApproxMathToNVVM : Pass<"attn-approx-math-to-nvvm"> {
  let summary = "f32 exp2 / log2 / tanh to the GPU's approximate instructions";
  let description = [{
    Rewrites f32 `math.exp2` to `llvm.nvvm.ex2.approx.ftz` and `math.log2`
    to `llvm.nvvm.lg2.approx.ftz` (as `llvm.call_intrinsic`), and
    `math.tanh` to PTX `tanh.approx.f32` (sm_75+, Gemma 2's soft-capping),
    as FlashAttention does, and f32 `math.fma` to `llvm.intr.fma`.
    `math.exp` and `math.log` become exp2(x * log2(e)) and log2(x) * ln(2)
    first. The exact scalar ops a region may use that `convert-gpu-to-nvvm`
    leaves alone or sends to libdevice become LLVM intrinsics: `math.absi`
    (with |INT_MIN| = INT_MIN, as on the CPU), and f32 `math.absf` and
    `math.sqrt`, `arith.maxnumf` and `arith.minnumf` (PTX `abs.f32`,
    `sqrt.rn.f32`, `max.f32`, `min.f32`).
    Run it on `gpu.module`s before `convert-gpu-to-nvvm`, which would
    otherwise call CUDA's libdevice: producing PTX then needs no CUDA
    toolkit.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def WriteKernelBundle : Pass<"attn-write-kernel-bundle", "::mlir::ModuleOp"> {
  let summary = "write the GPU kernels and their launch metadata to files";
  let description = [{
    For every `gpu.binary`, writes `<prefix><binary>.ptx` (or `.cubin`) and
    one `<prefix>bundle.json` describing how to launch what is in them, so
    that a runtime without MLIR can: per host function, its arguments; per
    `gpu.launch_func`, the kernel name, the block size, and the grid and each
    kernel operand as expressions over the host function's arguments
    (`dim(%arg0, 2)`, `ceildiv(a, 64)`, constants...). Memref operands are
    passed to the kernel as MLIR memref descriptors (allocated pointer,
    aligned pointer, offset, sizes, strides). A function's
    `attn.shape_contract` (from `attn-record-shape-contract`) becomes its
    `shape_contract`, which the runtime checks before every launch.

    A binary's name becomes a file name next to bundle.json, so names that
    are not plain file names (`../x`, `a/b`) are an error.
  }];
  let options = [
    Option<"prefix", "prefix", "std::string", /*default=*/"\"\"",
           "path prefix of the files (e.g. out/attention-)">
  ];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
