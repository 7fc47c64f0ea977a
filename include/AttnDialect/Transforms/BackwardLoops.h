//===- BackwardLoops.h - attn.attention_grad as loops -----------*- C++ -*-===//
//
// The attention backward on tensors, for the CPU pipeline: per batch and
// query head, one loop over kv-tiles that recomputes each tile's
// probabilities from Q, K and the logsumexp and feeds all three gradients
// from them (dQ carried by the loop, dK and dV accumulated in f32 across
// the query heads that share a kv head, in order: deterministic).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_BACKWARDLOOPS_H
#define ATTNDIALECT_TRANSFORMS_BACKWARDLOOPS_H

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/RegionInliner.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::attn {

/// attn-decompose's default kv-tile, which the op's own decomposition uses
/// (Decompose.cpp checks that they agree).
constexpr int64_t kDefaultBackwardKvTile = 64;

/// Replaces every attn.attention_grad under `root` by its loops, with
/// kv-tiles of `kvTile` keys and checked regions when `boundsChecks` is set
/// (declaring attnReportRegionError in `root`, a module, when host code
/// needs it).
LogicalResult decomposeAttentionGradOps(Operation *root, int64_t kvTile,
                                        bool boundsChecks, StringRef passName);

/// Attaches attn.attention_grad's decomposition (AggregatedOpInterface,
/// which the dialect promises) to the op: the same loops, with kv-tiles of
/// kDefaultBackwardKvTile keys and unchecked regions.
void registerAttentionGradDecomposition(DialectRegistry &registry);

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_BACKWARDLOOPS_H
