//===- FlashLoop.h - attn.attention as a flash loop on tensors --*- C++ -*-===//
//
// The FlashAttention forward of one (tiled) attn.attention: for each batch
// and head, a loop over kv-blocks carrying the output accumulator and the
// running softmax statistics. Which kv-blocks are visited, and which of
// them need mask arithmetic, is the kv-block schedule; the masked score
// computation does not depend on it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_FLASHLOOP_H
#define ATTNDIALECT_TRANSFORMS_FLASHLOOP_H

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/KvBlockSchedule.h"
#include "AttnDialect/Transforms/RegionInliner.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn {

struct FlashLoopOptions {
  int64_t kvTile = 64;
  RegionChecks checks = RegionChecks::None;
  KvBlockSchedule schedule;
};

/// Builds the loop nest of `op` at the builder's insertion point and returns
/// the values that replace the op's results.
SmallVector<Value> buildFlashLoop(OpBuilder &b, AttentionOp op,
                                  const FlashLoopOptions &options);

/// Whether `op` will run in a GPU kernel: inside a loop mapped to GPU
/// blocks or threads, or a GPU launch or function.
bool inGpuKernel(Operation *op);

/// Declares attnReportRegionError, which host-side region checks call, in
/// `root` (a module) once; an error when `root` is not a module.
LogicalResult declareRegionErrorFunction(Operation *root, StringRef passName);

/// Replaces every attn.attention under `root` by its flash loop, with the
/// kv-tile the tile pass recorded on the op (or `defaultKvTile`), checked
/// regions when `boundsChecks` is set, and the op's own schedule. Declares
/// attnReportRegionError in `root` (a module) when host code needs it.
LogicalResult decomposeAttentionOps(Operation *root, int64_t defaultKvTile,
                                    bool boundsChecks, StringRef passName);

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_FLASHLOOP_H
