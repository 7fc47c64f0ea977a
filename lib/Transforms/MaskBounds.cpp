//===- MaskBounds.cpp - a mask_mod bounded over a box of positions --------===//
//
// Every integer value of the region becomes an interval [lo, hi] of i64
// values holding its signed value (i1 as 0 and 1), computed at run time
// from the box's corners. An op whose bounds could overflow, a read whose
// index bounds leave the tensor, or an unsigned op on bounds that straddle
// zero makes the bounds unusable; the result then says "unknown".
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Transforms/MaskBounds.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Bounds within which sums and products of two bounds are exact in i64.
constexpr int64_t kAddLimit = int64_t(1) << 61;
constexpr int64_t kMulLimit = int64_t(1) << 30;
/// Elements of a captured tensor a bound's read loop loads at once.
constexpr int64_t kReadsInFlight = 8;

/// The positive constant divisor of a division or remainder, if it has one.
std::optional<int64_t> positiveDivisor(Operation *op) {
  APInt value;
  if (!matchPattern(op->getOperand(1), m_ConstantInt(&value)))
    return std::nullopt;
  int64_t divisor = value.getSExtValue();
  if (divisor <= 0)
    return std::nullopt;
  return divisor;
}

bool isDivision(Operation *op) {
  return isa<arith::DivSIOp, arith::DivUIOp, arith::FloorDivSIOp,
             arith::CeilDivSIOp, arith::CeilDivUIOp, arith::RemSIOp,
             arith::RemUIOp>(op);
}

bool isCast(Operation *op) {
  return isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
             arith::ExtUIOp, arith::TruncIOp>(op);
}

bool canBound(Operation &op) {
  if (op.getNumRegions() != 0)
    return false;
  if (isa<YieldOp>(op))
    return true;
  for (Type type : op.getResultTypes())
    if (!isIndexOrInteger(type))
      return false;
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    return isIndexOrInteger(extract.getType());
  for (Type type : op.getOperandTypes())
    if (!isIndexOrInteger(type))
      return false;
  if (isDivision(&op))
    return positiveDivisor(&op).has_value();
  if (isCast(&op))
    return !op.getResult(0).getType().isInteger(1) ||
           op.getOperand(0).getType().isInteger(1);
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    // i1 is signed -1 for true: only its unsigned order is 0 < 1.
    using P = arith::CmpIPredicate;
    P p = cmp.getPredicate();
    bool isSigned = p == P::slt || p == P::sle || p == P::sgt || p == P::sge;
    return !(isSigned && cmp.getLhs().getType().isInteger(1));
  }
  if (isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op))
    return op.getResult(0).getType().isInteger(1);
  return isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp,
             arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp,
             arith::SelectOp>(op);
}

struct Interval {
  Value lo, hi;
};

class Bounder {
public:
  Bounder(OpBuilder &b, Location loc, int64_t maxReadSpan,
          const SharedReads *shared)
      : b(b), loc(loc), maxReadSpan(maxReadSpan), shared(shared),
        i64(b.getI64Type()) {}

  MaskBounds run(Region &region, ArrayRef<Interval> args);

private:
  using P = arith::CmpIPredicate;

