//===- KvBlockSchedule.h - which kv-blocks a q-tile visits ------*- C++ -*-===//
//
// The flash loop's kv iteration, apart from the masked score computation:
// the runs of kv-blocks a q-tile visits and whether each needs mask
// arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_KVBLOCKSCHEDULE_H
#define ATTNDIALECT_TRANSFORMS_KVBLOCKSCHEDULE_H

#include "AttnDialect/IR/AttnOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// A run of consecutive kv-blocks [begin, end) (kv offsets local to the op,
/// stepped by the kv-tile) and whether its scores need the causal mask.
struct KvSegment {
  Value begin, end;
  bool applyCausal;
};

/// The kv-side lists of a block mask (FlexAttention's `BlockMask` fields):
/// the i32 tensors (or, in kernels, buffers) an attn.make_block_mask holds.
/// The full lists may be null.
struct BlockMaskLists {
  Value counts, indices, fullCounts, fullIndices;
  int64_t qBlock = 0, kvBlock = 0;

  /// The lists of `op`'s block mask; an op error and failure when it does
  /// not come from attn.make_block_mask (attn-lower-block-masks and
  /// attn-block-masks-to-gpu turn each attn.create_block_mask into one).
  static FailureOr<BlockMaskLists> of(AttentionOp op);
};

/// Which kv-blocks a q-tile visits: every block (dense); for causal, the
/// blocks wholly below the diagonal without mask arithmetic followed by
/// those the diagonal cuts, with the blocks above it never visited; or, with
/// a block mask, the partial blocks it lists (with the mask_mod) and then
/// the full ones (without).
struct KvBlockSchedule {
  enum class Kind { Dense, Causal, Lists };
  Kind kind = Kind::Dense;
  BlockMaskLists lists;

  static FailureOr<KvBlockSchedule> forOp(AttentionOp op);

  /// The segments (dense and causal schedules) for a q-tile of `rows` rows at
  /// whole-problem offset `offQ`, over kv-blocks of `kvTile` keys from `offKV`
  /// in a key range of length `n`.
  SmallVector<KvSegment> segments(OpBuilder &b, Location loc, Value offQ,
                                  Value offKV, Value rows, Value n,
                                  int64_t kvTile) const;
};

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_KVBLOCKSCHEDULE_H
