//===- FlashLoop.cpp - attn.attention as a flash loop on tensors ----------===//
//
// The FlashAttention forward on tensors: a loop over kv-blocks carrying the
// output accumulator and the running softmax statistics, with the two
// contractions kept as tile-level linalg.generic ops (so that a tensor-core
// lowering can replace them) and the softmax step left as
// attn.online_softmax.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Transforms/FlashLoop.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/Passes.h"
#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Indexing maps of a linalg.generic, one per operand, from their results.
SmallVector<AffineMap> mapsOf(MLIRContext *ctx,
                              ArrayRef<ArrayRef<AffineExpr>> exprs) {
  return AffineMap::inferFromExprList(exprs, ctx);
}

/// Builds the loop nest of one attn.attention. Holds the builder state that
/// every helper needs.
class FlashBuilder {
public:
  FlashBuilder(OpBuilder &b, AttentionOp op, const FlashLoopOptions &options)
      : b(b), loc(op.getLoc()), op(op), kvTile(options.kvTile),
        regions(op, options.checks), schedule(options.schedule),
        qBlock(schedule.lists.qBlock), kvBlock(schedule.lists.kvBlock),
        f32(b.getF32Type()) {}

  /// Returns the op's results, computed by the loop nest.
  SmallVector<Value> build();

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value toF32(OpBuilder &builder, Location l, Value v) {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(builder, l, f32, v);
  }
  Value dim(Value tensor, int64_t d) {
    return getValueOrCreateConstantIndexOp(
        b, loc, tensor::getMixedSize(b, loc, tensor, d));
  }
  /// A rank-reduced slice [i0, i1, off, 0] of size [1, 1, len, width].
  Value rowsOf(Value source, Value i0, Value i1, Value offset, Value len,
               int64_t width);
  Value filled(ArrayRef<OpFoldResult> sizes, double value);

  /// Where the (b, h) iteration is: loop indices, whole-problem indices,
  /// the kv head and the query rows.
  struct Position {
    Value localB, localH, b, h, kvHead, q;
  };
  /// One kv-tile step over keys [kv0, min(kv0 + kv-tile, end)): returns the
  /// new (acc, max, sum).
  SmallVector<Value> step(Value kv0, Value end, ValueRange carried,
                          const Position &pos, bool applyCausal,
                          bool applyMask);
  SmallVector<Value> kvLoop(Value lb, Value ub, ValueRange init,
                            const Position &pos, bool applyCausal,
                            bool applyMask);
  /// The block mask's schedule: the listed partial blocks (with the
  /// mask_mod), then the full ones (without).
  SmallVector<Value> listLoops(ValueRange init, const Position &pos);
  /// Every block of one list: `counts` [B, H, QB] and `indices`
  /// [B, H, QB, KB].
  SmallVector<Value> listLoop(Value counts, Value indices, ValueRange init,
                              const Position &pos, bool applyMask);
  /// acc / sum into the output (and the logsumexp) at (b, h).
  SmallVector<Value> finish(ValueRange state, ValueRange outs,
                            const Position &pos);
  /// S = Q . K^T with score_mod and masks applied.
  Value scores(Value q, Value k, Value kvStart, const Position &pos,
               bool applyCausal, bool applyMask);
  OpBuilder &b;
  Location loc;
  AttentionOp op;
  int64_t kvTile;
  RegionInliner regions;
  KvBlockSchedule schedule;
  int64_t qBlock, kvBlock;
  Type f32;
  // Whole-problem offsets of the op's tile, and its row count.
  Value offB, offH, offQ, offKV, rows;
};

Value FlashBuilder::rowsOf(Value source, Value i0, Value i1, Value offset,
                           Value len, int64_t width) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> offsets = {i0, i1, offset, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(1), len,
                                     b.getIndexAttr(width)};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  auto type = RankedTensorType::get({ShapedType::kDynamic, width},
                                    sourceType.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, type, source, offsets, sizes,
                                        strides);
}

Value FlashBuilder::filled(ArrayRef<OpFoldResult> sizes, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, f32);
  return linalg::FillOp::create(b, loc, f32Constant(b, loc, value), empty)
      .getResult(0);
}