  // Operands that build ops are built one per statement below: C++ leaves
  // the order of argument evaluation open, and the IR must not depend on
  // the compiler.
  Value c(int64_t v) { return arith::ConstantIntOp::create(b, loc, i64, v); }
  Value cmp(P p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value either(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  Value smin(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value smax(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value toI64(Value v) {
    if (v.getType().isIndex())
      return arith::IndexCastOp::create(b, loc, i64, v);
    if (v.getType().isInteger(1))
      return arith::ExtUIOp::create(b, loc, i64, v);
    if (v.getType() == i64)
      return v;
    return arith::ExtSIOp::create(b, loc, i64, v);
  }
  /// The 0/1 interval of an i1 that is true for sure (`must`) or may be.
  Interval truth(Value must, Value may) { return {toI64(must), toI64(may)}; }
  Value isOne(Value v) { return cmp(P::eq, v, c(1)); }
  Value isZero(Value v) { return cmp(P::eq, v, c(0)); }

  /// The bounds are usable only if `ok` holds.
  void require(Value ok) { valid = valid ? both(valid, ok) : ok; }
  void requireWithin(Interval x, int64_t limit) {
    Value belowTop = cmp(P::sle, x.hi, c(limit));
    Value aboveBottom = cmp(P::sge, x.lo, c(-limit));
    require(both(aboveBottom, belowTop));
  }
  void requireNonNegative(Interval x) { require(cmp(P::sge, x.lo, c(0))); }
  /// That the bounds of a `width`-bit result hold its signed values.
  void requireFits(Interval x, unsigned width) {
    if (width >= 64 || width == 1)
      return;
    int64_t top = (int64_t(1) << (width - 1)) - 1;
    Value belowTop = cmp(P::sle, x.hi, c(top));
    Value aboveBottom = cmp(P::sge, x.lo, c(-top - 1));
    require(both(aboveBottom, belowTop));
  }

  Interval get(Value v);
  Interval visit(Operation &op);
  Interval compare(arith::CmpIOp op, Interval x, Interval y);
  Interval divide(Operation *op, Interval x, int64_t divisor);
  Interval read(tensor::ExtractOp op);
  /// The bounds of `x` over the lanes of `group`.
  /// With `narrow`, x holds values of at most 32 bits.
  Interval combine(Interval x, const SharedReads::Group &group, bool narrow);
  Value shuffleXor(Value v, int64_t mask, bool narrow);

  OpBuilder &b;
  Location loc;
  int64_t maxReadSpan;
  const SharedReads *shared;
  Type i64;
  Value valid;
  DenseMap<Value, Interval> intervals;
  /// Which of the region's arguments (bits 0 to 3: b, h, q, kv) a value
  /// depends on; values from outside the region depend on none.
  DenseMap<Value, unsigned> argsOf;
};

constexpr unsigned kQArg = 1u << 2, kKvArg = 1u << 3;

Interval Bounder::get(Value v) {
  auto it = intervals.find(v);
  if (it != intervals.end())
    return it->second;
  // A value from outside the region is one value.
  Value same = toI64(v);
  return intervals[v] = {same, same};
}

Interval Bounder::compare(arith::CmpIOp op, Interval x, Interval y) {
  P p = op.getPredicate();
  bool isUnsigned = p == P::ult || p == P::ule || p == P::ugt || p == P::uge;
  Value must, may;
  if (p == P::eq || p == P::ne) {
    Value ySingle = cmp(P::eq, y.lo, y.hi);
    Value xSingle = cmp(P::eq, x.lo, x.hi);
    Value single = both(xSingle, ySingle);
    Value equal = both(single, cmp(P::eq, x.lo, y.lo));
    Value yNotAbove = cmp(P::sle, y.lo, x.hi);
    Value xNotAbove = cmp(P::sle, x.lo, y.hi);
    Value overlap = both(xNotAbove, yNotAbove);
    if (p == P::eq) {
      must = equal;
      may = overlap;
    } else {
      Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      must = arith::XOrIOp::create(b, loc, overlap, yes);
      may = arith::XOrIOp::create(b, loc, equal, yes);
    }
  } else {
    // x > y is y < x: an order holds everywhere when x's top is below y's
    // bottom, somewhere when x's bottom is below y's top.
    if (p == P::sgt || p == P::sge || p == P::ugt || p == P::uge)
      std::swap(x, y);
    bool strict = p == P::slt || p == P::sgt || p == P::ult || p == P::ugt;
    P order =
        isUnsigned ? (strict ? P::ult : P::ule) : (strict ? P::slt : P::sle);
    must = cmp(order, x.hi, y.lo);
    may = cmp(order, x.lo, y.hi);
  }
  if (isUnsigned) {
    // Unsigned order is the order of the bounds when neither interval
    // straddles zero (signed -1 is the largest unsigned value).
    auto contiguous = [&](Interval z) {
      Value negative = cmp(P::slt, z.hi, c(0));
      Value nonNegative = cmp(P::sge, z.lo, c(0));
      return either(nonNegative, negative);
    };
    Value yContiguous = contiguous(y);
    Value ordered = both(contiguous(x), yContiguous);
    Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    must = select(ordered, must, no);
    may = select(ordered, may, yes);
  }
  return truth(must, may);
}

Interval Bounder::divide(Operation *op, Interval x, int64_t divisor) {
  Value d = c(divisor);
  if (isa<arith::DivUIOp, arith::CeilDivUIOp, arith::RemUIOp>(op))
    requireNonNegative(x);
  // Quotients are monotonic in the dividend for a positive divisor; on
  // non-negative dividends the unsigned ops are the signed ones.
  auto quotient = [&](Value v) -> Value {
    if (isa<arith::FloorDivSIOp>(op))
      return arith::FloorDivSIOp::create(b, loc, v, d);
    if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(op))
      return arith::CeilDivSIOp::create(b, loc, v, d);
    return arith::DivSIOp::create(b, loc, v, d);
  };
  if (!isa<arith::RemSIOp, arith::RemUIOp>(op))
    return {quotient(x.lo), quotient(x.hi)};
  // A remainder is exact within one quotient, else any of [0, d - 1] (or,
  // with negative dividends, [-(d - 1), d - 1]).
  Value nonNegative = cmp(P::sge, x.lo, c(0));
  Value hiQuotient = quotient(x.hi);
  Value sameQuotient = cmp(P::eq, quotient(x.lo), hiQuotient);
  Value exact = both(nonNegative, sameQuotient);
  Value lowest = c(1 - divisor);
  Value otherLo = select(nonNegative, c(0), lowest);
  Value lo = select(exact, arith::RemSIOp::create(b, loc, x.lo, d), otherLo);
  Value otherHi = c(divisor - 1);
  Value hi = select(exact, arith::RemSIOp::create(b, loc, x.hi, d), otherHi);
  return {lo, hi};
}

Interval Bounder::read(tensor::ExtractOp op) {
  Value tensor = op.getTensor();
  // The index bounds must lie in the tensor, and cover at most
  // maxReadSpan elements.
  SmallVector<Interval> box;
  SmallVector<Value> spans;
  Value ok;
  Value volume = c(1);
  for (auto [dim, indexValue] : llvm::enumerate(op.getIndices())) {
    Interval at = get(indexValue);
    Value size = toI64(tensor::DimOp::create(b, loc, tensor, dim));
    Value one = c(1);
    Value span = arith::AddIOp::create(
        b, loc, arith::SubIOp::create(b, loc, at.hi, at.lo), one);
    Value belowSize = cmp(P::slt, at.hi, size);
    Value inside = both(cmp(P::sge, at.lo, c(0)), belowSize);
    Value spanBelowMax = cmp(P::sle, span, c(maxReadSpan));
    Value spanAboveOne = cmp(P::sge, span, c(1));
    inside = both(inside, both(spanAboveOne, spanBelowMax));
    ok = ok ? both(ok, inside) : inside;
    volume = arith::MulIOp::create(b, loc, volume, smin(span, c(maxReadSpan)));
    box.push_back(at);
    spans.push_back(span);
  }
  if (box.empty()) {
    Value v = toI64(tensor::ExtractOp::create(b, loc, tensor, ValueRange{}));
    return {v, v};
  }
  ok = both(ok, cmp(P::sle, volume, c(maxReadSpan)));
  require(ok);
  // A read that does not depend on kv (on q) is the same on the lanes
  // that bound the same rows (columns): each reads a part.
  const SharedReads::Group *group = nullptr;
  if (shared) {
    unsigned args = 0;
    for (Value index : op.getIndices())
      args |= argsOf.lookup(index);
    if (!(args & kKvArg))
      group = &shared->rows;
    else if (!(args & kQArg))
      group = &shared->columns;
  }
  int64_t lanes = group ? int64_t(1) << group->xorMasks.size() : 1;
  int64_t perStep =
      group ? std::clamp<int64_t>(llvm::divideCeil(group->span, lanes), 1,
                                  kReadsInFlight)
            : kReadsInFlight;
  // Nested loops over the box (none when the bounds are unusable); the
  // innermost one reads kReadsInFlight elements a step, the last step's
  // extra reads repeating the last element, so that they are in flight
  // together.
  Type indexType = b.getIndexType();
  auto toIndex = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, indexType, v).getResult();
  };
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> indices;
  SmallVector<scf::ForOp> loops;
  // Elements of 32 bits or fewer (signed, as toI64 extends them) start
  // from 32-bit extremes, so that shared bounds move as i32.
  bool narrow = integerWidth(op.getType()) <= 32;
  Value minValue = c(narrow ? std::numeric_limits<int32_t>::max()
                            : std::numeric_limits<int64_t>::max());
  Value maxValue = c(narrow ? std::numeric_limits<int32_t>::min()
                            : std::numeric_limits<int64_t>::min());
  OpBuilder::InsertionGuard guard(b);
  for (auto [dim, at, span] : llvm::enumerate(box, spans)) {
    bool innermost = dim + 1 == box.size();
    Value upper = toIndex(select(ok, span, c(0)));
    // Owned: a ValueRange of a braced list would outlive the list.
    SmallVector<Value> carried =
        loops.empty() ? SmallVector<Value>{minValue, maxValue}
                      : SmallVector<Value>(loops.back().getRegionIterArgs());
    Value first = zero;
    int64_t step = 1;
    if (innermost) {
      step = perStep * lanes;
      if (group)
        first = arith::MulIOp::create(
            b, loc, group->rank,
            arith::ConstantIndexOp::create(b, loc, perStep));
    }
    auto loop = scf::ForOp::create(b, loc, first, upper,
                                   arith::ConstantIndexOp::create(b, loc, step),
                                   carried);
    b.setInsertionPointToStart(loop.getBody());
    indices.push_back(
        arith::AddIOp::create(b, loc, toIndex(at.lo), loop.getInductionVar()));
    loops.push_back(loop);
  }
  ValueRange carried = loops.back().getRegionIterArgs();
  Value lo = carried[0], hi = carried[1];
  Value last = toIndex(box.back().hi);
  for (int64_t i = 0; i < perStep; ++i) {
    SmallVector<Value> at(indices);
    at.back() = arith::MinSIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, indices.back(),
                              arith::ConstantIndexOp::create(b, loc, i)),
        last);
    Value element = toI64(tensor::ExtractOp::create(b, loc, tensor, at));
    lo = smin(lo, element);
    hi = smax(hi, element);
  }
  scf::YieldOp::create(b, loc, ValueRange{lo, hi});
  for (size_t i = loops.size() - 1; i > 0; --i) {
    b.setInsertionPointAfter(loops[i]);
    scf::YieldOp::create(b, loc, loops[i].getResults());
  }
  b.setInsertionPointAfter(loops.front());
  Interval bounds = {loops.front().getResult(0), loops.front().getResult(1)};
  return group ? combine(bounds, *group, narrow) : bounds;
}

