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

#include "AttnDialect/Conversion/KernelTiles.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/KvBlockSchedule.h"
#include "AttnDialect/Transforms/RegionInliner.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn::mma {

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
  /// whose boxes are a tile's rows by one swizzled tile's columns.
  Value queryMap, keyMap, valueMap;
  /// Block and thread ids and the grid's x extent.
  Value blockX, gridX, head, batch, tid;

  void build();
};

} // namespace mlir::attn::mma

#endif // ATTN_LIB_CONVERSION_ATTENTIONTOMMA_MMAKERNEL_H
