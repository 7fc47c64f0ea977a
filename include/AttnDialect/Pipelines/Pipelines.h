//===- Pipelines.h - attn's named lowering pipelines ------------*- C++ -*-===//

#ifndef ATTNDIALECT_PIPELINES_PIPELINES_H
#define ATTNDIALECT_PIPELINES_PIPELINES_H

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
};

/// attn-lower-to-cpu: attention to the LLVM dialect for the host, ready for
/// the MLIR ExecutionEngine (functions get C interfaces).
/// Invalid options are reported through `errorHandler`.
LogicalResult
buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options,
                 function_ref<LogicalResult(const Twine &)> errorHandler);

/// Registers attn-lower-to-cpu with the pass registry (for attn-opt and the
/// plugin).
void registerAttnPipelines();

} // namespace attn
} // namespace mlir

#endif // ATTNDIALECT_PIPELINES_PIPELINES_H
