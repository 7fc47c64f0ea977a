//===- BackwardLoops.cpp - attn.attention_grad as loops on tensors --------===//
//
// Per batch and query head, one loop over kv-tiles: recompute the tile's
// scores and probabilities P = exp(s' - L), then dP = dO V^T,
// dS = P (dP - Delta) * d score_mod / d s * scale, and from them
// dQ += dS K (carried), dK += dS^T Q and dV += P^T dO (f32 accumulators for
// the whole of K and V, so that the query heads of a kv head add to them in
// order). On a CPU the tile's P and dS are computed once for all three
// gradients; a GPU splits the dK/dV and dQ loops for parallelism. The wrt
// tensors' gradients are summed element by element after each tile.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Transforms/BackwardLoops.h"
#include "AttnDialect/IR/ScoreModDerivative.h"
#include "AttnDialect/Transforms/FlashLoop.h"
#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;

/// What a block mask's lists say of a block.
enum BlockState : int64_t { kUnlisted = 0, kPartial = 1, kFull = 2 };

/// Indexing maps of a linalg.generic, one per operand, from their results.
SmallVector<AffineMap> mapsOf(MLIRContext *ctx,
                              ArrayRef<ArrayRef<AffineExpr>> exprs) {
  return AffineMap::inferFromExprList(exprs, ctx);
}

class BackwardBuilder {
public:
  BackwardBuilder(OpBuilder &b, AttentionGradOp op, int64_t kvTile,
                  RegionChecks checks)
      : b(b), loc(op.getLoc()), op(op), kvTile(kvTile), regions(op, checks),
        f32(b.getF32Type()) {}

  /// dQ, dK and dV, computed by the loop nest.
  SmallVector<Value> build();

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value tensor, int64_t d) {
    return tensor::DimOp::create(b, loc, tensor, d);
  }
  static Value toF32(OpBuilder &builder, Location l, Value v) {
    if (v.getType().isF32())
      return v;
    return arith::ExtFOp::create(builder, l, builder.getF32Type(), v);
  }
  /// The rank-reduced slice [i0, i1, offset:offset+len, 0:width].
  Value rowsOf(Value source, Value i0, Value i1, Value offset, Value len,
               int64_t width);
  /// Writes `rows` back where rowsOf took them from.
  Value insertRows(Value rows, Value dest, Value i0, Value i1, Value offset,
                   Value len, int64_t width);
  Value filled(ArrayRef<OpFoldResult> sizes, double value);
  /// acc += sum over the reduction dim of lhs * rhs, a linalg.generic over
  /// three dims (the last listed reduction) with the given operand maps.
  Value accumulate(Value lhs, Value rhs, Value acc,
                   ArrayRef<ArrayRef<AffineExpr>> exprs);
  /// `source` (f32) converted to `dest`'s element type, into `dest`;
  /// `source` itself where the types agree (it was built in `dest`).
  Value convertInto(Value source, Value dest);

  /// Per query row: Delta = sum_d dO * O.
  Value rowDeltas(Value dO, Value o, Value rows);
  /// What the block mask's kv-side lists say of each block of (batch,
  /// head): i8 [ceil(rows / q_block), ceil(n / kv_block)], kUnlisted,
  /// kPartial or kFull.
  Value blockStates(Value batch, Value head, Value rows, Value n);
  /// P (0 where masked or the row is empty) and dS's factor
  /// scale * d score_mod / d s for scores `s` of keys from `kvStart`;
  /// `states` the blockStates where the op has a block mask.
  std::pair<Value, Value> probabilities(Value s, Value lse, Value kvStart,
                                        Value batch, Value head, Value states);
  /// dS = P (dP - Delta) * factor (no factor where null), 0 where P is.
  Value scoreGradients(Value p, Value dp, Value delta, Value factor);
  /// Adds each wrt tensor's gradient over one tile to `grads`: at every
  /// element (i, j) whose modified score's gradient `dsMod` is nonzero, the
  /// score_mod's reads of the tensor add dsMod * d score_mod / d read at
  /// the index read, element by element in order (deterministic).
  SmallVector<Value> accumulateWrt(ValueRange grads, Value dsMod, Value s,
                                   Value kvStart, Value batch, Value head);

  OpBuilder &b;
  Location loc;
  AttentionGradOp op;
  int64_t kvTile;
  RegionInliner regions;
  Type f32;
};

