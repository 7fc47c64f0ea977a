//===- GpuTileSizes.h - tiles of the SIMT attention kernel that fit -------===//

#ifndef ATTN_LIB_TRANSFORMS_GPUTILESIZES_H
#define ATTN_LIB_TRANSFORMS_GPUTILESIZES_H

#include "AttnDialect/IR/AttnOps.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace mlir::attn {

/// The discardable attribute a GPU tile of attn.attention carries: the kv
/// tile attn-tile-attention chose for it.
constexpr llvm::StringLiteral kKvTileAttrName = "attn.kv_tile";

/// Shared memory of one block of the SIMT kernel with q x kv tiles: Q, K and
/// V in the input type, their rows padded against bank conflicts; scores
/// and probs, the accumulator and its rescaled copy in f32; the row
/// statistics; 16-byte alignment of each buffer. Meant as an upper bound of
/// what attn-map-forall-to-gpu assigns (test/Pipelines/tile-defaults.test
/// compiles the choice for each chip).
inline int64_t simtSharedBytes(int64_t q, int64_t kv, int64_t d, int64_t dv,
                               int64_t elementBytes) {
  int64_t inputs = (q * d + kv * d + kv * dv) * elementBytes;
  int64_t padding = (q + 2 * kv) * 16;
  int64_t f32Tiles = (2 * q * kv + 2 * q * dv) * 4;
  int64_t rows = 12 * q * 4;
  return inputs + padding + f32Tiles + rows + 16 * 16;
}

/// (q-tile, kv-tile) for `op`'s GPU blocks: the given ones where positive,
/// the others chosen as the largest of 64x64, 64x32, 32x32, 32x16, 16x16,
/// 16x8 and 8x8
/// whose tiles fit `sharedBytes`; std::nullopt when none fits.
inline std::optional<std::pair<int64_t, int64_t>>
chooseSimtTiles(AttentionOp op, int64_t qTile, int64_t kvTile,
                int64_t sharedBytes) {
  int64_t elementBytes =
      op.getQueryType().getElementType().getIntOrFloatBitWidth() / 8;
  const std::pair<int64_t, int64_t> candidates[] = {
      {64, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 16}, {16, 8}, {8, 8}};
  for (auto [q, kv] : candidates) {
    if (qTile > 0)
      q = qTile;
    if (kvTile > 0)
      kv = kvTile;
    if (simtSharedBytes(q, kv, op.getHeadDim(), op.getValueHeadDim(),
                        elementBytes) <= sharedBytes)
      return std::make_pair(q, kv);
  }
  return std::nullopt;
}

} // namespace mlir::attn

#endif // ATTN_LIB_TRANSFORMS_GPUTILESIZES_H
