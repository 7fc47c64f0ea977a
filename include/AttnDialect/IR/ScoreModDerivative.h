//===- ScoreModDerivative.h - d score_mod / d score -------------*- C++ -*-===//
//
// The backward pass scales each score's gradient by the score_mod's
// derivative with respect to the score. It is built by forward-mode
// differentiation: next to the inlined region, each op on the score's path
// gets its tangent by the chain rule. Ops off that path (index arithmetic,
// captured reads, constants) have none. The same forward mode, seeded at a
// captured float read, gives the derivative with respect to what it reads.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_IR_SCOREMODDERIVATIVE_H
#define ATTNDIALECT_IR_SCOREMODDERIVATIVE_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::attn {

/// Checks that every op of `scoreMod` (a score_mod region of `op`) that reads
/// a value computed from the score has a derivative: arith add, sub, mul,
/// div, neg, the four min/max (the first operand's derivative at ties),
/// select, float extension and truncation; math exp, exp2, log, tanh, sqrt,
/// rsqrt, absf (+1 at 0) and fma. Comparisons of the score are allowed (a
/// select on them picks its branch's derivative). Otherwise emits an error
/// on `op` that names the op and points at it.
LogicalResult verifyScoreModDifferentiable(Operation *op, Region &scoreMod);

/// d score_mod / d score, an f32, built at `builder`'s insertion point next
/// to an inlined copy of `scoreMod`: `mapping` maps the region's values to
/// that copy. The region must pass verifyScoreModDifferentiable.
Value buildScoreModDerivative(OpBuilder &builder, Location loc,
                              Region &scoreMod, const IRMapping &mapping);

/// The tensor.extract ops of `scoreMod` that read `capture` (through
/// tensor.cast ops too). None: the gradient is 0 (a read whose value is
/// unused folds away).
SmallVector<tensor::ExtractOp> readsOf(Region &scoreMod, Value capture);

/// Checks that `scoreMod` reads `capture` (wrt operand #`wrtIndex` of `op`)
/// only in its own block, and that the region's result is differentiable
/// with respect to each value read, as for the score.
LogicalResult verifyReadsDifferentiable(Operation *op, Region &scoreMod,
                                        Value capture, unsigned wrtIndex);

/// d score_mod / d (the value `read` returns), an f32, built as
/// buildScoreModDerivative is. The region must pass
/// verifyReadsDifferentiable for `read`'s tensor.
Value buildReadDerivative(OpBuilder &builder, Location loc, Region &scoreMod,
                          const IRMapping &mapping, tensor::ExtractOp read);

} // namespace mlir::attn

#endif // ATTNDIALECT_IR_SCOREMODDERIVATIVE_H