Value BackwardBuilder::rowsOf(Value source, Value i0, Value i1, Value offset,
                              Value len, int64_t width) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  auto type = RankedTensorType::get({ShapedType::kDynamic, width},
                                    sourceType.getElementType());
  return tensor::ExtractSliceOp::create(
      b, loc, type, source,
      ArrayRef<OpFoldResult>{i0, i1, offset, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), len,
                             b.getIndexAttr(width)},
      strides);
}

Value BackwardBuilder::insertRows(Value rows, Value dest, Value i0, Value i1,
                                  Value offset, Value len, int64_t width) {
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(
      b, loc, rows, dest,
      ArrayRef<OpFoldResult>{i0, i1, offset, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), len,
                             b.getIndexAttr(width)},
      strides);
}

Value BackwardBuilder::filled(ArrayRef<OpFoldResult> sizes, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, f32);
  return linalg::FillOp::create(b, loc, f32Constant(b, loc, value), empty)
      .getResult(0);
}

Value BackwardBuilder::accumulate(Value lhs, Value rhs, Value acc,
                                  ArrayRef<ArrayRef<AffineExpr>> exprs) {
  return linalg::GenericOp::create(
             b, loc, acc.getType(), ValueRange{lhs, rhs}, ValueRange{acc},
             mapsOf(b.getContext(), exprs),
             {IteratorType::parallel, IteratorType::parallel,
              IteratorType::reduction},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value prod = arith::MulFOp::create(nb, l, toF32(nb, l, args[0]),
                                                  toF32(nb, l, args[1]));
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(nb, l, args[2], prod).getResult());
             })
      .getResult(0);
}

Value BackwardBuilder::convertInto(Value source, Value dest) {
  auto type = cast<RankedTensorType>(dest.getType());
  if (type.getElementType() == f32 && source.getType() == type)
    return source;
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext());
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{source}, ValueRange{dest},
             ArrayRef<AffineMap>{identity, identity},
             SmallVector<IteratorType>(type.getRank(), IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value x = args[0];
               if (args[1].getType() != x.getType())
                 x = arith::TruncFOp::create(nb, l, args[1].getType(), x);
               linalg::YieldOp::create(nb, l, x);
             })
      .getResult(0);
}

Value BackwardBuilder::rowDeltas(Value dO, Value o, Value rows) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i, d;
  bindDims(ctx, i, d);
  Value zeros = filled({rows}, 0.0);
  return linalg::GenericOp::create(
             b, loc, zeros.getType(), ValueRange{dO, o}, ValueRange{zeros},
             mapsOf(ctx, {{i, d}, {i, d}, {i}}),
             {IteratorType::parallel, IteratorType::reduction},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value prod = arith::MulFOp::create(nb, l, toF32(nb, l, args[0]),
                                                  toF32(nb, l, args[1]));
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(nb, l, args[2], prod).getResult());
             })
      .getResult(0);
}

