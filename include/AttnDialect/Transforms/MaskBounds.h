//===- MaskBounds.h - a mask_mod bounded over positions ---------*- C++ -*-===//
//
// Deciding a block of a block mask position by position costs a mask_mod
// evaluation per position. Interval arithmetic on the mask_mod's ops decides
// most blocks at once: it bounds every value of the region over a box of
// (q, kv) positions, and when the region's i1 result is the same on the
// whole box, the block is full or empty without looking at its positions.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_MASKBOUNDS_H
#define ATTNDIALECT_TRANSFORMS_MASKBOUNDS_H

#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// What interval arithmetic says of a mask_mod on a box of positions:
/// `mayKeep` is false only when no position of the box is kept, `mayDrop`
/// false only when every one is. Both are true when the arithmetic cannot
/// tell. `exact` is false when the arithmetic gave up (a bound that could
/// overflow, a captured read out of range or over more than the span the
/// bounds read); then both are true.
struct MaskBounds {
  Value mayKeep, mayDrop, exact;
};

/// Lanes of a warp that bound boxes of the same rows (`rows`) or of the same
/// columns (`columns`): a captured read whose index depends on the rows
/// (columns), b and h alone is the same on those lanes, so each reads a part
/// of it and butterfly shuffles combine the parts. The lanes of a group are
/// those this lane reaches by the xor masks; `rank` numbers them from 0.
struct SharedReads {
  struct Group {
    Value rank;
    SmallVector<int64_t> xorMasks;
    /// Index span each read is expected to cover (the box's side): the
    /// group's lanes split it.
    int64_t span = 1;
  };
  Group rows, columns;
};

/// Whether boundMaskMod can bound every op of `maskMod`: integer and index
/// arithmetic (add, sub, mul, division and remainder by positive constants,
/// min, max, casts), comparisons, i1 logic, select, and reads of captured
/// integer tensors.
bool canBoundMaskMod(Region &maskMod);

/// Emits, at the builder's point, the bounds of `maskMod` (which
/// canBoundMaskMod accepts) over the positions q in [qFirst, qLast] and kv
/// in [kvFirst, kvLast] (index values, not empty) of batch `b` and head
/// `h`. A captured read is bounded by reading every element its index
/// bounds cover, at most `maxReadSpan` of them.
/// With `shared` (all lanes of the warp at the builder's point, converged
/// and with b and h the same on all), reads are shared as SharedReads says.
MaskBounds boundMaskMod(OpBuilder &builder, Location loc, Region &maskMod,
                        Value b, Value h, Value qFirst, Value qLast,
                        Value kvFirst, Value kvLast, int64_t maxReadSpan,
                        const SharedReads *shared = nullptr);

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_MASKBOUNDS_H
