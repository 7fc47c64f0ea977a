//===- KernelTiles.h - the tiles of the GPU attention kernels ---*- C++ -*-===//
//
// The one tile chooser of the attention kernels and the shared memory their
// tiles take: attn-choose-kernel records its choice as an #attn.kernel, and
// the kernel builders lay out shared memory by the same description.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_CONVERSION_KERNELTILES_H
#define ATTNDIALECT_CONVERSION_KERNELTILES_H

#include "AttnDialect/IR/AttnOps.h"

#include <cstdint>
#include <optional>

namespace mlir::attn {

//===----------------------------------------------------------------------===//
// The SIMT kernel
//===----------------------------------------------------------------------===//

/// Shared memory of one block of the SIMT kernel with q x kv tiles: Q, K and
/// V in the input type, their rows padded against bank conflicts; scores
/// and probs, the accumulator and its rescaled copy in f32; the row
/// statistics; 16-byte alignment of each buffer. An upper bound of what
/// attn-map-forall-to-gpu assigns (test/Pipelines/tile-defaults.test
/// compiles the choice for each chip).
int64_t simtSharedBytes(int64_t q, int64_t kv, int64_t d, int64_t dv,
                        int64_t elementBytes);

/// (q-tile, kv-tile) for `op`'s SIMT blocks: the given ones where positive,
/// the others the largest of 64x64, 64x32, 32x32, 32x16, 16x16, 16x8 and
/// 8x8 whose tiles fit `sharedBytes`; std::nullopt when none fits.
std::optional<std::pair<int64_t, int64_t>> chooseSimtTiles(AttentionOp op,
                                                           int64_t qTile,
                                                           int64_t kvTile,
                                                           int64_t sharedBytes);

namespace mma {

//===----------------------------------------------------------------------===//
// The tensor-core kernels
//===----------------------------------------------------------------------===//

/// The warp-specialized kernel's producer warpgroup, and the registers
/// setmaxnreg leaves it and gives each consumer thread by default: 40 x 128
/// + 232 x 256 is the 64512 that 384 threads of 168 registers hold at
/// launch. With fewer, the producer spills its tile state.
constexpr int64_t kProducerThreads = 128;
constexpr int64_t kProducerRegisters = 40;
constexpr int64_t kConsumerRegisters = 232;
/// Its mbarriers: full and empty for each of (up to) two Q, K and V
/// buffers and tile slots.
constexpr int64_t kBarriers = 16;
/// The alignment of a swizzled tile's base: one period of the 128-byte
/// swizzle, a whole number of the others'.
constexpr int64_t kSwizzleAlignment = 1024;

/// The swizzle layout of a wgmma operand tile whose rows hold `width`
/// 16-bit elements: rows of 128 bytes (64 columns, a wider row split into
/// such tiles), or of the row's own 64 or 32 bytes at widths 32 and 16.
/// Element (row, col) of a tile lies at byte rowBytes row + 16 ((col / 8)
/// xor phase(row)) + 2 (col % 8), where phase(row) = (row / (128 /
/// rowBytes)) % (rowBytes / 16): the layouts the hardware's 128-, 64- and
/// 32-byte swizzles (of wgmma's descriptors and TMA) read.
struct Swizzle {
  int64_t rowBytes;

  static Swizzle forWidth(int64_t width) {
    return {width >= 64 ? 128 : 2 * width};
  }
  /// Elements in a row of one tile.
  int64_t columns() const { return rowBytes / 2; }
  /// Consecutive rows that share a phase, and the phases.
  int64_t rowsPerPhase() const { return 128 / rowBytes; }
  int64_t phases() const { return rowBytes / 16; }
  /// The layout field of a wgmma descriptor: 1, 2, 3 for 128, 64, 32 bytes.
  int64_t descriptorLayout() const {
    return rowBytes == 128 ? 1 : rowBytes == 64 ? 2 : 3;
  }
};

/// Rows of a block, keys per kv step, bands of 16 rows per warp (a warp's
/// K and V fragments feed each of its bands) and the K/V buffers (stages).
/// With `warpgroup`, both contractions are sm_90a wgmma: each warpgroup
/// owns 64 rows (a band per warp) and Q, K and V lie in shared memory in
/// a swizzle layout (Swizzle). The C++ side of #attn.kernel.
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
  /// Warp-specialized: the registers setmaxnreg leaves each producer and
  /// consumer thread.
  int64_t producerRegisters = 0;
  int64_t consumerRegisters = 0;

  KernelKind kind() const {
    return warpSpecialized ? KernelKind::wgmma_ws
           : warpgroup     ? KernelKind::wgmma
                           : KernelKind::mma_sync;
  }
  /// Whether the tiles lie in shared memory in a swizzle layout
  /// (wgmma's operands), or in rows padded by 16 bytes.
  bool swizzled() const { return warpgroup; }

  /// The warps that compute (consumers, when warp-specialized).
  int64_t warps() const { return qTile / (16 * bands); }
  int64_t threads() const {
    return 32 * warps() + (warpSpecialized ? kProducerThreads : 0);
  }

  /// The tiles `kernel` (of a tensor-core kind) records, and back.
  static MmaTiles of(KernelAttr kernel);
  KernelAttr toAttr(MLIRContext *context) const;
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

  static MmaShape of(AttentionOp op);
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

/// Whether the wgmma kernel serves `shape`: head dims of 16, 32, 64, 128
/// or 256.
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

//===----------------------------------------------------------------------===//
// The backward's kernels
//===----------------------------------------------------------------------===//

/// The shared memory of a backward block: the block's own rows (Q and dO,
/// or K and V) and `stages` buffers of the rows it steps over (K and V, or
/// Q and dO), 16-bit with rows padded by 16 bytes or, for wgmma, in its
/// swizzle layout (Swizzle) from a 1024-byte-aligned base that the block
/// finds within its first kSwizzleAlignment bytes. After them, the dQ
/// block's Delta (f32 per row), or the dK/dV block's L (f32) and Delta
/// (its f32 bits) of each stage's rows.
struct GradSharedLayout {
  int64_t ownFirst = 0, ownSecond = 0, streamedFirst = 0, streamedSecond = 0,
          delta = 0, lse = 0, total = 0;

  /// `own` rows of widths (first, second), `streamed` rows per stage; the
  /// dQ block's (`queryGrad`) or the dK/dV block's.
  static GradSharedLayout of(int64_t own, int64_t streamed, int64_t stages,
                             int64_t first, int64_t second, bool queryGrad,
                             bool swizzled);
  /// The larger block's bytes of the two kernels of `kernel`'s tiles.
  static int64_t bytesOf(KernelAttr kernel, int64_t d, int64_t dv);
};

} // namespace mma
} // namespace mlir::attn

#endif // ATTNDIALECT_CONVERSION_KERNELTILES_H
