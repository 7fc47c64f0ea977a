//===- Pipelines.h - attn's named lowering pipelines ------------*- C++ -*-===//

#ifndef ATTNDIALECT_PIPELINES_PIPELINES_H
#define ATTNDIALECT_PIPELINES_PIPELINES_H

#include "AttnDialect/Conversion/KernelStrategy.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class OpPassManager;
namespace attn {

/// Where a pipeline stops: each stage is a point a user (or a lit test) can
/// look at.
///   tile      - scf.forall of attention tiles
///   decompose - kv loops of linalg ops and attn.online_softmax, then linalg
///   bufferize - the same on memrefs
///   loops     - scf/cf loops, no linalg left
///   llvm      - the LLVM dialect (the whole pipeline)
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  Option<int64_t> qTile{*this, "q-tile", llvm::cl::desc("query rows per tile"),
                        llvm::cl::init(64)};
  Option<int64_t> kvTile{*this, "kv-tile",
                         llvm::cl::desc("keys per kv-loop step"),
                         llvm::cl::init(64)};
  Option<int64_t> rowTile{*this, "row-tile",
                          llvm::cl::desc("softmax elements per step"),
                          llvm::cl::init(4096)};
  Option<std::string> until{
      *this, "until",
      llvm::cl::desc("stop after this stage: tile, decompose, bufferize, "
                     "loops or llvm"),
      llvm::cl::init("llvm")};
  Option<bool> boundsChecks{
      *this, "bounds-checks",
      llvm::cl::desc("guard the regions' reads of captured tensors and their "
                     "integer divisions; a violation calls "
                     "attnReportRegionError (the CPU runner provides it)"),
      llvm::cl::init(false)};
  Option<bool> autoBlockMasks{
      *this, "auto-block-masks",
      llvm::cl::desc("give each attention with a mask_mod and no block mask "
                     "the 128 x 128 block mask of its mask_mod, so that its "
                     "kernel skips the blocks the mask removes"),
      llvm::cl::init(true)};
  Option<bool> boundBlocks{
      *this, "bound-blocks",
      llvm::cl::desc("build block masks deciding blocks by interval bounds "
                     "of the mask_mod where they tell, before evaluating it "
                     "position by position"),
      llvm::cl::init(true)};
};

/// Where the NVVM pipeline stops:
///   choose    - each attention op's #attn.kernel chosen for the chip
///   tile      - tensor-core kernels as gpu.launch, forall over SIMT blocks
///   decompose - per-thread flash loops on tensors
///   bufferize - on memrefs, every temporary of a thread on its stack
///   gpu       - gpu.launch, outlined into a gpu.module
///   nvvm      - the kernels in the NVVM/LLVM dialects
///   binary    - gpu.binary holding PTX (or a cubin) for the chip
struct NvvmPipelineOptions : public PassPipelineOptions<NvvmPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("target, e.g. sm_80 or sm_90")};
  Option<int64_t> qTile{
      *this, "q-tile",
      llvm::cl::desc("query rows per thread block (0: chosen per kernel; "
                     "simt: the largest up to 64 whose tiles fit the chip's "
                     "shared memory, tensor-core kernels: per head dim)"),
      llvm::cl::init(0)};
  Option<int64_t> kvTile{
      *this, "kv-tile",
      llvm::cl::desc("keys per kv-loop step (0: chosen per kernel, as "
                     "q-tile)"),
      llvm::cl::init(0)};
  Option<KernelStrategy> strategy{
      *this, "strategy",
      llvm::cl::desc("which attention kernels: auto (per op, the fastest "
                     "the chip has that serves it: wgmma-ws on sm_90a for "
                     "head dims 16 (causal), 32, 64, 128 and 256, mma-sync "
                     "for other f16/bf16 ops on sm_80 and newer, simt for "
                     "the rest), simt, "
                     "mma-sync, wgmma or wgmma-ws (each op on that kernel, "
                     "or an error that names the op and why)"),
      llvm::cl::init(KernelStrategy::Auto), kernelStrategyValues()};
  Option<int64_t> warps{
      *this, "warps",
      llvm::cl::desc("mma kernels: warps per block (0: chosen per head dim; "
                     "see attn-choose-kernel)"),
      llvm::cl::init(0)};
  Option<int64_t> stages{
      *this, "stages",
      llvm::cl::desc("mma kernels: K/V buffers in shared memory, 1 or 2 "
                     "(0: 2)"),
      llvm::cl::init(0)};
  Option<int64_t> threads{*this, "threads",
                          llvm::cl::desc("threads per block (1 to 1024)"),
                          llvm::cl::init(128)};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("isa (PTX text) or bin (cubin, needs ptxas)"),
      llvm::cl::init("isa")};
  Option<std::string> until{
      *this, "until",
      llvm::cl::desc("stop after this stage: choose, tile, decompose, "
                     "bufferize, gpu, nvvm or binary"),
      llvm::cl::init("binary")};
  Option<bool> boundsChecks{
      *this, "bounds-checks",
      llvm::cl::desc("guard the regions' reads of captured tensors and their "
                     "integer divisions; a violation prints what and where "
                     "and stops the kernel with a trap"),
      llvm::cl::init(false)};
  Option<bool> autoBlockMasks{
      *this, "auto-block-masks",
      llvm::cl::desc("give each attention with a mask_mod and no block mask "
                     "the 128 x 128 block mask of its mask_mod, so that its "
                     "kernel skips the blocks the mask removes"),
      llvm::cl::init(true)};
  Option<bool> boundBlocks{
      *this, "bound-blocks",
      llvm::cl::desc("build block masks deciding blocks by interval bounds "
                     "of the mask_mod where they tell, before evaluating it "
                     "position by position"),
      llvm::cl::init(true)};
};

/// The largest q-tile, kv-tile and row-tile the pipelines accept: larger
/// tiles fit no target and would overflow size computations.
constexpr int64_t kMaxTile = 1 << 16;

/// attn-lower-to-nvvm: attention to a gpu.binary for an NVIDIA GPU. Invalid
/// options (a missing or unknown chip) are reported through `errorHandler`.
LogicalResult
buildNvvmPipeline(OpPassManager &pm, const NvvmPipelineOptions &options,
                  function_ref<LogicalResult(const Twine &)> errorHandler);

/// attn-lower-to-cpu: attention to the LLVM dialect for the host, ready for
/// the MLIR ExecutionEngine (functions get C interfaces).
/// Invalid options are reported through `errorHandler`.
LogicalResult
buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options,
                 function_ref<LogicalResult(const Twine &)> errorHandler);

/// Registers attn-lower-to-cpu and attn-lower-to-nvvm with the pass
/// registry (for attn-opt and the plugin).
void registerAttnPipelines();

} // namespace attn
} // namespace mlir

#endif // ATTNDIALECT_PIPELINES_PIPELINES_H
