//===- Passes.td - NVVM fix-ups ----------------------------*- tablegen -*-===//

#ifndef ATTN_TARGET_NVVM_PASSES_TD
#define ATTN_TARGET_NVVM_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    better (the SIMT attention kernels are much slower with the extern
    form).
    Run it after `convert-gpu-to-nvvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ApproxMathToNVVM : Pass<"attn-approx-math-to-nvvm"> {
  let summary = "f32 exp2 / log2 / tanh to the GPU's approximate instructions";
  let description = [{
    Rewrites f32 `math.exp2` to `llvm.nvvm.ex2.approx.ftz` and `math.log2`
    to `llvm.nvvm.lg2.approx.ftz` (as `llvm.call_intrinsic`), and f32
    `math.fma` to `llvm.intr.fma`. `math.exp` and `math.log` become
    exp2(x * log2(e)) and log2(x) * ln(2) first. f32 `math.tanh` marked
    `afn` becomes PTX `tanh.approx.f32` (sm_75+, 2^-11 relative error,
    Gemma 2's soft-capping as FlashAttention computes it; the f16/bf16
    tensor-core kernels mark their regions' tanh so); without `afn` it is
    computed from ex2.approx within a few f32 ulps (a Taylor polynomial
    below |x| = 1/16, 1 - 2 / (e^(2|x|) + 1) with x's sign above). The
    exact scalar ops a region may use that `convert-gpu-to-nvvm` leaves
    alone or sends to libdevice become LLVM intrinsics: `math.absi` (with
    |INT_MIN| = INT_MIN, as on the CPU), and f32 `math.absf`, `math.sqrt`,
    `arith.maxnumf` and `arith.minnumf` (the NVVM intrinsics of PTX
    `abs.f32`, `sqrt.rn.f32`, `max.f32`, `min.f32`; not inline PTX, which
    would make a constant operand an immediate that LLVM refuses for
    floats).
    Run it on `gpu.module`s before `convert-gpu-to-nvvm`, which would
    otherwise call CUDA's libdevice: producing PTX then needs no CUDA
    toolkit.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def MinBlocksPerSm : Pass<"attn-min-blocks-per-sm"> {
  let summary = "ask ptxas for the occupancy a kernel was built for";
  let description = [{
    A conversion that builds a kernel for several blocks per SM marks its
    `gpu.dynamic_shared_memory` op with `attn.min_blocks_per_sm = N : i32`
    (kernel outlining keeps the ops of a `gpu.launch`'s body, not the
    launch's own attributes). This pass gives each `gpu.func` kernel
    holding such an op the attribute `nvvm.minctasm = N` (PTX
    `.minnctapersm`: ptxas caps the registers so that N blocks fit an
    SM) and drops the mark. Run it on `gpu.module`s before
    `convert-gpu-to-nvvm`, which lowers the marked op.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def EnableSetMaxNReg : Pass<"attn-enable-setmaxnreg"> {
  let summary = "let the kernels that move registers between warpgroups do so";
  let description = [{
    ptxas ignores `setmaxnreg` (`nvvm.setmaxregister`, warning C7508)
    unless the kernel declares both its block size (`.maxntid`, from a
    `gpu.func`'s known block size) and one block per SM
    (`.minnctapersm 1`). This pass gives each NVVM kernel (`llvm.func` with
    `nvvm.kernel`) that holds a `nvvm.setmaxregister` the attribute
    `nvvm.minctasm = 1`, and fails on one that has no `nvvm.maxntid` or
    `nvvm.reqntid`. Run it after `convert-gpu-to-nvvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def TensorMapParams : Pass<"attn-tensor-map-params", "ModuleOp"> {
  let summary = "pass tensor maps to kernels by value";
  let description = [{
    A kernel operand that an `attn.tensor_map` gives is the address of a
    128-byte kernel parameter that holds the map (`.param .align 64 .b8
    [128]`), which TMA copies read directly. This pass finds those
    operands of each `gpu.launch_func` and gives the matching parameter of
    the NVVM kernel (`llvm.func`) `llvm.byval = !llvm.array<128 x i8>`,
    `llvm.align = 64` and `nvvm.grid_constant`, counting each memref
    operand as its descriptor's fields. Run it after `convert-gpu-to-nvvm`
    (which drops `llvm.byval` from a `gpu.func`'s arguments); it fails on a
    kernel whose parameters do not match its launch's operands.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def SkipLlvmVectorizers : Pass<"attn-skip-llvm-vectorizers"> {
  let summary = "keep LLVM's vectorizers off the tensor-core kernels";
  let description = [{
    Gives each NVVM kernel (`llvm.func` with `nvvm.kernel`) that computes
    on tensor cores (`nvvm.mma.sync`, or `nvvm.wgmma.mma_async` or the
    `nvvm.wgmma.fence.aligned` that precedes an inline-PTX wgmma) the LLVM
    function attribute `noimplicitfloat` (through `passthrough`), which
    LLVM's SLP and loop vectorizers, and the NVPTX backend's load/store
    vectorizer, honour by leaving the function alone.
    Those kernels move their tiles with instructions chosen where they were
    built (ldmatrix, wide loads and stores, TMA); their fragment code is
    long straight-line f32 arithmetic that sm_80 and sm_90 have no vector
    instructions for. On them SLP vectorization took most of
    `gpu-module-to-binary`'s time, and no instruction of their PTX
    changes: their scalar loads and stores (captured reads, the
    logsumexp, the block-mask lists) were not joined before either.
    The other kernels keep it: it joins their scalar loads into vector
    loads. Run it after `convert-gpu-to-nvvm`, before
    `convert-nvvm-to-llvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // ATTN_TARGET_NVVM_PASSES_TD