Value BackwardBuilder::blockStates(Value batch, Value head, Value rows,
                                   Value n) {
  auto make = op.getBlockMask().getDefiningOp<MakeBlockMaskOp>();
  auto type = cast<BlockMaskType>(make.getType());
  Type i8 = b.getI8Type();
  Value zero = index(0), one = index(1);
  auto ceilDiv = [&](Value x, int64_t y) -> Value {
    return arith::CeilDivUIOp::create(b, loc, x, index(y));
  };
  auto minimum = [&](Value x, Value y) -> Value {
    return arith::MinUIOp::create(b, loc, x, y);
  };
  Value qBlocks = ceilDiv(rows, type.getQBlock());
  Value kvBlocks = ceilDiv(n, type.getKvBlock());
  Value empty = tensor::EmptyOp::create(
      b, loc, ArrayRef<OpFoldResult>{qBlocks, kvBlocks}, i8);
  Value unlisted = arith::ConstantIntOp::create(b, loc, i8, kUnlisted);
  Value states = linalg::FillOp::create(b, loc, unlisted, empty).getResult(0);
  // A list of batch (head) extent 1 serves every batch (head).
  Value counts = make.getKvNumBlocks();
  auto broadcast = [&](int64_t d, Value position) -> Value {
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        dim(counts, d), one);
    return arith::SelectOp::create(b, loc, isOne, zero, position);
  };
  Value listBatch = broadcast(0, batch);
  Value listHead = broadcast(1, head);
  // Lines past the lists' rows list nothing; counts are clipped to the
  // index rows and indices outside the blocks skipped, as the GPU
  // kernels do.
  Value lines = minimum(qBlocks, dim(counts, 2));
  auto mark = [&](Value states, Value lineCounts, Value indices,
                  int64_t state) -> Value {
    Value width = dim(indices, 3);
    auto lineLoop = scf::ForOp::create(b, loc, zero, lines, one, states);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(lineLoop.getBody());
    Value line = lineLoop.getInductionVar();
    Value count = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        tensor::ExtractOp::create(b, loc, lineCounts,
                                  ValueRange{listBatch, listHead, line}));
    Value clipped = arith::MaxSIOp::create(
        b, loc, zero, arith::MinSIOp::create(b, loc, count, width));
    auto entryLoop = scf::ForOp::create(b, loc, zero, clipped, one,
                                        lineLoop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, entryLoop.getResults());
    b.setInsertionPointToStart(entryLoop.getBody());
    Value current = entryLoop.getRegionIterArgs()[0];
    Value block = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        tensor::ExtractOp::create(b, loc, indices,
                                  ValueRange{listBatch, listHead, line,
                                             entryLoop.getInductionVar()}));
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         block, kvBlocks);
    auto ifInside = scf::IfOp::create(b, loc, current.getType(), inside,
                                      /*withElseRegion=*/true);
    scf::YieldOp::create(b, loc, ifInside.getResults());
    b.setInsertionPointToStart(ifInside.thenBlock());
    Value marked = arith::ConstantIntOp::create(b, loc, i8, state);
    scf::YieldOp::create(b, loc,
                         tensor::InsertOp::create(b, loc, marked, current,
                                                  ValueRange{line, block})
                             .getResult());
    b.setInsertionPointToStart(ifInside.elseBlock());
    scf::YieldOp::create(b, loc, current);
    return lineLoop.getResult(0);
  };
  states = mark(states, counts, make.getKvIndices(), kPartial);
  if (make.getFullKvNumBlocks())
    states =
        mark(states, make.getFullKvNumBlocks(), make.getFullKvIndices(), kFull);
  return states;
}