Value FlashBuilder::scores(Value q, Value k, Value kvStart, const Position &pos,
                           bool applyCausal, bool applyMask) {
  OpBuilder &builder = b;
  MLIRContext *ctx = builder.getContext();
  Value m = tensor::DimOp::create(builder, loc, q, 0);
  Value n = tensor::DimOp::create(builder, loc, k, 0);
  // Ops built one per statement here: C++ leaves the order of argument
  // evaluation open, and the IR must not depend on the compiler.
  Value empty =
      tensor::EmptyOp::create(builder, loc, ArrayRef<OpFoldResult>{m, n}, f32);
  Value zeros = linalg::FillOp::create(builder, loc,
                                       f32Constant(builder, loc, 0.0), empty)
                    .getResult(0);

  // S[i, j] = sum_d Q[i, d] * K[j, d], accumulated in f32.
  AffineExpr i, j, d;
  bindDims(ctx, i, j, d);
  auto maps = mapsOf(ctx, {{i, d}, {j, d}, {i, j}});
  using utils::IteratorType;
  Value s =
      linalg::GenericOp::create(
          builder, loc, zeros.getType(), ValueRange{q, k}, ValueRange{zeros},
          maps,
          {IteratorType::parallel, IteratorType::parallel,
           IteratorType::reduction},
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value kv = toF32(nb, l, args[1]);
            Value prod =
                arith::MulFOp::create(nb, l, toF32(nb, l, args[0]), kv);
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, args[2], prod).getResult());
          })
          .getResult(0);

  bool hasScoreMod = op.hasScoreMod();
  if (!hasScoreMod && !applyCausal && !applyMask)
    return s;

  // score_mod and the masks see whole-problem indices.
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
  return linalg::GenericOp::create(
             builder, loc, s.getType(), ValueRange{}, ValueRange{s},
             ArrayRef<AffineMap>{identity},
             {IteratorType::parallel, IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value qi = arith::AddIOp::create(
                   nb, l, offQ, linalg::IndexOp::create(nb, l, 0));
               Value kvi = arith::AddIOp::create(
                   nb, l, kvStart, linalg::IndexOp::create(nb, l, 1));
               Value x = args[0];
               if (hasScoreMod) {
                 x = arith::MulFOp::create(
                     nb, l, x, f32Constant(nb, l, op.getScaleValue()));
                 x = regions.scoreMod(nb, l, x, pos.b, pos.h, qi, kvi);
               }
               Value keep;
               if (applyCausal)
                 keep = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::uge,
                                              qi, kvi);
               if (applyMask) {
                 Value m = regions.maskMod(nb, l, pos.b, pos.h, qi, kvi);
                 keep = keep ? arith::AndIOp::create(nb, l, keep, m).getResult()
                             : m;
               }
               if (keep)
                 x = arith::SelectOp::create(
                     nb, l, keep, x,
                     f32Constant(nb, l,
                                 -std::numeric_limits<double>::infinity()));
               linalg::YieldOp::create(nb, l, x);
             })
      .getResult(0);
}

SmallVector<Value> FlashBuilder::step(Value kv0, Value end, ValueRange carried,
                                      const Position &pos, bool applyCausal,
                                      bool applyMask) {
  Value acc = carried[0], max = carried[1], sum = carried[2];
  // min(kv-tile, end - kv0) as an affine.min, so that its bound (kv-tile) is
  // visible to ValueBoundsOpInterface (GPU threads size storage by it).
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  Value len = affine::AffineMinOp::create(
      b, loc,
      AffineMap::get(0, 2, {b.getAffineConstantExpr(kvTile), s0 - s1},
                     b.getContext()),
      ValueRange{end, kv0});
  Value k =
      rowsOf(op.getKey(), pos.localB, pos.kvHead, kv0, len, op.getHeadDim());
  Value v = rowsOf(op.getValue(), pos.localB, pos.kvHead, kv0, len,
                   op.getValueHeadDim());
  Value kvStart = arith::AddIOp::create(b, loc, offKV, kv0);
  Value s = scores(pos.q, k, kvStart, pos, applyCausal, applyMask);

  // Without a score_mod the softmax applies the scale (before its max).
  float scale = op.hasScoreMod() ? 1.0f : op.getScaleValue();
  auto softmax = OnlineSoftmaxOp::create(b, loc, s.getType(), max.getType(),
                                         max.getType(), max.getType(), s, max,
                                         sum, b.getF32FloatAttr(scale));

  MLIRContext *ctx = b.getContext();
  AffineExpr i, j, d;
  bindDims(ctx, i, j, d);
  using utils::IteratorType;
  // acc = acc * correction (per row), then acc += P . V.
  Value rescaled =
      linalg::GenericOp::create(
          b, loc, acc.getType(), ValueRange{softmax.getCorrection()},
          ValueRange{acc}, mapsOf(ctx, {{i}, {i, j}}),
          {IteratorType::parallel, IteratorType::parallel},
          [&](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(
                nb, l,
                arith::MulFOp::create(nb, l, args[1], args[0]).getResult());
          })
          .getResult(0);
  Value next =
      linalg::GenericOp::create(
          b, loc, acc.getType(), ValueRange{softmax.getProbs(), v},
          ValueRange{rescaled}, mapsOf(ctx, {{i, j}, {j, d}, {i, d}}),
          {IteratorType::parallel, IteratorType::reduction,
           IteratorType::parallel},
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value prod =
                arith::MulFOp::create(nb, l, args[0], toF32(nb, l, args[1]));
            linalg::YieldOp::create(
                nb, l, arith::AddFOp::create(nb, l, args[2], prod).getResult());
          })
          .getResult(0);
  return {next, softmax.getNewMax(), softmax.getNewSum()};
}