Value Bounder::shuffleXor(Value v, int64_t mask, bool narrow) {
  // shfl.sync moves 32 bits: a wider value's two halves apart.
  Type i32 = b.getI32Type();
  auto i32Const = [&](int64_t x) {
    return arith::ConstantIntOp::create(b, loc, i32, x).getResult();
  };
  auto shuffle = [&](Value half) {
    Value clamp = i32Const(0x1f);
    Value offset = i32Const(mask);
    Value lanes = i32Const(-1);
    return NVVM::ShflOp::create(b, loc, i32, lanes, half, offset, clamp,
                                NVVM::ShflKind::bfly,
                                /*return_value_and_is_valid=*/UnitAttr())
        .getResult();
  };
  Value low = shuffle(arith::TruncIOp::create(b, loc, i32, v));
  if (narrow)
    return arith::ExtSIOp::create(b, loc, i64, low);
  Value high = shuffle(arith::TruncIOp::create(
      b, loc, i32, arith::ShRUIOp::create(b, loc, v, c(32))));
  Value bits = c(32);
  Value highPart = arith::ShLIOp::create(
      b, loc, arith::ExtUIOp::create(b, loc, i64, high), bits);
  return arith::OrIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, low),
                              highPart);
}

Interval Bounder::combine(Interval x, const SharedReads::Group &group,
                          bool narrow) {
  for (int64_t mask : group.xorMasks)
    x = {smin(x.lo, shuffleXor(x.lo, mask, narrow)),
         smax(x.hi, shuffleXor(x.hi, mask, narrow))};
  return x;
}