std::pair<Value, Value> BackwardBuilder::probabilities(Value s, Value lse,
                                                       Value kvStart,
                                                       Value batch, Value head,
                                                       Value states) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  Value empty =
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, s), f32);
  auto maps = mapsOf(ctx, {{i, j}, {i}, {i, j}, {i, j}});
  float scale = op.getScaleValue();
  bool causal = op.getCausal(), hasScoreMod = op.hasScoreMod(),
       hasMaskMod = op.hasMaskMod();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{s.getType(), s.getType()}, ValueRange{s, lse},
      ValueRange{empty, empty}, maps,
      {IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value qi = linalg::IndexOp::create(nb, l, 0);
        Value kvi = arith::AddIOp::create(nb, l, kvStart,
                                          linalg::IndexOp::create(nb, l, 1));
        Value x =
            arith::MulFOp::create(nb, l, args[0], f32Constant(nb, l, scale));
        Value slope = f32Constant(nb, l, 1.0);
        if (hasScoreMod)
          std::tie(x, slope) =
              regions.scoreModAndDerivative(nb, l, x, batch, head, qi, kvi);
        Value negInf =
            f32Constant(nb, l, -std::numeric_limits<double>::infinity());
        // A row that saw no key has L = -inf: P is 0 there, not NaN. A NaN
        // L (a NaN score) keeps its row NaN, as the forward's output is.
        Value keep = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNE,
                                           args[1], negInf);
        if (causal)
          keep = arith::AndIOp::create(
              nb, l, keep,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::uge, qi, kvi));
        if (hasMaskMod) {
          Value kept = regions.maskMod(nb, l, batch, head, qi, kvi);
          // FlexAttention's block mask: a full block keeps every element,
          // a partial one what the mask_mod keeps, an unlisted one none.
          if (states) {
            auto type = cast<BlockMaskType>(op.getBlockMask().getType());
            auto blockOf = [&](Value i, int64_t size) -> Value {
              return arith::DivUIOp::create(
                  nb, l, i, arith::ConstantIndexOp::create(nb, l, size));
            };
            Value qBlock = blockOf(qi, type.getQBlock());
            Value kvBlock = blockOf(kvi, type.getKvBlock());
            Value state = tensor::ExtractOp::create(
                nb, l, states, ValueRange{qBlock, kvBlock});
            auto is = [&](int64_t value) -> Value {
              return arith::CmpIOp::create(
                  nb, l, arith::CmpIPredicate::eq, state,
                  arith::ConstantIntOp::create(nb, l, nb.getI8Type(), value));
            };
            // One op built per statement, for a compiler-independent order.
            Value full = is(kFull);
            Value partial = is(kPartial);
            kept = arith::OrIOp::create(
                nb, l, full, arith::AndIOp::create(nb, l, partial, kept));
          }
          keep = arith::AndIOp::create(nb, l, keep, kept);
        }
        Value zero = f32Constant(nb, l, 0.0);
        Value p = arith::SelectOp::create(
            nb, l, keep,
            math::ExpOp::create(nb, l,
                                arith::SubFOp::create(nb, l, x, args[1])),
            zero);
        Value factor = arith::SelectOp::create(
            nb, l, keep,
            arith::MulFOp::create(nb, l, slope, f32Constant(nb, l, scale)),
            zero);
        linalg::YieldOp::create(nb, l, ValueRange{p, factor});
      });
  return {generic.getResult(0), generic.getResult(1)};
}

Value BackwardBuilder::scoreGradients(Value p, Value dp, Value delta,
                                      Value factor) {
  MLIRContext *ctx = b.getContext();
  AffineExpr i, j;
  bindDims(ctx, i, j);
  Value empty =
      tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, p), f32);
  SmallVector<Value> inputs = {p, dp, delta};
  SmallVector<SmallVector<AffineExpr>> exprs = {{i, j}, {i, j}, {i}};
  if (factor) {
    inputs.push_back(factor);
    exprs.push_back({i, j});
  }
  exprs.push_back({i, j});
  SmallVector<ArrayRef<AffineExpr>> exprRefs(exprs.begin(), exprs.end());
  return linalg::GenericOp::create(
             b, loc, p.getType(), inputs, ValueRange{empty},
             mapsOf(ctx, exprRefs),
             {IteratorType::parallel, IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value zero = f32Constant(nb, l, 0.0);
               Value ds = arith::MulFOp::create(
                   nb, l, args[0],
                   arith::SubFOp::create(nb, l, args[1], args[2]));
               if (factor)
                 ds = arith::MulFOp::create(nb, l, ds, args[3]);
               // A masked or underflowed P gives 0 even where the factor is
               // infinite (a score_mod's slope at a pole).
               Value none = arith::CmpFOp::create(
                   nb, l, arith::CmpFPredicate::OEQ, args[0], zero);
               linalg::YieldOp::create(
                   nb, l,
                   arith::SelectOp::create(nb, l, none, zero, ds).getResult());
             })
      .getResult(0);
}

