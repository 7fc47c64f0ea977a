//===- Passes.td - bufferized tiles to the gpu dialect -----*- tablegen -*-===//

#ifndef ATTN_GPU_PASSES_TD
#define ATTN_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def SinkIntoLaunches : Pass<"attn-sink-into-launches"> {
  let summary = "move constants, sizes and workspace views into gpu.launch";
  let description = [{
    Upstream's `gpu-launch-sink-index-computations`, which moves constants
    and `memref.dim` into the launches that use them (divisions by tile
    sizes then fold into shifts), extended to views of the runtime's
    workspace (`memref.reinterpret_cast` and `memref.cast` of an
    `attn.workspace`, such as a block mask's lists): a kernel bundle passes
    the workspace itself and the view's offset and sizes as integers, never
    a view.
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

#endif // ATTN_GPU_PASSES_TD
