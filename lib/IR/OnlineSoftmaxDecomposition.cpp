//===- DecomposeOnlineSoftmax.cpp - attn.online_softmax to linalg ---------===//
//
// Lowers one online-softmax step to four linalg.generic ops on tensors:
//   1. a row reduction: the tile's rowmax(scale * S);
//   2. a row map: new_max (over the old max), correction, the max to
//      subtract from each row, and the rescaled sum;
//   3. an elementwise map fused with a row reduction: probs and their sum;
//   4. a row map: new_sum = sum * correction + the tile's sum (over the old
//      sum).
// Every exponential is exp2((scale * s - max) * log2(e)): the difference is
// taken before the multiplication by log2(e), so the row's max gives exactly
// 1 and the sum and every consumer of the probs see the same argument.
// Folding log2(e) into one fma with a rounded -max * log2(e) would lose
// precision as |s| grows (the rounding of the product does not cancel).
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Utils/OnlineSoftmaxMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;

FailureOr<SmallVector<Value>>
OnlineSoftmaxOp::decomposeOperation(OpBuilder &rewriter) {
  OnlineSoftmaxOp op = *this;
  Location loc = op.getLoc();
  Value scores = op.getScores(), max = op.getMax(), sum = op.getSum();
  auto scoresType = cast<RankedTensorType>(scores.getType());
  auto rowType = cast<RankedTensorType>(max.getType());
  unsigned rank = scoresType.getRank();

  double scale = op.getScale().convertToDouble();
  AffineMap elementMap = rewriter.getMultiDimIdentityMap(rank);
  AffineMap rowMap = elementMap.dropResult(rank - 1);
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  SmallVector<utils::IteratorType> rowReduction = parallel;
  rowReduction.back() = utils::IteratorType::reduction;
  SmallVector<utils::IteratorType> rowParallel(rank - 1,
                                               utils::IteratorType::parallel);

  SmallVector<OpFoldResult> rowSizes =
      tensor::getMixedSizes(rewriter, loc, max);
  auto emptyRow = [&] {
    return tensor::EmptyOp::create(rewriter, loc, rowSizes,
                                   rewriter.getF32Type())
        .getResult();
  };
  auto filledRow = [&](double value) {
    // One op-building operand per call, for a compiler-independent order.
    Value empty = emptyRow();
    return linalg::FillOp::create(rewriter, loc,
                                  f32Constant(rewriter, loc, value), empty)
        .getResult(0);
  };
  AffineMap rowIdentity = rewriter.getMultiDimIdentityMap(rank - 1);

  // The new max and sum are written over the old ones (after their last
  // read), so that a loop carrying them updates its buffers in place:
  // nothing is allocated per step, which a GPU thread could not do.

  // 1. The tile's row max of scale * S.
  auto tileMax = linalg::GenericOp::create(
      rewriter, loc, TypeRange{rowType}, ValueRange{scores},
      ValueRange{filledRow(-std::numeric_limits<double>::infinity())},
      ArrayRef<AffineMap>{elementMap, rowMap}, rowReduction,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value scaled =
            arith::MulFOp::create(b, l, args[0], f32Constant(b, l, scale));
        Value m = arith::MaximumFOp::create(b, l, args[1], scaled);
        linalg::YieldOp::create(b, l, m);
      });

  // 2. Per row: new_max = max(max, tile max), into the old max;
  //    correction = exp2((max - new_max) * log2e), 1 when new_max is -inf;
  //    the max to subtract (0 when -inf); sum * correction.
  auto rowStats = linalg::GenericOp::create(
      rewriter, loc, TypeRange{rowType, rowType, rowType, rowType},
      ValueRange{max, tileMax.getResult(0), sum},
      ValueRange{max, emptyRow(), emptyRow(), emptyRow()},
      SmallVector<AffineMap>(7, rowIdentity), rowParallel,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value oldMax = args[0], oldSum = args[2];
        Value nextMax = arith::MaximumFOp::create(b, l, oldMax, args[1]);
        Value safeMax = subtractableMax(b, l, nextMax);
        Value correction = rescaleFactor(b, l, oldMax, nextMax);
        Value scaledSum = arith::MulFOp::create(b, l, oldSum, correction);
        linalg::YieldOp::create(
            b, l, ValueRange{nextMax, correction, safeMax, scaledSum});
      });
  Value newMax = rowStats.getResult(0);
  Value correction = rowStats.getResult(1), rowMax = rowStats.getResult(2),
        scaledSum = rowStats.getResult(3);

  // 3. probs = exp2((scale * S - max) * log2e) and their row sum, in the
  //    same pass over the tile; scale * S is rounded as in step 1. The tile's
  //    sum starts from 0 and joins the running sum afterwards: a blocked sum,
  //    whose rounding error grows with the tile and the number of tiles, not
  //    with the whole row.
  Value emptyProbs = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, scores),
      rewriter.getF32Type());
  Value zeroRow = filledRow(0.0);
  auto probs = linalg::GenericOp::create(
      rewriter, loc, TypeRange{scoresType, rowType}, ValueRange{scores, rowMax},
      ValueRange{emptyProbs, zeroRow},
      ArrayRef<AffineMap>{elementMap, rowMap, elementMap, rowMap}, rowReduction,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value scaled = args[0];
        if (scale != 1.0)
          scaled =
              arith::MulFOp::create(b, l, scaled, f32Constant(b, l, scale));
        Value p = expOfDifference(b, l, scaled, args[1]);
        Value s = arith::AddFOp::create(b, l, args[3], p);
        linalg::YieldOp::create(b, l, ValueRange{p, s});
      });
  auto newSum = linalg::GenericOp::create(
      rewriter, loc, TypeRange{rowType},
      ValueRange{scaledSum, probs.getResult(1)}, ValueRange{sum},
      SmallVector<AffineMap>(3, rowIdentity), rowParallel,
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(
            b, l, arith::AddFOp::create(b, l, args[0], args[1]).getResult());
      });

  return SmallVector<Value>{probs.getResult(0), newMax, newSum.getResult(0),
                            correction};
}
