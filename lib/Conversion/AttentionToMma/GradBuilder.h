//===- GradBuilder.h - the backward kernels builder -------------*- C++ -*-===//
//
// The builder behind BackwardKernel.h. Both kernels are one pattern with the
// roles of rows and columns swapped: a warp multiplies its own 16 rows (Q and
// dO, or K and V) by a streamed tile's rows (K and V, or Q and dO) into scores
// and dP (or their transposes), turns them element by element into P and dS = P
// (dP - Delta) * d score_mod / d s, and accumulates dS (and P) times the
// streamed tile into f32 registers. Streamed tiles land through cp.async in one
// or two stages; every contraction is mma.sync m16n8k16 on ldmatrix fragments,
// or on sm_90a a warpgroup's wgmma on swizzled tiles (whose accumulators lie in
// the same per-warp order); every fragment array is indexed by constants (the
// C++ loops unroll), so it lives in registers.
//
// Its parts live by concern: GradProducts.cpp (the contractions),
// GradElementwise.cpp (P and dS), GradCaptures.cpp (the wrt tensors'
// gradients), GradSchedule.cpp (the step loop), GradRows.cpp (row
// statistics and stores) and BackwardKernel.cpp (the two kernels).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTENTIONTOMMA_GRADBUILDER_H
#define ATTN_LIB_CONVERSION_ATTENTIONTOMMA_GRADBUILDER_H

#include "BackwardKernel.h"
#include "FragmentBuilder.h"

#include <functional>

namespace mlir::attn::mma {

/// The builder of both kernels. "Own" rows are the warp's 16 (the block's
/// q-tile or kv-tile), "columns" the streamed tile's rows.
class GradBuilder : FragmentBuilder {
public:
  explicit GradBuilder(BackwardKernel &kernel)
      : FragmentBuilder(kernel.b, kernel.loc,
                        kernel.op.getQuery().getType().getElementType()),
        k(kernel), op(kernel.op), d(op.getHeadDim()), dv(op.getValueHeadDim()),
        qTile(op.getKernelAttr().getQTile()),
        kvTile(op.getKernelAttr().getKvTile()),
        stages(op.getKernelAttr().getStages()), firstWidth(d / k.slices),
        secondWidth(dv / k.slices), qBlock(qTile), kvBlock(kvTile),
        warpgroup(op.getKernelAttr().isWarpgroupMma()) {
    swizzledStages = warpgroup;
    if (Value blockMask = op.getBlockMask()) {
      auto type = cast<BlockMaskType>(blockMask.getType());
      qBlock = type.getQBlock();
      kvBlock = type.getKvBlock();
    }
  }

  void buildQueryGrad();
  void buildKeyValueGrad();

private:
  /// Sizes, the thread's lane values and copying threads for blocks of
  /// `rows` own rows.
  void setUp(int64_t rows);
  /// The A fragment of the warp's own rows of `stage` at k-step `kk`.
  Fragment ownFragment(Value stage, int64_t kk);
  /// Every k-step's A fragment of `stage`, if the registers can hold
  /// them; none otherwise (each product loads its own).
  SmallVector<Fragment> keptFragments(Value stage, int64_t width);
  /// Waits for the block's copies, then for the whole block (and, for
  /// wgmma, makes the copied tiles visible to it).
  void tilesLanded();
  /// own rows . streamed rows^T: [16, columns] over `width`, for each
  /// pair of (own, kept) in `operands`; on wgmma, one group each, still
  /// running (landed waits for them).
  struct RowOperand {
    Value own;
    ArrayRef<Fragment> kept;
    Value streamed;
    int64_t width;
  };
  SmallVector<BandTile> rowProducts(ArrayRef<RowOperand> operands, Value buffer,
                                    int64_t columns);
  /// acc[16, width] += a . streamed[buffer][:, column:]: `a` the k-steps
  /// over the streamed rows, for each (a, streamed, acc, column) in `sums`
  /// (a null column is 0).
  struct Accumulation {
    ArrayRef<Fragment> a;
    Value streamed;
    BandTile &acc;
    Value column;
  };
  void accumulate(ArrayRef<Accumulation> sums, Value buffer);
  /// The sm_90a forms: wgmma from the swizzled tiles (A of rowProducts
  /// from the own tile, of accumulate from the registers).
  SmallVector<BandTile> warpgroupRowProducts(ArrayRef<RowOperand> operands,
                                             Value buffer, int64_t columns);
  void warpgroupAccumulate(ArrayRef<Accumulation> sums, Value buffer);

