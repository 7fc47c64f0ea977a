//===- KernelStrategy.h - which attention kernel to build -------*- C++ -*-===//

#ifndef ATTNDIALECT_CONVERSION_KERNELSTRATEGY_H
#define ATTNDIALECT_CONVERSION_KERNELSTRATEGY_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <optional>

namespace mlir::attn {

/// The attention kernels the NVVM pipeline builds, named by how they
/// compute: the `strategy` of attn-lower-to-nvvm and attn-attention-to-mma.
enum class KernelStrategy {
  /// Per op, the fastest kernel the chip has that serves it: wgmma-ws on
  /// sm_90a for head dims of 16 (causal), 32, 64, 128 and 256, mma-sync for
  /// other f16/bf16 attention on sm_80 and newer, simt for the rest.
  Auto,
  /// Tile-level linalg ops distributed over a block's threads (any dtype).
  Simt,
  /// f16/bf16 on mma.sync tensor cores (sm_80 and newer).
  MmaSync,
  /// sm_90a wgmma, one block per q-tile, every warp copying.
  Wgmma,
  /// sm_90a wgmma in a persistent kernel whose producer warpgroup copies
  /// the tiles with TMA for two consumer warpgroups.
  WgmmaWs,
};

/// The option spelling of `strategy`.
llvm::StringRef stringifyKernelStrategy(KernelStrategy strategy);

/// The strategy spelled `name`, if any.
std::optional<KernelStrategy> parseKernelStrategy(llvm::StringRef name);

/// The values a `strategy` option takes, with what each means.
inline llvm::cl::ValuesClass kernelStrategyValues() {
  return llvm::cl::values(
      clEnumValN(KernelStrategy::Auto, "auto",
                 "per op, the fastest kernel the chip has that serves it"),
      clEnumValN(KernelStrategy::Simt, "simt",
                 "the SIMT kernels (tile-level linalg ops over a block's "
                 "threads)"),
      clEnumValN(KernelStrategy::MmaSync, "mma-sync",
                 "f16/bf16 on mma.sync tensor cores (sm_80+)"),
      clEnumValN(KernelStrategy::Wgmma, "wgmma",
                 "sm_90a wgmma, a block per q-tile"),
      clEnumValN(KernelStrategy::WgmmaWs, "wgmma-ws",
                 "sm_90a wgmma, persistent and warp-specialized (TMA "
                 "producer)"));
}

} // namespace mlir::attn

#endif // ATTNDIALECT_CONVERSION_KERNELSTRATEGY_H