SmallVector<Value> BackwardBuilder::accumulateWrt(ValueRange grads, Value dsMod,
                                                  Value s, Value kvStart,
                                                  Value batch, Value head) {
  Value zero = index(0), one = index(1);
  auto rowLoop = scf::ForOp::create(b, loc, zero, dim(dsMod, 0), one, grads);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rowLoop.getBody());
  Value i = rowLoop.getInductionVar();
  auto colLoop = scf::ForOp::create(b, loc, zero, dim(dsMod, 1), one,
                                    rowLoop.getRegionIterArgs());
  scf::YieldOp::create(b, loc, colLoop.getResults());
  b.setInsertionPointToStart(colLoop.getBody());
  Value j = colLoop.getInductionVar();
  ValueRange current = colLoop.getRegionIterArgs();
  Value g = tensor::ExtractOp::create(b, loc, dsMod, ValueRange{i, j});
  // Masked elements (g = 0) are skipped: a slope infinite there must not
  // make 0 * inf = NaN.
  Value used = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, g,
                                     f32Constant(b, loc, 0.0));
  auto ifUsed = scf::IfOp::create(b, loc, current.getTypes(), used,
                                  /*withElseRegion=*/true);
  scf::YieldOp::create(b, loc, ifUsed.getResults());
  b.setInsertionPointToStart(ifUsed.elseBlock());
  scf::YieldOp::create(b, loc, current);

  b.setInsertionPointToStart(ifUsed.thenBlock());
  Value x = arith::MulFOp::create(
      b, loc, tensor::ExtractOp::create(b, loc, s, ValueRange{i, j}),
      f32Constant(b, loc, op.getScaleValue()));
  Value kvi = arith::AddIOp::create(b, loc, kvStart, j);
  SmallVector<Value> updated(current.begin(), current.end());
  for (auto [w, wrt] : llvm::enumerate(op.getWrt())) {
    SmallVector<tensor::ExtractOp> reads = readsOf(op.getScoreMod(), wrt);
    for (auto &[indices, slope] : regions.scoreModReadDerivatives(
             b, loc, x, batch, head, i, kvi, reads)) {
      // An out-of-bounds read is reported (or undefined) already; its
      // gradient must not be written out of bounds too.
      Value inBounds = arith::ConstantIntOp::create(b, loc, 1, 1);
      for (auto [d, idx] : llvm::enumerate(indices))
        inBounds = arith::AndIOp::create(
            b, loc, inBounds,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, idx,
                                  dim(updated[w], d)));
      Value grad = updated[w];
      auto ifInBounds = scf::IfOp::create(b, loc, grad.getType(), inBounds,
                                          /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(ifInBounds.thenBlock());
        Value old = tensor::ExtractOp::create(b, loc, grad, indices);
        Value sum = arith::AddFOp::create(
            b, loc, old, arith::MulFOp::create(b, loc, g, slope));
        scf::YieldOp::create(
            b, loc,
            tensor::InsertOp::create(b, loc, sum, grad, indices).getResult());
        b.setInsertionPointToStart(ifInBounds.elseBlock());
        scf::YieldOp::create(b, loc, grad);
      }
      updated[w] = ifInBounds.getResult(0);
    }
  }
  scf::YieldOp::create(b, loc, updated);
  return rowLoop.getResults();
}

