//===- BlockBuilder.h - the tensor-core kernel's builder --------*- C++ -*-===//
//
// The builder behind MmaKernel::build, shared by the files that hold its
// parts: MmaKernel.cpp (the core every generation shares: copies, masks
// and score_mod per register, softmax, epilogue), BlockLists.cpp (the
// block mask's schedule), one mainloop per MMA generation
// (MmaSyncMainloop.cpp, WgmmaMainloop.cpp) and WarpSpecialized.cpp (the
// persistent kernel's producer and tile scheduler around wgmma's loop).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTENTIONTOMMA_BLOCKBUILDER_H
#define ATTN_LIB_CONVERSION_ATTENTIONTOMMA_BLOCKBUILDER_H

#include "FragmentBuilder.h"
#include "MmaKernel.h"

#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <functional>

namespace mlir::attn::mma {

class BlockBuilder : FragmentBuilder {
public:
  explicit BlockBuilder(MmaKernel &kernel)
      : FragmentBuilder(kernel.b, kernel.loc,
                        kernel.op.getQueryType().getElementType()),
        k(kernel), op(kernel.op), d(op.getHeadDim()), dv(op.getValueHeadDim()),
        outElement(op.getOutputType().getElementType()),
        bands(kernel.tiles.bands),
        maskFitsI32(op.hasMaskMod() && kernel.regions.maskModFitsI32()) {
    swizzledStages = kernel.tiles.swizzled();
  }

  /// The mma.sync kernel, a block per q-tile (MmaSyncMainloop.cpp).
  void buildMmaSync();
  /// The wgmma kernel, a block per q-tile (WgmmaMainloop.cpp).
  void buildWarpgroup();
  /// The warp-specialized persistent kernel (WarpSpecialized.cpp).
  void buildWarpSpecialized();

private:
  /// waitGroups for tiles that wgmma reads, through the async proxy.
  void waitGroupsForWgmma(int32_t pending);

  /// Transposes a quad's 4 x 4 words: lane t's word j becomes lane j's
  /// word t.
  void transposeQuad(MutableArrayRef<Value> words);

  /// The A fragment of Q for band `band` and k-step `kk`, from shared
  /// memory.
  Fragment queryFragment(int64_t band, int64_t kk);
  /// S = Q K^T for the K tile in buffer `buffer` (0 or 1), per band; Q
  /// fragments [band][kk] from registers, or shared memory if none.
  SmallVector<BandTile> scores(Value buffer, ArrayRef<BandTile> queryFragments);
  /// score_mod, then the masks, at each register's position (`masked`), or
  /// score_mod alone.
  BandTile modifyScores(ArrayRef<Fragment> s, Value kv0, int64_t band,
                        bool masked);
  /// `x` where `keep`, -inf elsewhere: one select on the whole predicate
  /// (frozen, as the NVPTX backend otherwise splits a select on an `and`
  /// into a chain of selects, one per condition).
  Value maskScore(Value x, Value keep, Value negInf);
  /// What turns an mma score into a log2-domain score: the scale times
  /// log2(e) without a score_mod (log2(e) after one). Applied to the scores
  /// before the masks (scoreScale) unless it is positive and there is no
  /// score_mod; then it is folded into the softmax's exp2 (softmaxScale).
  double scoreScale() {
    return op.hasScoreMod() ? kLog2E : op.getScaleValue() * kLog2E;
  }
  double softmaxScale() {
    return !op.hasScoreMod() && scoreScale() > 0 ? scoreScale() : 1.0;
  }
  /// One kv step of the online softmax on the fragments: returns P as PV's
  /// A fragments, updates the running max and sum and sets the factors
  /// (rows g and g + 8) that rescale the accumulator.
  SmallVector<Fragment> softmax(SmallVector<Fragment> &s,
                                SmallVector<Value> &maxes,
                                SmallVector<Value> &sums,
                                SmallVector<Value> &corrections);
  /// acc *= the rows' corrections, per band.
  void rescale(SmallVector<BandTile> &acc, ArrayRef<Value> corrections);
  /// The masks and score_mod on S for step j (first key kv0), then the
  /// softmax: P per band; `corrections` per band and row.
  SmallVector<BandTile> scoresToProbs(SmallVector<BandTile> s, Value j,
                                      Value kv0, SmallVector<Value> &maxes,
                                      SmallVector<Value> &sums,
                                      SmallVector<Value> &corrections);
  /// The kv loop, its carried values (accumulators, maxes, sums) at exit.
  ValueRange syncLoop(Value steps);
  /// How wgmma's loop gets its K and V tiles. Step j of a tile is step
  /// `it` = base + j of a running count, and its tiles lie in buffer it % 2.
  struct TileStaging {
    Value base;
    /// Before step j (first key kv0) issues S_j and, with `previous`,
    /// P_j-1 V_j-1: K_j and V_j-1 are to be in their buffers.
    std::function<void(Value j, Value it, Value kv0, bool previous)> beforeStep;
    /// Every wgmma reading the K (V) tile of step `it` has finished.
    std::function<void(Value it)> keysRead, valuesRead;
    /// Before the last P V, of step `it`.
    std::function<void(Value it)> beforeLastAccumulate;
    std::function<void()> afterLoop;
  };
  /// The block copies its own tiles with cp.async, waiting for them and
  /// for every warp at each step.
  TileStaging copyStaging(Value steps);
  /// wgmma's loop, FlashAttention-3's intra-warpgroup pipelining: step j
  /// issues S_j and then O += P_j-1 V_j-1, and computes the softmax of S_j
  /// while the PV wgmma runs.
  SmallVector<Value> warpgroupLoop(Value steps, const TileStaging &staging);

