//===- NvvmPipeline.cpp - attn-lower-to-nvvm ------------------------------===//
//
// attention -> grid of q-tiles (blocks) -> the block's flash loop on tiles
// -> buffers, the block's tiles (Q, K, V, scores, accumulator) in shared
// memory -> gpu.launch, each linalg op's parallel loops strided over the
// block's threads with a barrier after each -> outlined kernels -> NVVM ->
// PTX. One kernel serves every B, H, M and N: the grid is computed from the
// sizes at launch.
//
// This is the SIMT stage of the performance path (DESIGN.md): K/V tiles are
// staged in shared memory once per block; the contractions stay tile-level
// linalg ops until threads are distributed, so a tensor-core lowering can
// take them over without changing the stages.
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
  if (options.qTile <= 0 || options.kvTile <= 0 || options.threads <= 0 ||
      options.threads > 1024)
    return errorHandler("attn-lower-to-nvvm: need q-tile > 0, kv-tile > 0 "
                        "and 0 < threads <= 1024");
  if (options.format != "isa" && options.format != "bin")
    return errorHandler("attn-lower-to-nvvm: format must be isa or bin, not '" +
                        options.format.getValue() + "'");

  // Shared memory an SM gives its blocks (the CUDA programming guide's
  // compute capability table): the softmax kernel sizes split rows' tiles
  // by it.
  int64_t sharedMemoryPerSm = smVersion >= 90   ? 228 * 1024
                              : smVersion == 80 ? 164 * 1024
                              : smVersion == 87 ? 164 * 1024
                              : smVersion >= 86 ? 100 * 1024
                                                : 64 * 1024;
  const std::string stages[] = {
      llvm::formatv("attn-tile-attention{{q-tile={0} gpu-mapping},"
                    "canonicalize",
                    options.qTile.getValue()),
      llvm::formatv("attn-softmax-to-gpu{{shared-memory-per-sm={1} "
                    "async-copy={2}},"
                    "attn-decompose-merge-splits,"
                    "attn-decompose-attention{{"
                    "kv-tile={0}},attn-decompose-softmax,"
                    "attn-decompose-online-softmax,canonicalize,cse,"
                    "attn-check-decomposed",
                    options.kvTile.getValue(), sharedMemoryPerSm,
                    smVersion >= 80),
      // Kernels cannot allocate: bound every temporary (a block's go to
      // shared memory), bufferize, copy with linalg, and stage the global
      // tiles the block reads in shared memory.
      "attn-bound-temporaries,canonicalize,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},canonicalize,"
      "attn-copies-to-linalg,attn-stage-in-workgroup",
      llvm::formatv("attn-map-forall-to-gpu{{threads={0}},"
                    "convert-linalg-to-parallel-loops,"
                    "attn-distribute-to-threads,canonicalize,cse,"
                    // Constants back into the kernel, where divisions by
                    // tile sizes fold into shifts.
                    "gpu-launch-sink-index-computations,"
                    "gpu-kernel-outlining",
                    options.threads.getValue()),
      // Only the kernels are lowered: the host keeps its launch sizes as
      // affine expressions over memref.dim, which the kernel bundle records.
      llvm::formatv("nvvm-attach-target{{chip={0} O=3},"
                    "gpu.module(expand-strided-metadata,lower-affine,"
                    "convert-scf-to-cf,attn-approx-math-to-nvvm,"
                    "convert-gpu-to-nvvm,attn-extern-dynamic-shared-memory,"
                    "convert-nvvm-to-llvm,canonicalize,"
                    "cse,reconcile-unrealized-casts)",
                    options.chip.getValue()),
      llvm::formatv("gpu-module-to-binary{{format={0}}",
                    options.format.getValue())};
  return addStages(pm, stages, *stop);
}