SmallVector<Value> BackwardBuilder::build() {
  MLIRContext *ctx = b.getContext();
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  int64_t d = op.getHeadDim(), dv = op.getValueHeadDim();
  Value batches = dim(q, 0), heads = dim(q, 1), rows = dim(q, 2);
  Value kvHeads = dim(k, 1), n = dim(k, 2);
  Value zero = index(0), one = index(1);
  // max(Hkv, 1): nothing divides by zero, even for empty shapes.
  Value group = arith::DivUIOp::create(
      b, loc, heads, arith::MaxUIOp::create(b, loc, kvHeads, one));

  // dK and dV add up over the query heads of a kv head: f32 accumulators,
  // the outputs themselves where they are f32 (so that they stay in place).
  auto accumulatorFor = [&](Value init) -> Value {
    if (cast<RankedTensorType>(init.getType()).getElementType().isF32())
      return linalg::FillOp::create(b, loc, f32Constant(b, loc, 0.0), init)
          .getResult(0);
    return filled(tensor::getMixedSizes(b, loc, init), 0.0);
  };
  Value dkAcc = accumulatorFor(op.getOutputs()[1]);
  Value dvAcc = accumulatorFor(op.getOutputs()[2]);
  SmallVector<Value> inits = {op.getOutputs()[0], dkAcc, dvAcc};
  // The wrt tensors' gradients (f32 outputs), summed in place; zero for
  // those the score_mod does not read.
  bool wrtIsRead =
      op.hasScoreMod() && llvm::any_of(op.getWrt(), [&](Value wrt) {
        return !readsOf(op.getScoreMod(), wrt).empty();
      });
  for (Value init : op.getOutputs().drop_front(3))
    inits.push_back(accumulatorFor(init));

  AffineExpr x, y, z;
  bindDims(ctx, x, y, z);
  auto batchLoop = scf::ForOp::create(b, loc, zero, batches, one, inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(batchLoop.getBody());
    Value batch = batchLoop.getInductionVar();
    auto headLoop = scf::ForOp::create(b, loc, zero, heads, one,
                                       batchLoop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, headLoop.getResults());

    b.setInsertionPointToStart(headLoop.getBody());
    Value head = headLoop.getInductionVar();
    Value kvHead = arith::DivUIOp::create(b, loc, head, group);
    // Regions and the block mask see whole-problem positions: a tile's
    // offsets added.
    Value problemBatch = batch, problemHead = head;
    if (!op.getOffsets().empty()) {
      problemBatch = arith::AddIOp::create(b, loc, op.getOffsets()[0], batch);
      problemHead = arith::AddIOp::create(b, loc, op.getOffsets()[1], head);
    }
    Value qRows = rowsOf(q, batch, head, zero, rows, d);
    Value dORows = rowsOf(op.getGradOutput(), batch, head, zero, rows, dv);
    Value oRows = rowsOf(op.getOutput(), batch, head, zero, rows, dv);
    auto lseType = RankedTensorType::get({ShapedType::kDynamic}, f32);
    Value lse = tensor::ExtractSliceOp::create(
        b, loc, lseType, op.getLogsumexp(),
        ArrayRef<OpFoldResult>{batch, head, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), rows},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
    Value delta = rowDeltas(dORows, oRows, rows);
    Value states = op.getBlockMask()
                       ? blockStates(problemBatch, problemHead, rows, n)
                       : Value();

    ValueRange carried = headLoop.getRegionIterArgs();
    Value dqInit = filled({rows, b.getIndexAttr(d)}, 0.0);
    SmallVector<Value> kvInits = {dqInit};
    llvm::append_range(kvInits, carried.drop_front());
    auto kvLoop = scf::ForOp::create(b, loc, zero, n, index(kvTile), kvInits);
    {
      OpBuilder::InsertionGuard kvGuard(b);
      b.setInsertionPointToStart(kvLoop.getBody());
      Value kv0 = kvLoop.getInductionVar();
      Value dq = kvLoop.getRegionIterArgs()[0];
      Value dkAll = kvLoop.getRegionIterArgs()[1];
      Value dvAll = kvLoop.getRegionIterArgs()[2];
      AffineExpr s0, s1;
      bindSymbols(ctx, s0, s1);
      Value len = affine::AffineMinOp::create(
          b, loc,
          AffineMap::get(0, 2, {b.getAffineConstantExpr(kvTile), s0 - s1}, ctx),
          ValueRange{n, kv0});
      Value kRows = rowsOf(k, batch, kvHead, kv0, len, d);
      Value vRows = rowsOf(v, batch, kvHead, kv0, len, dv);

      Value tile = filled({rows, len}, 0.0);
      // S = Q K^T and dP = dO V^T, both [rows, len].
      Value s = accumulate(qRows, kRows, tile, {{x, z}, {y, z}, {x, y}});
      Value dp = accumulate(dORows, vRows, tile, {{x, z}, {y, z}, {x, y}});
      auto [p, factor] =
          probabilities(s, lse, kv0, problemBatch, problemHead, states);
      Value ds = scoreGradients(p, dp, delta, factor);
      // dQ += dS K over (i, d, j); dK += dS^T Q and dV += P^T dO over
      // (j, d, i).
      Value nextDq = accumulate(ds, kRows, dq, {{x, z}, {z, y}, {x, y}});
      Value dkRows = rowsOf(dkAll, batch, kvHead, kv0, len, d);
      dkRows = accumulate(ds, qRows, dkRows, {{z, x}, {z, y}, {x, y}});
      Value dvRows = rowsOf(dvAll, batch, kvHead, kv0, len, dv);
      dvRows = accumulate(p, dORows, dvRows, {{z, x}, {z, y}, {x, y}});
      SmallVector<Value> next = {
          nextDq, insertRows(dkRows, dkAll, batch, kvHead, kv0, len, d),
          insertRows(dvRows, dvAll, batch, kvHead, kv0, len, dv)};
      ValueRange wrtGrads = kvLoop.getRegionIterArgs().drop_front(3);
      if (wrtIsRead) {
        Value dsMod = scoreGradients(p, dp, delta, Value());
        llvm::append_range(next, accumulateWrt(wrtGrads, dsMod, s, kv0,
                                               problemBatch, problemHead));
      } else {
        llvm::append_range(next, wrtGrads);
      }
      scf::YieldOp::create(b, loc, next);
    }
    // dQ of this head, in dQ's element type.
    Value dqType = tensor::EmptyOp::create(
        b, loc, ArrayRef<OpFoldResult>{rows, b.getIndexAttr(d)},
        cast<RankedTensorType>(op.getOutputs()[0].getType()).getElementType());
    Value dqRows = convertInto(kvLoop.getResult(0), dqType);
    SmallVector<Value> headResults = {
        insertRows(dqRows, carried[0], batch, head, zero, rows, d)};
    llvm::append_range(headResults, kvLoop.getResults().drop_front());
    scf::YieldOp::create(b, loc, headResults);
  }
  SmallVector<Value> results = {
      batchLoop.getResult(0),
      convertInto(batchLoop.getResult(1), op.getOutputs()[1]),
      convertInto(batchLoop.getResult(2), op.getOutputs()[2])};
  llvm::append_range(results, batchLoop.getResults().drop_front(3));
  return results;
}

} // namespace