  /// P at one element: score `s` at query `q` (of head `h`) and key `kv`,
  /// whose row has logsumexp `lse`, with the masks when `masked`; and the
  /// score_mod's derivative there (null without a score_mod).
  std::pair<Value, Value> probabilityAt(Value s, Value h, Value q, Value kv,
                                        Value lse, bool masked);
  /// dS = P (dP - Delta) * factor at one element, 0 where P is.
  Value gradientAt(Value p, Value factor, Value dp, Value delta);
  /// P and dS on every element of `s` and of the dP `readyDp` returns,
  /// with the masks where `needsMasks` holds; `position(chunk, e)` gives
  /// (q, lse, delta, kv). dP is asked for only once every P is computed,
  /// so that its wgmmas run meanwhile. Returns P (if `withProbs`) and dS
  /// as the A operands of products over the columns.
  using Position = std::function<std::array<Value, 4>(int64_t, int64_t)>;
  std::pair<SmallVector<Fragment>, SmallVector<Fragment>>
  gradients(const BandTile &s, const std::function<BandTile()> &readyDp,
            Value h, Value needsMasks, bool withProbs,
            const Position &position);
  /// One element's share of the wrt tensors' gradients: its raw score,
  /// position, P and dS' = P (dP - Delta), the gradient of the modified
  /// score.
  struct CaptureTerm {
    Value score, q, kv, p, dsModified;
  };
  /// Adds every term of `terms` (elements of query head `h`) to the wrt
  /// tensors' accumulators (GradCaptures.cpp).
  void addCaptureTerms(ArrayRef<CaptureTerm> terms, Value h);
  /// Adds f32 `term` exactly to element `element` of the accumulators at
  /// byte address `base` (kCaptureWords i64 words an element).
  void addExactly(Value base, Value element, Value term);

  /// `tile` of rowProducts once at most `pending` wgmma groups issued
  /// after its own are still running (mma.sync products: as it is).
  BandTile landed(const BandTile &tile, int64_t pending);

  /// The streamed tiles a block steps over: how many, the first row of
  /// step j's tile, whether step j (from `first`) needs the masks, and,
  /// where they vary, the query head of step j and whether step j does
  /// anything (steps past a head's list do not).
  struct Schedule {
    Value steps;
    std::function<Value(Value j)> start;
    std::function<Value(Value j, Value first)> needsMasks;
    std::function<Value(Value j)> head, active;
  };
  /// The block's line of the block mask's lists (its q-block's kv-blocks,
  /// or its kv-block's q-blocks) for query head `h`, in steps: the full
  /// blocks' steps, then the partial ones', each block cut into
  /// `streamedBlock / streamedTile` tiles. `start(e)` is the first row of
  /// step e; a negative index becomes the first block past `limit` rows,
  /// which copies nothing and whose rows the masks drop.
  struct ListLine {
    Value full, total;
    std::function<Value(Value e)> start;
  };
  ListLine readLine(Value h, Value limit);
  /// Whether the step of entry `entry` of a line with `full` full steps
  /// needs the masks: a partial block's, one the problem's end cuts (`cut`),
  /// or, causal, one whose keys from `kv0` cross the diagonal of the rows
  /// from `q0` (a given block mask may list such a block as full).
  Value listedStepNeedsMasks(Value entry, Value full, Value cut, Value q0,
                             Value kv0);
  /// Copies step j's streamed tiles from row `first` into `buffer`.
  using CopyTile = std::function<void(Value j, Value first, Value buffer)>;
  /// Step j on the tiles in `buffer` (first row `first`): the carried
  /// accumulators after it.
  using Step =
      std::function<SmallVector<Value>(Value j, Value first, Value buffer,
                                       Value needsMasks, ValueRange carried)>;
  /// The loop over `schedule`'s steps from `inits`: step j's tiles land
  /// in buffer j % stages, the next step's copy overlapping this one.
  /// Ends with every copy landed and every warp past its reads.
  SmallVector<Value> stepLoop(const Schedule &schedule,
                              const CopyTile &copyTile, ValueRange inits,
                              const Step &step);

  /// Issues the cp.async copies of L and Delta of rows [q0, q0 + q-tile)
  /// of head `h` into `buffer` of the dK/dV block's stages (zeros past M).
  void copyRowStats(Value h, Value q0, Value buffer);
  /// Delta of the block's rows [q0, q0 + q-tile) of head `h`: to the
  /// Delta buffer and to the block's Delta rows.
  void storeDelta(Value q0, Value h);
  /// `acc` times `scale` into rows [row0, ...) of `dest` at `head` from
  /// column `column` (null: 0), rows at or past `limit` skipped.
  void storeRows(const BandTile &acc, Value dest, Value head, Value row0,
                 Value column, Value limit, double scale);

  BackwardKernel &k;
  AttentionGradOp op;
  int64_t d, dv, qTile, kvTile, stages;
  /// The block's column slice of the d-wide gradients (dQ, dK) and of the
  /// dv-wide one (dV): widths, and first columns (null: 0). The dQ
  /// kernel's slices split d alone: it uses only the first.
  int64_t firstWidth, secondWidth;
  Value firstColumn, secondColumn;
  /// The block mask's blocks (the tiles where it is derived), the own
  /// tile's line of its lists, and the rows of a streamed tile and block.
  int64_t qBlock, kvBlock, streamedTile = 0, streamedBlock = 0;
  Value listLine;
  bool warpgroup;
  /// Whether `gradients` adds the wrt tensors' terms (the dQ kernel's first
  /// column slice, which visits every element once).
  bool addsCaptures = false;
  Value m, n, queryHeads, group;
  Value lane, warpRow, g, t, t2;
  Value ownRowLane, ownColLane, keyRowLane, keyColLane, valueRowLane,
      valueColLane;
};

} // namespace mlir::attn::mma

#endif // ATTN_LIB_CONVERSION_ATTENTIONTOMMA_GRADBUILDER_H