SmallVector<Value> FlashBuilder::kvLoop(Value lb, Value ub, ValueRange init,
                                        const Position &pos, bool applyCausal,
                                        bool applyMask) {
  auto loop = scf::ForOp::create(b, loc, lb, ub, index(kvTile), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> next =
      step(loop.getInductionVar(), ub, loop.getRegionIterArgs(), pos,
           applyCausal, applyMask);
  scf::YieldOp::create(b, loc, next);
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> FlashBuilder::listLoop(Value counts, Value indices,
                                          ValueRange init, const Position &pos,
                                          bool applyMask) {
  // A block mask of batch (head) extent 1 serves every batch (head).
  auto broadcast = [&](Value tensor, int64_t d, Value position) -> Value {
    Value one = index(1);
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        dim(tensor, d), one);
    return arith::SelectOp::create(b, loc, isOne, index(0), position);
  };
  Value bm = broadcast(counts, 0, pos.b), hm = broadcast(counts, 1, pos.h);
  Type indexType = b.getIndexType();
  auto read = [&](Value tensor, ValueRange at) -> Value {
    return arith::IndexCastOp::create(
        b, loc, indexType, tensor::ExtractOp::create(b, loc, tensor, at));
  };
  // The tile lies in one q-block (the tile pass makes q-tiles divide it); a
  // q-block past the lists' extent, or a count past the index row, is read
  // as no more blocks rather than out of bounds.
  Value qb = arith::DivUIOp::create(b, loc, offQ, index(qBlock));
  Value inLists = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, qb,
                                        dim(counts, 2));
  Value safeQb = arith::SelectOp::create(b, loc, inLists, qb, index(0));
  Value rowLength = dim(indices, 3);
  Value count =
      arith::MinSIOp::create(b, loc, read(counts, {bm, hm, safeQb}), rowLength);
  Value none = index(0);
  count = arith::SelectOp::create(
      b, loc, inLists, arith::MaxSIOp::create(b, loc, count, index(0)), none);
  Value step = index(1);
  auto loop = scf::ForOp::create(b, loc, index(0), count, step, init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value block = read(indices, {bm, hm, safeQb, loop.getInductionVar()});
  // The block's keys, local to the op's kv range and clipped to it.
  Value first = arith::SubIOp::create(
      b, loc, arith::MulIOp::create(b, loc, block, index(kvBlock)), offKV);
  Value n = dim(op.getKey(), 2);
  Value begin = arith::MaxSIOp::create(b, loc, first, index(0));
  Value end = arith::MinSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, first, index(kvBlock)), n);
  SmallVector<Value> next = kvLoop(begin, end, loop.getRegionIterArgs(), pos,
                                   op.getCausal(), applyMask);
  scf::YieldOp::create(b, loc, next);
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value> FlashBuilder::listLoops(ValueRange init,
                                           const Position &pos) {
  const BlockMaskLists &lists = schedule.lists;
  SmallVector<Value> state =
      listLoop(lists.counts, lists.indices, init, pos, op.hasMaskMod());
  if (lists.fullCounts)
    state = listLoop(lists.fullCounts, lists.fullIndices, state, pos,
                     /*applyMask=*/false);
  return state;
}