  /// Issues the copy of step j's K tile into buffer `buffer`, if j is a
  /// step.
  void copyKeyTile(Value j, Value steps, Value buffer);
  /// Step j's first key, and whether its scores need the masks.
  Value kvStart(Value j);
  Value needsMasks(Value j, Value kv0);
  /// O += P V for the V tile in buffer `buffer`, per band.
  void accumulate(ArrayRef<BandTile> probs, Value buffer,
                  SmallVector<BandTile> &acc);
  /// wgmma's S = Q K^T for the K tile in buffer `buffer`, issued and
  /// committed: the warp's band (a quarter of the warpgroup's 64 rows) as
  /// accumulators in flight.
  SmallVector<Value> issueScores(Value buffer);
  /// The operands of wgmma's O += P V for the V tile in buffer `buffer`:
  /// per 16 keys, P's four i32 registers and V's descriptor. Made before
  /// the wgmmas in flight ahead of them are issued (ptxas serializes
  /// wgmmas whose inputs other instructions define in between).
  struct PvOperands {
    SmallVector<SmallVector<Value>> a;
    SmallVector<Value> descriptors;

    SmallVector<Value> inputs() const {
      SmallVector<Value> all(descriptors);
      for (const SmallVector<Value> &registers : a)
        all.append(registers);
      return all;
    }
  };
  PvOperands pvOperands(ArrayRef<Fragment> probs, Value buffer);
  /// wgmma's O += P V, issued and committed: `acc` becomes the
  /// accumulators in flight.
  void issueAccumulate(const PvOperands &operands, SmallVector<BandTile> &acc);
  /// The shared address of a stage's buffer `buffer`, as an index.
  Value stageAddress(Value stage, Value buffer);
  /// Per band: the accumulators, and the (max, sum) of rows g and g + 8.
  /// Staged through shared memory for 16-byte stores, or stored from the
  /// registers.
  void storeOutput(ArrayRef<BandTile> acc, ArrayRef<Value> sums,
                   ArrayRef<Value> maxes, bool staged);
  /// The loop's results (accumulators, the lanes' maxes and sums) to O and
  /// the logsumexp.
  void finishTile(ArrayRef<Value> results, bool staged);

  /// The sizes, offsets and copying threads, which every tile shares.
  void setUpThread();
  /// The thread's lane values (fragment rows and columns), which every
  /// tile shares; setUpTile makes them on the first tile.
  void setUpLanes();
  /// The values of the q-tile `qBlock()` of (k.batch, k.head); returns
  /// its kv steps.
  Value setUpTile(llvm::function_ref<Value()> qBlock);
  /// The start of a kernel of one q-tile per block: the thread and tile
  /// values, and the copies of Q and of K_0 issued; returns the kv steps.
  Value startBlockTile();

  /// The block mask's schedule for this block: its q-block's full blocks,
  /// then its partial ones, each cut into kv-tiles.
  struct ListSteps {
    Value steps, fullSteps, batch, head, row, lastIndex;
  };
  ListSteps readLists();
  /// The first key of list step j.
  Value listStart(const ListSteps &lists, Value j);
  /// Whether list step j (first key kv0) needs the masks: a partial block,
  /// or a full one that the kv tail or the causal diagonal cuts.
  Value listNeedsMasks(const ListSteps &lists, Value j, Value kv0);

  MmaKernel &k;
  AttentionOp op;
  int64_t d, dv;
  Type outElement;

  // Sizes, whole-problem offsets and the q heads per kv head.
  Value m, n, offB, offH, offQ, offKV, group;
  // The block's (b, h) in the whole problem, its kv head and first row.
  Value batchW, headW, kvHead, q0;
  // The thread: warp, lane, g = lane / 4, t = lane % 4, the warp's first
  // row in the block and the per-lane ldmatrix offsets.
  Value warpRow, lane, g, t, t2;
  Value keyRowLane, keyColLane, valueRowLane, valueColLane, queryRowLane,
      queryColLane;
  // wgmma: the descriptor of the warpgroup's Q rows.
  Value queryDescriptor;
  // mma.sync: the warp's Q fragments [band][k-step], if kept in registers.
  SmallVector<BandTile> queryFragments;
  // The block mask's lists, or the steps that lead without masks.
  ListSteps listSteps;
  Value fullSteps;
  // Per band, the two rows a lane's fragments hold: positions in the op's
  // rows and the clamped whole-problem q a region sees.
  SmallVector<std::array<Value, 2>> rowQ, regionQ;
  int64_t bands;
  /// Whether the mask_mod is evaluated in i32 (RegionInliner::maskModI32).
  bool maskFitsI32;
};

} // namespace mlir::attn::mma

#endif // ATTN_LIB_CONVERSION_ATTENTIONTOMMA_BLOCKBUILDER_H
