//===- ScoreModDerivative.cpp - d score_mod / d score ---------------------===//

#include "AttnDialect/IR/ScoreModDerivative.h"
#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Ops whose tangent buildScoreModDerivative knows.
bool hasDerivativeRule(Operation *op) {
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
             arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp, arith::SelectOp, arith::ExtFOp,
             arith::TruncFOp, math::ExpOp, math::Exp2Op, math::LogOp,
             math::TanhOp, math::SqrtOp, math::RsqrtOp, math::AbsFOp,
             math::FmaOp>(op);
}

/// Whether `op` reads a value of `path`, directly or inside its regions.
bool readsPath(Operation *op, const llvm::DenseSet<Value> &path) {
  bool reads = false;
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      reads |= path.contains(operand);
  });
  return reads;
}

/// The values of `scoreMod` computed from `seed` (its score argument or a
/// captured read) that carry a derivative, in op order; fails on `op` at an
/// op that has none, saying with respect to `what`.
FailureOr<llvm::DenseSet<Value>> derivativePath(Operation *op, Region &scoreMod,
                                                Value seed, StringRef what) {
  Block &block = scoreMod.front();
  llvm::DenseSet<Value> path = {seed};
  for (Operation &nested : block.without_terminator()) {
    if (!readsPath(&nested, path))
      continue;
    // A comparison gives an i1 with no derivative; a select on it picks
    // the derivative of its branch.
    if (isa<arith::CmpFOp>(nested))
      continue;
    if (auto select = dyn_cast<arith::SelectOp>(nested)) {
      if (path.contains(select.getTrueValue()) ||
          path.contains(select.getFalseValue()))
        path.insert(select.getResult());
      continue;
    }
    if (nested.getNumRegions() == 0 && hasDerivativeRule(&nested)) {
      path.insert(nested.getResult(0));
      continue;
    }
    InFlightDiagnostic diag = op->emitOpError()
                              << "needs the derivative of its score_mod with "
                                 "respect to "
                              << what << ", but '" << nested.getName()
                              << "' on the path from it has none";
    diag.attachNote(nested.getLoc())
        << "here; the derivative is known for arith add, sub, mul, div, neg, "
           "min/max and select, float casts, and math exp, exp2, log, tanh, "
           "sqrt, rsqrt, absf and fma";
    return failure();
  }
  return path;
}

/// Builds tangents of one inlined score_mod. A null tangent is zero.
class TangentBuilder {
public:
  TangentBuilder(OpBuilder &b, Location loc, const IRMapping &mapping)
      : b(b), loc(loc), mapping(mapping) {}

  Value primal(Value v) { return mapping.lookupOrDefault(v); }
  Value tangent(Value v) { return tangents.lookup(v); }
  void setTangent(Value v, Value t) {
    if (t)
      tangents[v] = t;
  }
  Value constant(Type type, double value) {
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  }
  Value add(Value x, Value y) {
    if (!x || !y)
      return x ? x : y;
    return arith::AddFOp::create(b, loc, x, y);
  }
  Value mul(Value x, Value y) {
    if (!x || !y)
      return Value();
    return arith::MulFOp::create(b, loc, x, y);
  }
  Value neg(Value x) { return x ? arith::NegFOp::create(b, loc, x) : x; }
  /// select(c, x, y) where either may be zero (null).
  Value select(Value c, Value x, Value y, Type type) {
    if (!x && !y)
      return Value();
    return arith::SelectOp::create(b, loc, c, x ? x : constant(type, 0.0),
                                   y ? y : constant(type, 0.0));
  }

  /// The tangent of `op`'s result from its operands' tangents.
  Value rule(Operation *op);

private:
  OpBuilder &b;
  Location loc;
  const IRMapping &mapping;
  llvm::DenseMap<Value, Value> tangents;
};