SmallVector<Value> FlashBuilder::finish(ValueRange state, ValueRange outs,
                                        const Position &pos) {
  Value acc = state[0], max = state[1], sum = state[2];
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  using utils::IteratorType;
  double negInf = -std::numeric_limits<double>::infinity();
  auto outType = cast<RankedTensorType>(op.getOutputType());
  int64_t dv = op.getValueHeadDim();

  // O = acc / sum; rows that saw no unmasked key (sum 0) give 0, not NaN.
  Value empty = tensor::EmptyOp::create(
      b, loc, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(dv)},
      outType.getElementType());
  Value out = linalg::GenericOp::create(
                  b, loc, empty.getType(), ValueRange{acc, sum},
                  ValueRange{empty}, mapsOf(ctx, {{i, j}, {i}, {i, j}}),
                  {IteratorType::parallel, IteratorType::parallel},
                  [&](OpBuilder &nb, Location l, ValueRange args) {
                    Value zeroF = f32Constant(nb, l, 0.0);
                    Value empty = arith::CmpFOp::create(
                        nb, l, arith::CmpFPredicate::OEQ, args[1], zeroF);
                    Value x = arith::SelectOp::create(
                        nb, l, empty, zeroF,
                        arith::DivFOp::create(nb, l, args[0], args[1]));
                    Type elementType = args[2].getType();
                    if (elementType != f32)
                      x = arith::TruncFOp::create(nb, l, elementType, x);
                    linalg::YieldOp::create(nb, l, x);
                  })
                  .getResult(0);

  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  SmallVector<Value> results = {tensor::InsertSliceOp::create(
      b, loc, out, outs[0],
      ArrayRef<OpFoldResult>{pos.localB, pos.localH, b.getIndexAttr(0),
                             b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), rows,
                             b.getIndexAttr(dv)},
      strides)};

  if (outs.size() > 1) {
    // lse = max + log(sum): the natural-log normalizer a backward pass uses;
    // -inf for rows with nothing unmasked.
    Value emptyRow =
        tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{rows}, f32);
    Value lse =
        linalg::GenericOp::create(
            b, loc, emptyRow.getType(), ValueRange{max, sum},
            ValueRange{emptyRow}, mapsOf(ctx, {{i}, {i}, {i}}),
            {IteratorType::parallel},
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value empty =
                  arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ,
                                        args[1], f32Constant(nb, l, 0.0));
              Value x = arith::AddFOp::create(
                  nb, l, args[0], math::LogOp::create(nb, l, args[1]));
              x = arith::SelectOp::create(nb, l, empty,
                                          f32Constant(nb, l, negInf), x);
              linalg::YieldOp::create(nb, l, x);
            })
            .getResult(0);
    results.push_back(tensor::InsertSliceOp::create(
        b, loc, lse, outs[1],
        ArrayRef<OpFoldResult>{pos.localB, pos.localH, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), rows},
        ArrayRef<OpFoldResult>(strides).take_front(3)));
  }
  return results;
}

SmallVector<Value> FlashBuilder::build() {
  SmallVector<OpFoldResult> offsets = op.getMixedOffsets();
  offB = getValueOrCreateConstantIndexOp(b, loc, offsets[0]);
  offH = getValueOrCreateConstantIndexOp(b, loc, offsets[1]);
  offQ = getValueOrCreateConstantIndexOp(b, loc, offsets[2]);
  offKV = getValueOrCreateConstantIndexOp(b, loc, offsets[3]);
  rows = dim(op.getQuery(), 2);

  Value batches = dim(op.getQuery(), 0), heads = dim(op.getQuery(), 1);
  // max(Hkv, 1): no kernel divides by zero, even for empty shapes.
  Value atLeastOne = index(1);
  Value group = arith::DivUIOp::create(
      b, loc, heads,
      arith::MaxUIOp::create(b, loc, dim(op.getKey(), 1), atLeastOne));
  Value n = dim(op.getKey(), 2);
  Value zero = index(0), one = index(1);
  int64_t dv = op.getValueHeadDim();

  // The schedule's bounds depend only on the tile's offsets: computed once,
  // outside the batch and head loops.
  SmallVector<KvSegment> segments;
  if (schedule.kind != KvBlockSchedule::Kind::Lists)
    segments = schedule.segments(b, loc, offQ, offKV, rows, n, kvTile);

  SmallVector<Value> inits = {op.getOutputs()[0]};
  if (Value lse = op.getLogsumexpInit())
    inits.push_back(lse);

  auto batchLoop = scf::ForOp::create(b, loc, zero, batches, one, inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(batchLoop.getBody());
    Position pos;
    pos.localB = batchLoop.getInductionVar();
    pos.b = arith::AddIOp::create(b, loc, offB, pos.localB);
    auto headLoop = scf::ForOp::create(b, loc, zero, heads, one,
                                       batchLoop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, headLoop.getResults());

    b.setInsertionPointToStart(headLoop.getBody());
    pos.localH = headLoop.getInductionVar();
    pos.h = arith::AddIOp::create(b, loc, offH, pos.localH);
    pos.kvHead = arith::DivUIOp::create(b, loc, pos.localH, group);
    pos.q = rowsOf(op.getQuery(), pos.localB, pos.localH, zero, rows,
                   op.getHeadDim());

    SmallVector<Value> state = {
        filled({rows, b.getIndexAttr(dv)}, 0.0),
        filled({rows}, -std::numeric_limits<double>::infinity()),
        filled({rows}, 0.0)};
    if (schedule.kind == KvBlockSchedule::Kind::Lists)
      state = listLoops(state, pos);
    for (const KvSegment &segment : segments)
      state = kvLoop(segment.begin, segment.end, state, pos,
                     segment.applyCausal, op.hasMaskMod());
    scf::YieldOp::create(b, loc,
                         finish(state, headLoop.getRegionIterArgs(), pos));
  }
  return SmallVector<Value>(batchLoop.getResults());
}

} // namespace

SmallVector<Value> mlir::attn::buildFlashLoop(OpBuilder &b, AttentionOp op,
                                              const FlashLoopOptions &options) {
  return FlashBuilder(b, op, options).build();
}