/// Refuses a block mask the loops cannot read.
static LogicalResult checkBlockMask(AttentionGradOp op) {
  if (Value blockMask = op.getBlockMask();
      blockMask && !blockMask.getDefiningOp<MakeBlockMaskOp>())
    return op.emitOpError()
           << "has a block mask that is not an attn.make_block_mask in its "
              "function (run attn-lower-block-masks first)";
  return success();
}

LogicalResult mlir::attn::decomposeAttentionGradOps(Operation *root,
                                                    int64_t kvTile,
                                                    bool boundsChecks,
                                                    StringRef passName) {
  if (kvTile <= 0)
    return root->emitError()
           << passName << ": kv-tile must be positive, got " << kvTile;
  SmallVector<AttentionGradOp> ops;
  root->walk([&](AttentionGradOp op) { ops.push_back(op); });
  if (ops.empty())
    return success();
  if (boundsChecks && llvm::any_of(ops, [](AttentionGradOp op) {
        return (op.hasScoreMod() || op.hasMaskMod()) && !inGpuKernel(op);
      }))
    if (failed(declareRegionErrorFunction(root, passName)))
      return failure();
  for (AttentionGradOp op : ops)
    if (failed(checkBlockMask(op)))
      return failure();
  for (AttentionGradOp op : ops) {
    RegionChecks checks = !boundsChecks     ? RegionChecks::None
                          : inGpuKernel(op) ? RegionChecks::DeviceTrap
                                            : RegionChecks::HostReport;
    IRRewriter rewriter(op->getContext());
    rewriter.setInsertionPoint(op);
    rewriter.replaceOp(op,
                       BackwardBuilder(rewriter, op, kvTile, checks).build());
  }
  return success();
}

namespace {

/// The op's decomposition (AggregatedOpInterface), with attn-decompose's
/// defaults: kv tiles of kDefaultBackwardKvTile keys, regions unchecked.
struct AttentionGradDecomposition
    : linalg::AggregatedOpInterface::ExternalModel<AttentionGradDecomposition,
                                                   AttentionGradOp> {
  FailureOr<SmallVector<Value>> decomposeOperation(Operation *op,
                                                   OpBuilder &b) const {
    auto grad = cast<AttentionGradOp>(op);
    if (failed(checkBlockMask(grad)))
      return failure();
    return BackwardBuilder(b, grad, kDefaultBackwardKvTile, RegionChecks::None)
        .build();
  }
};

} // namespace

void mlir::attn::registerAttentionGradDecomposition(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, AttnDialect *) {
    AttentionGradOp::attachInterface<AttentionGradDecomposition>(*ctx);
  });
}