Value TangentBuilder::rule(Operation *op) {
  auto operand = [&](unsigned i) { return primal(op->getOperand(i)); };
  auto dOperand = [&](unsigned i) { return tangent(op->getOperand(i)); };
  Value result = primal(op->getResult(0));
  Type type = op->getResult(0).getType();
  using arith::CmpFPredicate;
  // min/max: the derivative of the operand the op returns. `skipsNaN`:
  // maxnumf/minnumf return the first operand when the second is NaN.
  auto pick = [&](CmpFPredicate predicate, bool skipsNaN) {
    Value firstWins =
        arith::CmpFOp::create(b, loc, predicate, operand(0), operand(1));
    if (skipsNaN)
      firstWins = arith::OrIOp::create(
          b, loc, firstWins,
          arith::CmpFOp::create(b, loc, CmpFPredicate::UNO, operand(1),
                                operand(1)));
    return select(firstWins, dOperand(0), dOperand(1), type);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](arith::AddFOp) { return add(dOperand(0), dOperand(1)); })
      .Case([&](arith::SubFOp) { return add(dOperand(0), neg(dOperand(1))); })
      .Case([&](arith::MulFOp) {
        return add(mul(dOperand(0), operand(1)), mul(operand(0), dOperand(1)));
      })
      .Case([&](arith::DivFOp) {
        // (da - (a / b) db) / b
        Value numerator = add(dOperand(0), neg(mul(result, dOperand(1))));
        return numerator
                   ? Value(arith::DivFOp::create(b, loc, numerator, operand(1)))
                   : Value();
      })
      .Case([&](arith::NegFOp) { return neg(dOperand(0)); })
      .Case([&](arith::MaximumFOp) { return pick(CmpFPredicate::OGE, false); })
      .Case([&](arith::MaxNumFOp) { return pick(CmpFPredicate::OGE, true); })
      .Case([&](arith::MinimumFOp) { return pick(CmpFPredicate::OLE, false); })
      .Case([&](arith::MinNumFOp) { return pick(CmpFPredicate::OLE, true); })
      .Case([&](arith::SelectOp) {
        return select(operand(0), dOperand(1), dOperand(2), type);
      })
      .Case([&](arith::ExtFOp) {
        return Value(arith::ExtFOp::create(b, loc, type, dOperand(0)));
      })
      .Case([&](arith::TruncFOp) {
        return Value(arith::TruncFOp::create(b, loc, type, dOperand(0)));
      })
      .Case([&](math::ExpOp) { return mul(result, dOperand(0)); })
      .Case([&](math::Exp2Op) {
        return mul(mul(result, constant(type, std::log(2.0))), dOperand(0));
      })
      .Case([&](math::LogOp) {
        return Value(arith::DivFOp::create(b, loc, dOperand(0), operand(0)));
      })
      .Case([&](math::TanhOp) {
        Value square = mul(result, result);
        Value slope =
            arith::SubFOp::create(b, loc, constant(type, 1.0), square);
        return mul(slope, dOperand(0));
      })
      .Case([&](math::SqrtOp) {
        Value half = arith::DivFOp::create(b, loc, constant(type, 0.5), result);
        return mul(half, dOperand(0));
      })
      .Case([&](math::RsqrtOp) {
        Value cube = mul(mul(result, result), result);
        return mul(mul(constant(type, -0.5), cube), dOperand(0));
      })
      .Case([&](math::AbsFOp) {
        Value negative = arith::CmpFOp::create(b, loc, CmpFPredicate::OLT,
                                               operand(0), constant(type, 0.0));
        return select(negative, neg(dOperand(0)), dOperand(0), type);
      })
      .Case([&](math::FmaOp) {
        return add(
            add(mul(dOperand(0), operand(1)), mul(operand(0), dOperand(1))),
            dOperand(2));
      })
      .Default([](Operation *) { return Value(); });
}

} // namespace

/// The tangent of the region's result when `seed` moves by 1, built next
/// to the inlined copy that `mapping` describes; `path` is derivativePath's.
static Value buildDerivative(OpBuilder &builder, Location loc, Region &scoreMod,
                             const IRMapping &mapping, Value seed,
                             const llvm::DenseSet<Value> &path) {
  Block &block = scoreMod.front();
  TangentBuilder tangents(builder, loc, mapping);
  tangents.setTangent(seed, tangents.constant(seed.getType(), 1.0));
  for (Operation &nested : block.without_terminator())
    if (nested.getNumResults() == 1 && path.contains(nested.getResult(0)))
      tangents.setTangent(nested.getResult(0), tangents.rule(&nested));
  Value yielded = cast<YieldOp>(block.getTerminator()).getValues()[0];
  Value derivative = tangents.tangent(yielded);
  return derivative ? derivative : tangents.constant(builder.getF32Type(), 0.0);
}

LogicalResult mlir::attn::verifyScoreModDifferentiable(Operation *op,
                                                       Region &scoreMod) {
  return success(succeeded(
      derivativePath(op, scoreMod, scoreMod.getArgument(0), "the score")));
}

Value mlir::attn::buildScoreModDerivative(OpBuilder &builder, Location loc,
                                          Region &scoreMod,
                                          const IRMapping &mapping) {
  Value score = scoreMod.getArgument(0);
  FailureOr<llvm::DenseSet<Value>> path =
      derivativePath(scoreMod.getParentOp(), scoreMod, score, "the score");
  assert(succeeded(path) && "score_mod must be differentiable");
  return buildDerivative(builder, loc, scoreMod, mapping, score, *path);
}

/// `value` without the tensor.cast ops it comes through: folding a read
/// of a cast reads the cast's source instead.
static Value withoutCasts(Value value) {
  while (auto cast = value.getDefiningOp<tensor::CastOp>())
    value = cast.getSource();
  return value;
}

SmallVector<tensor::ExtractOp> mlir::attn::readsOf(Region &scoreMod,
                                                   Value capture) {
  SmallVector<tensor::ExtractOp> reads;
  Value source = withoutCasts(capture);
  scoreMod.walk([&](tensor::ExtractOp read) {
    if (withoutCasts(read.getTensor()) == source)
      reads.push_back(read);
  });
  return reads;
}

LogicalResult mlir::attn::verifyReadsDifferentiable(Operation *op,
                                                    Region &scoreMod,
                                                    Value capture,
                                                    unsigned wrtIndex) {
  for (tensor::ExtractOp read : readsOf(scoreMod, capture)) {
    if (read->getParentRegion() != &scoreMod) {
      InFlightDiagnostic diag =
          op->emitOpError()
          << "can differentiate only the score_mod's reads in its own "
             "block, but wrt #"
          << wrtIndex << " is read inside a nested region";
      diag.attachNote(read.getLoc()) << "here";
      return diag;
    }
    std::string what;
    llvm::raw_string_ostream(what) << "what it reads of wrt #" << wrtIndex;
    if (failed(derivativePath(op, scoreMod, read.getResult(), what)))
      return failure();
  }
  return success();
}

Value mlir::attn::buildReadDerivative(OpBuilder &builder, Location loc,
                                      Region &scoreMod,
                                      const IRMapping &mapping,
                                      tensor::ExtractOp read) {
  FailureOr<llvm::DenseSet<Value>> path = derivativePath(
      scoreMod.getParentOp(), scoreMod, read.getResult(), "a captured read");
  assert(succeeded(path) && "the read must be differentiable");
  return buildDerivative(builder, loc, scoreMod, mapping, read.getResult(),
                         *path);
}
