//===- BackwardKernel.h - attn.attention_grad on tensor cores ---*- C++ -*-===//
//
// The two kernels of the backward, FlashAttention-2's split into a kernel
// per gradient side so that no gradient is summed by atomics: one block of
// q_tile / 16 warps per q-tile computes Delta and dQ of its rows, stepping
// over the keys; one block of kv_tile / 16 warps per kv-tile computes dK
// and dV of its keys, stepping over the rows of every query head that
// reads them (head dims over 128: a block per column slice of the tile's
// gradients). Each warp owns 16 rows (keys); both recompute P from the
// forward's logsumexp. The dQ kernel runs first and leaves Delta for the
// other.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTENTIONTOMMA_BACKWARDKERNEL_H
#define ATTN_LIB_CONVERSION_ATTENTIONTOMMA_BACKWARDKERNEL_H

#include "AttnDialect/Conversion/KernelTiles.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/RegionInliner.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn::mma {

/// i64 words of the workspace per element of a wrt tensor's gradient: the
/// exact sum of its terms, one word per 8 binary exponents of f32 (32), and
/// a count of the non-finite terms. docs/Backward.md says why.
constexpr int64_t kCaptureWords = 33;

/// Builds a backward kernel's body inside its gpu.launch. The memrefs are
/// the op's operands as buffers; `delta` is an i32 buffer of B * Hq * M
/// words (the zeroed workspace) that holds Delta's f32 bits.
struct BackwardKernel {
  BackwardKernel(OpBuilder &b, Location loc, AttentionGradOp op,
                 RegionInliner regions)
      : b(b), loc(loc), op(op), regions(std::move(regions)) {}

  OpBuilder &b;
  Location loc;
  AttentionGradOp op;
  RegionInliner regions;

  Value query, key, value, output, gradOutput, lse, delta, dq, dk, dv;
  /// Per wrt tensor, the byte offset in the workspace (`delta`) of its
  /// gradient's accumulators, kCaptureWords i64 words per element, zero
  /// when the dQ kernel starts.
  SmallVector<Value> captureOffsets;
  /// The shared tiles: the block's own [rows, width + pad] (Q and dO, or
  /// K and V), the streamed [stages, rows, width + pad] (K and V, or Q and
  /// dO; for wgmma [stages, width / columns, rows, columns] swizzled), and
  /// the dQ block's Delta [q-tile] f32, or the dK/dV block's Delta (i32
  /// words) and L (f32) [stages, q-tile] of its streamed rows.
  Value ownFirst, ownSecond, streamedFirst, streamedSecond, deltaStage,
      lseStage;
  /// The block's tile, (query or kv) head and batch; the thread.
  Value block, head, batch, tid;
  /// Head dims over AttentionGradOp::kMaxGradSliceWidth split the
  /// gradients' columns into `slices` equal slices: the block computes
  /// slice `slice` of them (null with one slice).
  int64_t slices = 1;
  Value slice;
  /// The block mask's lists of the block's side, when the op has a
  /// mask_mod (null otherwise): i32 counts [B', H', lines] and indices
  /// [B', H', lines, blocks] of the partial and the full blocks, in blocks
  /// of the tiles; the kv side (the kv-blocks of each q-block) for the dQ
  /// kernel, the q side for the dK/dV kernel. B' and H' are 1 where the
  /// mask_mod ignores b or h.
  Value counts, indices, fullCounts, fullIndices;

  /// Delta and dQ of the block's q-tile.
  void buildQueryGrad();
  /// dK and dV of the block's kv-tile.
  void buildKeyValueGrad();
};

} // namespace mlir::attn::mma

#endif // ATTN_LIB_CONVERSION_ATTENTIONTOMMA_BACKWARDKERNEL_H
