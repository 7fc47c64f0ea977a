//===- KernelTiles.cpp - tiles of the GPU attention kernels ---------------===//
//
// The shared memory a block's tiles take and the choice of tiles: the
// largest that fit the chip's shared memory and leave the fragments in
// registers (checked by ptxas -v in test/Pipelines/mma-spills.test).
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Conversion/KernelTiles.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

int64_t mlir::attn::simtSharedBytes(int64_t q, int64_t kv, int64_t d,
                                    int64_t dv, int64_t elementBytes) {
  int64_t inputs = (q * d + kv * d + kv * dv) * elementBytes;
  int64_t padding = (q + 2 * kv) * 16;
  int64_t f32Tiles = (2 * q * kv + 2 * q * dv) * 4;
  int64_t rows = 12 * q * 4;
  return inputs + padding + f32Tiles + rows + 16 * 16;
}

std::optional<std::pair<int64_t, int64_t>>
mlir::attn::chooseSimtTiles(AttentionOp op, int64_t qTile, int64_t kvTile,
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

MmaTiles MmaTiles::of(KernelAttr kernel) {
  MmaTiles tiles;
  tiles.qTile = kernel.getQTile();
  tiles.kvTile = kernel.getKvTile();
  tiles.bands = kernel.getBands();
  tiles.stages = kernel.getStages();
  tiles.warpgroup = kernel.isWarpgroupMma();
  tiles.warpSpecialized = kernel.getKind() == KernelKind::wgmma_ws;
  tiles.queryBuffers = kernel.getQueryBuffers();
  tiles.producerRegisters = kernel.getProducerRegisters();
  tiles.consumerRegisters = kernel.getConsumerRegisters();
  return tiles;
}

KernelAttr MmaTiles::toAttr(MLIRContext *context) const {
  return KernelAttr::get(context, kind(), qTile, kvTile, bands, stages,
                         queryBuffers, producerRegisters, consumerRegisters);
}

MmaShape MmaShape::of(AttentionOp op) {
  MmaShape shape{op.getHeadDim(), op.getValueHeadDim(),
                 op.getOutputType().getElementType().getIntOrFloatBitWidth() /
                     8,
                 op.hasMaskMod() || op.hasScoreMod()};
  if (op.hasMaskMod() && !op.hasScoreMod()) {
    int64_t reads = 0;
    op.getMaskMod().walk([&](tensor::ExtractOp) { ++reads; });
    shape.lightMask = reads <= 2;
  }
  return shape;
}

/// A shared row of `width` elements, padded by 16 bytes.
static int64_t paddedWidth(int64_t width, int64_t elementBytes) {
  return width + 16 / elementBytes;
}

/// Bytes of a shared tile of `rows` rows of `width` 16-bit elements.
static int64_t tileBytes(const MmaTiles &tiles, int64_t rows, int64_t width) {
  return rows * (tiles.swizzled() ? width : paddedWidth(width, 2)) * 2;
}

SharedLayout mma::sharedLayout(const MmaTiles &tiles, const MmaShape &shape) {
  SharedLayout layout;
  layout.queryBytes = tileBytes(tiles, tiles.qTile, shape.headDim);
  layout.keyBytes = tileBytes(tiles, tiles.kvTile, shape.headDim);
  layout.valueBytes = tileBytes(tiles, tiles.kvTile, shape.valueHeadDim);
  int64_t output = tiles.qTile *
                   paddedWidth(shape.valueHeadDim, shape.outputBytes) *
                   shape.outputBytes;
  // The warp-specialized kernel stores O from registers.
  layout.key = tiles.warpSpecialized ? tiles.queryBuffers * layout.queryBytes
                                     : std::max(layout.queryBytes, output);
  if (tiles.swizzled())
    layout.key = llvm::alignTo(layout.key, kSwizzleAlignment);
  layout.value = layout.key + tiles.stages * layout.keyBytes;
  layout.barriers = layout.value + tiles.stages * layout.valueBytes;
  layout.tileSlots = layout.barriers + 8 * kBarriers;
  layout.total = tiles.warpSpecialized ? layout.tileSlots + 8 : layout.barriers;
  if (tiles.swizzled())
    layout.total += kSwizzleAlignment;
  return layout;
}

bool mma::servesWarpgroupMma(const MmaShape &shape) {
  // Whole swizzled tiles: 16, 32, or 64-column tiles of 128-byte rows.
  auto served = [](int64_t d) {
    return d == 16 || d == 32 || d == 64 || d == 128 || d == 256;
  };
  return served(shape.headDim) && served(shape.valueHeadDim);
}

bool mma::keepsQueryInRegisters(const MmaTiles &tiles, const MmaShape &shape) {
  return shape.headDim * tiles.bands <= 128;
}

/// `tiles` with the q-tile, kv-tile and stages that `given` sets (nonzero).
static MmaTiles withGiven(MmaTiles tiles, const MmaTiles &given) {
  if (given.qTile > 0)
    tiles.qTile = given.qTile;
  if (given.kvTile > 0)
    tiles.kvTile = given.kvTile;
  if (given.stages > 0)
    tiles.stages = given.stages;
  return tiles;
}

/// The wgmma kernel's tiles: two warpgroups of 64 rows, FlashAttention-3's
/// 128 x 128 tiles (a light mask_mod fits them too), or kv-tiles of 64
/// where other mask and score regions take registers.
static std::optional<MmaTiles>
chooseWarpgroupTiles(const MmaShape &shape, const MmaTiles &given,
                     int64_t warps, int64_t sharedMemoryPerBlock) {
  static constexpr MmaTiles dense[] = {
      {128, 128, 1, 2, true}, {128, 64, 1, 2, true}, {64, 64, 1, 2, true}};
  ArrayRef<MmaTiles> candidates = dense;
  if (shape.regions && !shape.lightMask)
    candidates = candidates.drop_front();
  for (MmaTiles candidate : candidates) {
    MmaTiles tiles = withGiven(candidate, given);
    tiles.warpSpecialized = given.warpSpecialized;
    if (warps > 0 && given.qTile == 0)
      tiles.qTile = 16 * warps;
    // A warpgroup owns 64 rows, a warp one band of them; its loop keeps
    // two K/V buffers.
    if (tiles.qTile % 64 != 0 || (warps > 0 && tiles.qTile != 16 * warps) ||
        given.bands > 1 || tiles.stages != 2)
      continue;
    // Warp-specialized: two Q buffers where they fit, else one (D = 256).
    if (tiles.warpSpecialized) {
      tiles.producerRegisters = kProducerRegisters;
      tiles.consumerRegisters = kConsumerRegisters;
    }
    for (int64_t queryBuffers : {2, 1}) {
      tiles.queryBuffers = tiles.warpSpecialized ? queryBuffers : 1;
      if (sharedLayout(tiles, shape).total <= sharedMemoryPerBlock)
        return tiles;
    }
  }
  return std::nullopt;
}

std::optional<MmaTiles> mma::chooseTiles(const MmaShape &shape,
                                         const MmaTiles &given, int64_t warps,
                                         int64_t sharedMemoryPerBlock) {
  if (given.warpgroup)
    return chooseWarpgroupTiles(shape, given, warps, sharedMemoryPerBlock);
  // Larger tiles first, in the shapes of FlashAttention-2: 128-row blocks
  // of 4 warps, each with two bands of 16 rows that share every K and V
  // fragment (half the shared-memory reads per mma of one band). Without
  // mask_mod or score_mod regions two bands fit the registers with
  // kv-tiles of 64 up to D = 64 and of 32 up to D = 128, and so they do
  // above D = 64 for a light mask_mod (whose partial blocks then cost
  // ptxas a few bytes of spill on sm_90, less than one band would);
  // other kernels with regions keep one band, and so do D <= 32 ones, for
  // which ptxas then targets 128 registers and spills. Above D = 128 the
  // accumulators of one band alone take 128 registers.
  static constexpr MmaTiles narrow[] = {{128, 64, 2}, {128, 32, 2},
                                        {64, 32, 2},  {32, 32, 2},
                                        {32, 16, 2},  {16, 16, 1}};
  static constexpr MmaTiles wideDense[] = {
      {128, 32, 2}, {64, 32, 2}, {32, 32, 2}, {32, 16, 2}, {16, 16, 1}};
  static constexpr MmaTiles wide[] = {{128, 64, 1}, {64, 64, 1}, {64, 32, 1},
                                      {64, 16, 1},  {32, 16, 1}, {16, 16, 1}};
  int64_t widest = std::max(shape.headDim, shape.valueHeadDim);
  ArrayRef<MmaTiles> candidates = ArrayRef(wide);
  if (widest > 32 && widest <= 64 && !shape.regions)
    candidates = narrow;
  else if (widest > 64 && widest <= 128 && (!shape.regions || shape.lightMask))
    candidates = wideDense;
  if (widest > 128)
    candidates = candidates.drop_front();
  for (MmaTiles candidate : candidates) {
    MmaTiles tiles = withGiven(candidate, given);
    if (given.bands > 0)
      tiles.bands = given.bands;
    else if (tiles.qTile % (16 * tiles.bands) != 0)
      tiles.bands = 1;
    if (warps > 0 && given.qTile == 0) {
      // Warps fix the q-tile, or with a q-tile given, the bands.
      tiles.qTile = 16 * tiles.bands * warps;
    } else if (warps > 0) {
      tiles.bands = tiles.qTile / (16 * warps);
      if (tiles.qTile % (16 * warps) != 0 || tiles.bands > 2 ||
          (given.bands > 0 && tiles.bands != given.bands))
        continue;
    }
    if (sharedLayout(tiles, shape).total <= sharedMemoryPerBlock)
      return tiles;
  }
  return std::nullopt;
}

GradSharedLayout mma::GradSharedLayout::of(int64_t own, int64_t streamed,
                                           int64_t stages, int64_t first,
                                           int64_t second, bool queryGrad,
                                           bool swizzled) {
  // Swizzled tiles of 64 or 128 rows are whole multiples of 1024 bytes.
  auto tileBytes = [&](int64_t rows, int64_t width) {
    return rows * (swizzled ? width : paddedWidth(width, 2)) * 2;
  };
  GradSharedLayout layout;
  layout.ownSecond = tileBytes(own, first);
  layout.streamedFirst = layout.ownSecond + tileBytes(own, second);
  layout.streamedSecond =
      layout.streamedFirst + stages * tileBytes(streamed, first);
  layout.delta = layout.streamedSecond + stages * tileBytes(streamed, second);
  layout.lse = layout.delta + 4 * (queryGrad ? own : stages * streamed);
  layout.total = layout.lse + (queryGrad ? 0 : 4 * stages * streamed) +
                 (swizzled ? kSwizzleAlignment : 0);
  return layout;
}

int64_t mma::GradSharedLayout::bytesOf(KernelAttr kernel, int64_t d,
                                       int64_t dv) {
  int64_t q = kernel.getQTile(), kv = kernel.getKvTile();
  int64_t stages = kernel.getStages();
  bool swizzled = kernel.isWarpgroupMma();
  return std::max(
      GradSharedLayout::of(q, kv, stages, d, dv, true, swizzled).total,
      GradSharedLayout::of(kv, q, stages, d, dv, false, swizzled).total);
}
