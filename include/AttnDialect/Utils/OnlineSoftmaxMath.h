//===- OnlineSoftmaxMath.h - the (max, sum) merge of softmax ----*- C++ -*-===//
//
// The scalar math every online-softmax decomposition shares (a step over a
// tile, a whole softmax row, the merge of split-kv results), in one copy so
// they round alike and treat -inf alike.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_UTILS_ONLINESOFTMAXMATH_H
#define ATTNDIALECT_UTILS_ONLINESOFTMAXMATH_H

#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::attn {

/// exp(x - y) as exp2((x - y) * log2(e)): the difference is taken first, so
/// x == y gives exactly 1 and the rounding of y * log2(e) never enters.
inline Value expOfDifference(OpBuilder &b, Location loc, Value x, Value y) {
  Value log2e = f32Constant(b, loc, kLog2E);
  Value difference = arith::SubFOp::create(b, loc, x, y);
  return math::Exp2Op::create(b, loc,
                              arith::MulFOp::create(b, loc, difference, log2e));
}

/// Whether `max` is -inf: the row has seen only -inf scores so far.
inline Value isNegInf(OpBuilder &b, Location loc, Value max) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max,
                               f32Constant(b, loc, kNegInf));
}

/// The max to subtract from a row's scores: 0 while the row's max is -inf,
/// since -inf - -inf would be NaN (the scores then give exp 0 anyway).
inline Value subtractableMax(OpBuilder &b, Location loc, Value max) {
  // Named values fix the order of the ops (argument order is unspecified).
  Value zero = f32Constant(b, loc, 0.0);
  Value empty = isNegInf(b, loc, max);
  return arith::SelectOp::create(b, loc, empty, zero, max);
}

/// The factor that carries a sum (or an accumulator) taken against `oldMax`
/// over to `newMax` >= oldMax: exp(oldMax - newMax), 1 while newMax is -inf.
inline Value rescaleFactor(OpBuilder &b, Location loc, Value oldMax,
                           Value newMax) {
  Value factor =
      expOfDifference(b, loc, oldMax, subtractableMax(b, loc, newMax));
  Value one = f32Constant(b, loc, 1.0);
  Value empty = isNegInf(b, loc, newMax);
  return arith::SelectOp::create(b, loc, empty, one, factor);
}

/// The weight of a partial result with logsumexp `lse` in a merge whose
/// logsumexp is `total`: exp(lse - total), 0 where total is -inf (then lse
/// is too: nothing was unmasked).
inline Value mergeWeight(OpBuilder &b, Location loc, Value lse, Value total) {
  Value weight = expOfDifference(b, loc, lse, total);
  Value zero = f32Constant(b, loc, 0.0);
  Value empty = isNegInf(b, loc, total);
  return arith::SelectOp::create(b, loc, empty, zero, weight);
}

} // namespace mlir::attn

#endif // ATTNDIALECT_UTILS_ONLINESOFTMAXMATH_H
