//===- NvvmPipeline.cpp - attn-lower-to-nvvm ------------------------------===//
//
// attention -> grid of q-tiles (blocks) x rows (threads) -> per-thread flash
// loops -> memrefs with every temporary on the thread's stack -> gpu.launch
// -> outlined kernels -> NVVM -> PTX. One kernel serves every B, H, M and N:
// the grid is computed from the sizes at launch.
//
// This is the SIMT stage of the performance path (DESIGN.md): one thread per
// query row, K/V read from global memory. Tensor cores and shared-memory
// staging replace the tile contractions later without changing the stages.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Pipelines/Pipelines.h"
#include "Stages.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace mlir::attn;

LogicalResult mlir::attn::buildNvvmPipeline(
    OpPassManager &pm, const NvvmPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  FailureOr<int> stop =
      findStage("attn-lower-to-nvvm",
                {"tile", "decompose", "bufferize", "gpu", "nvvm", "binary"},
                options.until, errorHandler);
  if (failed(stop))
    return failure();
  if (options.chip.empty())
    return errorHandler("attn-lower-to-nvvm: missing target chip: pass "
                        "chip=sm_80 or chip=sm_90");
  llvm::SmallVector<llvm::StringRef> match;
  unsigned smVersion = 0;
  if (!llvm::Regex("^sm_([0-9]+)a?$").match(options.chip, &match) ||
      match[1].getAsInteger(10, smVersion) || smVersion < 75)
    return errorHandler("attn-lower-to-nvvm: unsupported chip '" +
                        options.chip.getValue() +
                        "': the kernels need sm_75 or newer (sm_80, sm_90, "
                        "sm_90a, ...)");
  if (options.qTile <= 0 || options.qTile > 1024 || options.kvTile <= 0)
    return errorHandler("attn-lower-to-nvvm: need 0 < q-tile <= 1024 (one "
                        "thread per query row) and kv-tile > 0");
  if (options.format != "isa" && options.format != "bin")
    return errorHandler("attn-lower-to-nvvm: format must be isa or bin, not '" +
                        options.format.getValue() + "'");

  const std::string stages[] = {
      llvm::formatv("attn-tile-attention{{q-tile={0} gpu-mapping "
                    "thread-rows=1},canonicalize",
                    options.qTile.getValue()),
      llvm::formatv("attn-decompose-merge-splits,attn-decompose-attention{{kv-tile={0}},"
                    "attn-decompose-softmax,attn-decompose-online-softmax,"
                    "canonicalize,cse,attn-check-decomposed",
                    options.kvTile.getValue()),
      // Threads cannot allocate: bound every temporary, bufferize, keep the
      // temporaries on the stack and copy with loops (no runtime memcpy).
      "attn-bound-temporaries,canonicalize,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},canonicalize,"
      "attn-copies-to-linalg,"
      "func.func(promote-buffers-to-stack{max-alloc-size-in-bytes=1048576 "
      "max-rank-of-allocated-memref=4}),buffer-deallocation-pipeline",
      "attn-map-forall-to-gpu,convert-linalg-to-loops,canonicalize,cse,"
      "gpu-kernel-outlining",
      // Only the kernels are lowered: the host keeps its launch sizes as
      // affine expressions over memref.dim, which the kernel bundle records.
      llvm::formatv("nvvm-attach-target{{chip={0} O=3},"
                    "gpu.module(expand-strided-metadata,lower-affine,"
                    "convert-scf-to-cf,attn-approx-math-to-nvvm,"
                    "convert-gpu-to-nvvm,convert-nvvm-to-llvm,canonicalize,"
                    "cse,reconcile-unrealized-casts)",
                    options.chip.getValue()),
      llvm::formatv("gpu-module-to-binary{{format={0}}",
                    options.format.getValue())};
  return addStages(pm, stages, *stop);
}
