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

using namespace mlir;
using namespace mlir::attn;

namespace {
struct ChipInfo {
  const char *name;
  unsigned smVersion;
  /// Shared memory an SM gives its blocks, and one block at most (the CUDA
  /// programming guide's compute capability table): the softmax kernel
  /// sizes split rows' tiles by the first, attention tiles fit the second.
  int64_t sharedMemoryPerSm, sharedMemoryPerBlock;
};

/// The chips LLVM 22's NVPTX backend knows from sm_75 on: a name outside
/// this list (sm_80a, sm_91) would pass a pattern check and then abort
/// instruction selection.
constexpr int64_t KiB = 1024;
constexpr ChipInfo kChips[] = {
    {"sm_75", 75, 64 * KiB, 64 * KiB},
    {"sm_80", 80, 164 * KiB, 163 * KiB},
    {"sm_86", 86, 100 * KiB, 99 * KiB},
    {"sm_87", 87, 164 * KiB, 163 * KiB},
    {"sm_89", 89, 100 * KiB, 99 * KiB},
    {"sm_90", 90, 228 * KiB, 227 * KiB},
    {"sm_90a", 90, 228 * KiB, 227 * KiB},
    {"sm_100", 100, 228 * KiB, 227 * KiB},
    {"sm_100a", 100, 228 * KiB, 227 * KiB},
    {"sm_120", 120, 100 * KiB, 99 * KiB},
    {"sm_120a", 120, 100 * KiB, 99 * KiB},
};

const ChipInfo *lookupChip(llvm::StringRef name) {
  for (const ChipInfo &chip : kChips)
    if (name == chip.name)
      return &chip;
  return nullptr;
}

std::string knownChips() {
  std::string list;
  for (const ChipInfo &chip : kChips)
    list += (list.empty() ? "" : ", ") + std::string(chip.name);
  return list;
}
} // namespace

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
  const ChipInfo *chip = lookupChip(options.chip);
  if (!chip)
    return errorHandler(
        "attn-lower-to-nvvm: unsupported chip '" + options.chip.getValue() +
        "': the kernels need sm_75 or newer, one of " + knownChips());
  unsigned smVersion = chip->smVersion;
  if (options.qTile < 0 || options.kvTile < 0 || options.threads <= 0 ||
      options.threads > 1024 || options.qTile > kMaxTile ||
      options.kvTile > kMaxTile)
    return errorHandler(
        "attn-lower-to-nvvm: need 0 <= q-tile <= " + llvm::Twine(kMaxTile) +
        ", 0 <= kv-tile <= " + llvm::Twine(kMaxTile) +
        " (0: chosen to fit the chip) and 0 < threads <= "
        "1024");
  if (options.format != "isa" && options.format != "bin")
    return errorHandler("attn-lower-to-nvvm: format must be isa or bin, not '" +
                        options.format.getValue() + "'");

  int64_t sharedMemoryPerSm = chip->sharedMemoryPerSm;
  const std::string stages[] = {
      // q-tile and kv-tile 0: the tile pass chooses per op what fits.
      llvm::formatv("attn-record-shape-contract,"
                    "attn-tile-attention{{q-tile={0} kv-tile={1} "
                    "shared-memory-per-block={2} gpu-mapping},"
                    "canonicalize",
                    options.qTile.getValue(), options.kvTile.getValue(),
                    chip->sharedMemoryPerBlock),
      llvm::formatv("attn-softmax-to-gpu{{shared-memory-per-sm={1} "
                    "async-copy={2}},"
                    "attn-decompose-merge-splits,"
                    "attn-decompose-attention{{"
                    "kv-tile={0} bounds-checks={3}},attn-decompose-softmax,"
                    "attn-decompose-online-softmax,canonicalize,cse,"
                    "attn-check-decomposed",
                    options.kvTile > 0 ? options.kvTile.getValue() : 64,
                    sharedMemoryPerSm, smVersion >= 80,
                    options.boundsChecks.getValue()),
      // Kernels cannot allocate: bound every temporary (a block's go to
      // shared memory), bufferize, copy with linalg, and stage the global
      // tiles the block reads in shared memory.
      "attn-bound-temporaries,canonicalize,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},canonicalize,"
      "attn-copies-to-linalg,attn-stage-in-workgroup",
      llvm::formatv("attn-map-forall-to-gpu{{threads={0} "
                    "shared-memory-per-block={1}},"
                    "convert-linalg-to-parallel-loops,"
                    "attn-distribute-to-threads,canonicalize,cse,"
                    // Constants back into the kernel, where divisions by
                    // tile sizes fold into shifts.
                    "gpu-launch-sink-index-computations,"
                    "gpu-kernel-outlining",
                    options.threads.getValue(), chip->sharedMemoryPerBlock),
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
