//===- ArithUtils.h - small arith helpers shared by the passes --*- C++ -*-===//

#ifndef ATTNDIALECT_UTILS_ARITHUTILS_H
#define ATTNDIALECT_UTILS_ARITHUTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

#include <limits>

namespace mlir::attn {

/// log2(e) and ln(2): exp(x) = exp2(x * log2(e)), log(x) = log2(x) * ln(2).
constexpr double kLog2E = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

/// -inf: the score of a masked element, the max of an empty row.
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Whether `type` is index or an integer of at most 64 bits: what a
/// region's integer arithmetic runs on.
inline bool isIndexOrInteger(Type type) {
  return type.isIndex() ||
         (isa<IntegerType>(type) && type.getIntOrFloatBitWidth() <= 64);
}

/// The bits of an index or integer type (index as 64).
inline unsigned integerWidth(Type type) {
  return type.isIndex() ? IndexType::kInternalStorageBitWidth
                        : type.getIntOrFloatBitWidth();
}

/// An f32 constant.
inline Value f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

} // namespace mlir::attn

#endif // ATTNDIALECT_UTILS_ARITHUTILS_H