Interval Bounder::visit(Operation &op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    APInt value = cast<IntegerAttr>(constant.getValue()).getValue();
    int64_t v = constant.getType().isInteger(1) ? value.getZExtValue()
                                                : value.getSExtValue();
    return {c(v), c(v)};
  }
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    return read(extract);
  Interval x = get(op.getOperand(0));
  if (isCast(&op)) {
    Type from = op.getOperand(0).getType(), to = op.getResult(0).getType();
    unsigned fromWidth = integerWidth(from), toWidth = integerWidth(to);
    if (toWidth < fromWidth) {
      requireFits(x, toWidth);
      return x;
    }
    bool zeroExtends = isa<arith::ExtUIOp, arith::IndexCastUIOp>(op);
    if (from.isInteger(1) && !zeroExtends)
      // Sign-extended true is -1.
      return {arith::SubIOp::create(b, loc, c(0), x.hi),
              arith::SubIOp::create(b, loc, c(0), x.lo)};
    if (zeroExtends && !from.isInteger(1) && toWidth > fromWidth)
      requireNonNegative(x);
    return x;
  }
  if (isDivision(&op))
    return divide(&op, x, *positiveDivisor(&op));
  if (auto select = dyn_cast<arith::SelectOp>(op)) {
    Interval t = get(select.getTrueValue()), f = get(select.getFalseValue());
    Value always = isOne(x.lo), never = isZero(x.hi);
    return {
        this->select(always, t.lo, this->select(never, f.lo, smin(t.lo, f.lo))),
        this->select(always, t.hi,
                     this->select(never, f.hi, smax(t.hi, f.hi)))};
  }
  Interval y = get(op.getOperand(1));
  unsigned width = integerWidth(op.getResult(0).getType());
  if (auto cmpOp = dyn_cast<arith::CmpIOp>(op))
    return compare(cmpOp, x, y);
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    requireWithin(x, kAddLimit);
    requireWithin(y, kAddLimit);
    Interval sum = isa<arith::AddIOp>(op)
                       ? Interval{arith::AddIOp::create(b, loc, x.lo, y.lo),
                                  arith::AddIOp::create(b, loc, x.hi, y.hi)}
                       : Interval{arith::SubIOp::create(b, loc, x.lo, y.hi),
                                  arith::SubIOp::create(b, loc, x.hi, y.lo)};
    requireFits(sum, width);
    return sum;
  }
  if (isa<arith::MulIOp>(op)) {
    requireWithin(x, kMulLimit);
    requireWithin(y, kMulLimit);
    Value products[] = {arith::MulIOp::create(b, loc, x.lo, y.lo),
                        arith::MulIOp::create(b, loc, x.lo, y.hi),
                        arith::MulIOp::create(b, loc, x.hi, y.lo),
                        arith::MulIOp::create(b, loc, x.hi, y.hi)};
    Value lowest23 = smin(products[2], products[3]);
    Value lowest = smin(smin(products[0], products[1]), lowest23);
    Value highest23 = smax(products[2], products[3]);
    Value highest = smax(smax(products[0], products[1]), highest23);
    Interval product = {lowest, highest};
    requireFits(product, width);
    return product;
  }
  if (isa<arith::MinUIOp, arith::MaxUIOp>(op)) {
    // On non-negative values unsigned order is signed order.
    requireNonNegative(x);
    requireNonNegative(y);
  }
  if (isa<arith::MinSIOp, arith::MinUIOp, arith::AndIOp>(op))
    return {smin(x.lo, y.lo), smin(x.hi, y.hi)};
  if (isa<arith::MaxSIOp, arith::MaxUIOp, arith::OrIOp>(op))
    return {smax(x.lo, y.lo), smax(x.hi, y.hi)};
  assert(isa<arith::XOrIOp>(op) && "canBoundMaskMod admits no other op");
  // Always true when one side is always true and the other never is; may be
  // true when one may be true while the other may be false.
  Value yMust = isOne(y.lo);
  Value yMustXNever = both(isZero(x.hi), yMust);
  Value yNever = isZero(y.hi);
  Value must = either(both(isOne(x.lo), yNever), yMustXNever);
  Value yMay = isOne(y.hi);
  Value yMayXMayNot = both(isZero(x.lo), yMay);
  Value yMayNot = isZero(y.lo);
  Value may = either(both(isOne(x.hi), yMayNot), yMayXMayNot);
  return truth(must, may);
}

