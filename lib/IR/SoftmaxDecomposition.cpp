//===- DecomposeSoftmax.cpp - attn.softmax to online-softmax steps --------===//
//
// A softmax row is one attn.online_softmax when it fits in a tile, and a
// loop of them (statistics) followed by a normalizing loop when it does not:
// the two-pass online form, one pass fewer than max / sum / normalize.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Utils/OnlineSoftmaxMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

struct SoftmaxLowering {
  SoftmaxLowering(OpBuilder &b, SoftmaxOp op, int64_t rowTile)
      : b(b), loc(op.getLoc()), op(op), rowTile(rowTile), f32(b.getF32Type()) {
    auto type = cast<RankedTensorType>(op.getInput().getType());
    rank = type.getRank();
    elementMap = b.getMultiDimIdentityMap(rank);
    rowMap = elementMap.dropResult(rank - 1);
    parallel.assign(rank, utils::IteratorType::parallel);
  }

  /// A [rows] f32 tensor filled with `value`.
  Value rowStat(double value) {
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(b, loc, op.getInput());
    sizes.pop_back();
    Value empty = tensor::EmptyOp::create(b, loc, sizes, f32);
    return linalg::FillOp::create(b, loc, f32Constant(b, loc, value), empty)
        .getResult(0);
  }

  /// The f32 view of an input slice (a copy for f16/bf16).
  Value widen(Value x) {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getElementType().isF32())
      return x;
    Value empty =
        tensor::EmptyOp::create(b, loc, tensor::getMixedSizes(b, loc, x), f32);
    return linalg::GenericOp::create(
               b, loc, empty.getType(), ValueRange{x}, ValueRange{empty},
               ArrayRef<AffineMap>{elementMap, elementMap}, parallel,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(
                     nb, l,
                     arith::ExtFOp::create(nb, l, f32, args[0]).getResult());
               })
        .getResult(0);
  }

  /// out = exp2((x - max) * log2e) / sum into `init`; 0 where sum is 0
  /// (rows that are all -inf).
  Value normalize(Value x, Value max, Value sum, Value init) {
    return linalg::GenericOp::create(
               b, loc, init.getType(), ValueRange{x, max, sum},
               ValueRange{init},
               ArrayRef<AffineMap>{elementMap, rowMap, rowMap, elementMap},
               parallel,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 Value xf = args[0];
                 if (!xf.getType().isF32())
                   xf = arith::ExtFOp::create(nb, l, f32, xf);
                 Value zero = f32Constant(nb, l, 0.0);
                 Value empty = arith::CmpFOp::create(
                     nb, l, arith::CmpFPredicate::OEQ, args[2], zero);
                 Value e = expOfDifference(nb, l, xf,
                                           subtractableMax(nb, l, args[1]));
                 Value y = arith::SelectOp::create(
                     nb, l, empty, zero,
                     arith::DivFOp::create(nb, l, e, args[2]));
                 Type outType = args[3].getType();
                 if (outType != f32)
                   y = arith::TruncFOp::create(nb, l, outType, y);
                 linalg::YieldOp::create(nb, l, y);
               })
        .getResult(0);
  }

  /// A slice [..., j0 : j0 + len] of the last dim.
  Value chunk(Value source, Value j0, Value len) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        sizes = tensor::getMixedSizes(b, loc, source),
        strides(rank, b.getIndexAttr(1));
    offsets.back() = j0;
    sizes.back() = len;
    return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                          strides);
  }

  Value build() {
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    int64_t n = type.getShape().back();
    Value max = rowStat(-std::numeric_limits<double>::infinity());
    Value sum = rowStat(0.0);

    if (!ShapedType::isDynamic(n) && n <= rowTile) {
      // The row fits: one pass of statistics over it, then normalize.
      Value row = widen(x);
      auto step = OnlineSoftmaxOp::create(b, loc, row.getType(), max.getType(),
                                          max.getType(), max.getType(), row,
                                          max, sum, b.getF32FloatAttr(1.0f));
      return normalize(x, step.getNewMax(), step.getNewSum(), op.getOutput());
    }

    // Long rows: a loop of online-softmax steps gathers (max, sum) ...
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value tile = arith::ConstantIndexOp::create(b, loc, rowTile);
    Value length = tensor::DimOp::create(b, loc, x, rank - 1);
    auto chunkLength = [&](Value j0) {
      return arith::MinSIOp::create(b, loc, tile,
                                    arith::SubIOp::create(b, loc, length, j0))
          .getResult();
    };
    auto stats =
        scf::ForOp::create(b, loc, zero, length, tile, ValueRange{max, sum});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(stats.getBody());
      Value j0 = stats.getInductionVar();
      Value piece = widen(chunk(x, j0, chunkLength(j0)));
      auto step = OnlineSoftmaxOp::create(
          b, loc, piece.getType(), max.getType(), max.getType(), max.getType(),
          piece, stats.getRegionIterArgs()[0], stats.getRegionIterArgs()[1],
          b.getF32FloatAttr(1.0f));
      scf::YieldOp::create(b, loc,
                           ValueRange{step.getNewMax(), step.getNewSum()});
    }
    // ... and a second loop writes the normalized row chunk by chunk.
    auto write = scf::ForOp::create(b, loc, zero, length, tile,
                                    ValueRange{op.getOutput()});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(write.getBody());
      Value j0 = write.getInductionVar();
      Value len = chunkLength(j0);
      Value out = write.getRegionIterArgs()[0];
      // One op-building operand per call, for a compiler-independent
      // order.
      Value outChunk = chunk(out, j0, len);
      Value piece = normalize(chunk(x, j0, len), stats.getResult(0),
                              stats.getResult(1), outChunk);
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
          sizes = tensor::getMixedSizes(b, loc, piece),
          strides(rank, b.getIndexAttr(1));
      offsets.back() = j0;
      Value updated = tensor::InsertSliceOp::create(b, loc, piece, out, offsets,
                                                    sizes, strides);
      scf::YieldOp::create(b, loc, updated);
    }
    return write.getResult(0);
  }

  OpBuilder &b;
  Location loc;
  SoftmaxOp op;
  int64_t rowTile;
  Type f32;
  int64_t rank;
  AffineMap elementMap, rowMap;
  SmallVector<utils::IteratorType> parallel;
};

} // namespace

SmallVector<Value> SoftmaxOp::decompose(OpBuilder &b, int64_t rowTile) {
  return {SoftmaxLowering(b, *this, rowTile).build()};
}

FailureOr<SmallVector<Value>> SoftmaxOp::decomposeOperation(OpBuilder &b) {
  return decompose(b, kDefaultRowTile);
}
