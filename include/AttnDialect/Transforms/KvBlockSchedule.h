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

/// Which kv-blocks a q-tile visits: every block (dense), or, for causal,
/// the blocks wholly below the diagonal without mask arithmetic followed by
/// those the diagonal cuts, with the blocks above it never visited.
struct KvBlockSchedule {
  enum class Kind { Dense, Causal };
  Kind kind = Kind::Dense;

  static KvBlockSchedule forOp(AttentionOp op) {
    return {op.getCausal() ? Kind::Causal : Kind::Dense};
  }

  /// The segments for a q-tile of `rows` rows at whole-problem offset
  /// `offQ`, over kv-blocks of `kvTile` keys from `offKV` in a key range of
  /// length `n`.
  SmallVector<KvSegment> segments(OpBuilder &b, Location loc, Value offQ,
                                  Value offKV, Value rows, Value n,
                                  int64_t kvTile) const;
};

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_KVBLOCKSCHEDULE_H