MaskBounds Bounder::run(Region &region, ArrayRef<Interval> args) {
  Block &block = region.front();
  for (auto [i, arg, interval] : llvm::enumerate(block.getArguments(), args)) {
    intervals[arg] = interval;
    argsOf[arg] = 1u << i;
  }
  for (Operation &op : block.without_terminator()) {
    unsigned dependsOn = 0;
    for (Value operand : op.getOperands())
      dependsOn |= argsOf.lookup(operand);
    argsOf[op.getResult(0)] = dependsOn;
    intervals[op.getResult(0)] = visit(op);
  }
  Interval result = get(cast<YieldOp>(block.getTerminator()).getValues()[0]);
  Value mayKeep = isOne(result.hi), mayDrop = isZero(result.lo);
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  if (!valid)
    return {mayKeep, mayDrop, yes};
  Value unknown = arith::XOrIOp::create(b, loc, valid, yes);
  return {either(mayKeep, unknown), either(mayDrop, unknown), valid};
}

} // namespace

bool mlir::attn::canBoundMaskMod(Region &maskMod) {
  if (!maskMod.hasOneBlock())
    return false;
  for (Operation &op : maskMod.front())
    if (!canBound(op) || (op.getNumResults() > 1))
      return false;
  return true;
}

MaskBounds mlir::attn::boundMaskMod(OpBuilder &builder, Location loc,
                                    Region &maskMod, Value b, Value h,
                                    Value qFirst, Value qLast, Value kvFirst,
                                    Value kvLast, int64_t maxReadSpan,
                                    const SharedReads *shared) {
  Bounder bounder(builder, loc, maxReadSpan, shared);
  auto i64 = builder.getI64Type();
  auto cast = [&](Value v) {
    return arith::IndexCastOp::create(builder, loc, i64, v).getResult();
  };
  Value bi = cast(b), hi = cast(h);
  return bounder.run(maskMod, {Interval{bi, bi}, Interval{hi, hi},
                               Interval{cast(qFirst), cast(qLast)},
                               Interval{cast(kvFirst), cast(kvLast)}});
}
