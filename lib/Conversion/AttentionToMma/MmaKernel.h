//===- MmaKernel.h - the body of the mma.sync attention kernel --*- C++ -*-===//
//
// One block computes q-tile rows of one (batch, head) of attn.attention on
// tensor cores; each warp owns 16 of the rows. The fragment layout is the
// mma.sync m16n8 accumulator's: lane l holds, for each 8-column chunk,
// columns 2(l % 4) and 2(l % 4) + 1 of rows l / 4 and l / 4 + 8.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTENTIONTOMMA_MMAKERNEL_H
#define ATTN_LIB_CONVERSION_ATTENTIONTOMMA_MMAKERNEL_H

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/KvBlockSchedule.h"
#include "AttnDialect/Transforms/RegionInliner.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace mlir::attn::mma {

/// The warp-specialized kernel's producer warpgroup, and the registers
/// setmaxnreg leaves it and gives each consumer thread: 40 x 128 + 232 x
/// 256 is the 64512 that 384 threads of 168 registers hold at launch.
/// With fewer, the producer spills its tile state.
constexpr int64_t kProducerThreads = 128;
constexpr int64_t kProducerRegisters = 40;
constexpr int64_t kConsumerRegisters = 232;
/// Its mbarriers: full and empty for each of (up to) two Q, K and V
/// buffers and tile slots.
constexpr int64_t kBarriers = 16;

/// Rows of a block, keys per kv step, bands of 16 rows per warp (a warp's
/// K and V fragments feed each of its bands) and the K/V buffers (stages).
/// With `warpgroup`, both contractions are sm_90a wgmma: each warpgroup
/// owns 64 rows (a band per warp) and Q, K and V lie in shared memory in
/// the 128-byte swizzle layout.
struct MmaTiles {
  int64_t qTile = 0;
  int64_t kvTile = 0;
  int64_t bands = 1;
  int64_t stages = 2;
  bool warpgroup = false;
  /// wgmma only: a producer warpgroup copies the tiles for the others, in
  /// a persistent kernel (WarpSpecialized.cpp).
  bool warpSpecialized = false;
  /// Warp-specialized: Q buffers. With two, the next tile's Q lands while
  /// this one runs; D = 256 has room for one.
  int64_t queryBuffers = 1;

  /// The warps that compute (consumers, when warp-specialized).
  int64_t warps() const { return qTile / (16 * bands); }
  int64_t threads() const {
    return 32 * warps() + (warpSpecialized ? kProducerThreads : 0);
  }
};

/// What a kernel computes, as far as its tiles and shared memory depend
/// on it.
struct MmaShape {
  int64_t headDim;
  int64_t valueHeadDim;
  int64_t outputBytes;
  /// Whether mask_mod or score_mod regions run per element (they take
  /// registers).
  bool regions;
  /// Whether the only region is a mask_mod with at most two captured reads
  /// (a sliding window, documents): two bands still fit its registers.
  bool lightMask = false;
};

/// Where a block's buffers lie in its dynamic shared memory, in bytes from
/// its base (for wgmma, the base aligned in the kernel): the Q buffers at 0
/// (after the kv loop, the output rows alias them), the K stages at `key`,
/// the V stages at `value` and, when warp-specialized, the mbarriers and
/// tile slots. Rows are padded by 16 bytes, or swizzled (not padded) for
/// wgmma. The one description that both the tile choice and the kernel's
/// views use.
struct SharedLayout {
  int64_t queryBytes, keyBytes, valueBytes;
  int64_t key, value, barriers, tileSlots;
  /// What a block asks for: the buffers and, for wgmma, room to align the
  /// base, which the launch does not promise.
  int64_t total;
};
SharedLayout sharedLayout(const MmaTiles &tiles, const MmaShape &shape);

/// Whether the wgmma kernel serves `shape`: head dims of 64, 128 or 256.
bool servesWarpgroupMma(const MmaShape &shape);

/// Whether the kernel keeps a warp's Q fragments in registers (D times its
/// bands at most 128); otherwise it reads them from shared memory at each
/// step.
bool keepsQueryInRegisters(const MmaTiles &tiles, const MmaShape &shape);

/// The tiles for `shape` (FlashAttention-2's choices where they fit, or
/// FlashAttention-3's with `given.warpgroup`), honouring the nonzero fields
/// of `given` and, if nonzero, `warps` per block; none if nothing fits
/// `sharedMemoryPerBlock`.
std::optional<MmaTiles> chooseTiles(const MmaShape &shape,
                                    const MmaTiles &given, int64_t warps,
                                    int64_t sharedMemoryPerBlock);

/// Builds a block's work inside a gpu.launch body. The memrefs are the
/// op's operands as buffers ([B, H, len, D]); `lse` may be null.
struct MmaKernel {
  OpBuilder &b;
  Location loc;
  AttentionOp op;
  MmaTiles tiles;
  RegionInliner regions;

  Value query, key, value, output, lse;
  /// The block mask's lists as i32 buffers, when the op has one (counts
  /// null otherwise): the block visits the kv-blocks its q-block lists.
  BlockMaskLists lists;
  /// The block's shared memory: Q [q-tile, D + pad], K [stages, kv-tile,
  /// D + pad], V [stages, kv-tile, Dv + pad] and the output rows [q-tile,
  /// Dv + pad] that alias Q (wgmma: swizzled tiles; warp-specialized:
  /// tiles.queryBuffers Q buffers, and O goes from registers).
  Value queryStage, keyStage, valueStage, outputStage;
  /// Warp-specialized: the mbarriers (i64 [kBarriers]), the tile slots
  /// (i32 [2]) and the workspace whose word 0 counts the tiles taken and
  /// word 1 the blocks done.
  Value barriers, tileSlots, workspace;
  /// Warp-specialized: the TMA tensor maps of Q, K and V (attn.tensor_map),
  /// whose boxes are a tile's rows by one 64-column swizzled tile.
  Value queryMap, keyMap, valueMap;
  /// Block and thread ids and the grid's x extent.
  Value blockX, gridX, head, batch, tid;

  void build();
};

} // namespace mlir::attn::mma

#endif // ATTN_LIB_CONVERSION_ATTENTIONTOMMA_MMAKERNEL_H
