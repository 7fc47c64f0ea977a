//===- Reference.cpp ------------------------------------------------------===//

#include "Reference.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;
using namespace attn_run;
using llvm::APInt;

namespace {

/// Integers the interpreter holds exactly: signless, 1 to 64 bits, or index
/// (64 bits, as on the CPU that attn-run's kernels run on).
bool isScalarInt(Type type) {
  if (type.isIndex())
    return true;
  auto integer = dyn_cast<IntegerType>(type);
  return integer && integer.isSignless() && integer.getWidth() >= 1 &&
         integer.getWidth() <= 64;
}

bool isScalar(Type type) { return isScalarInt(type) || isa<FloatType>(type); }

unsigned widthOf(Type type) {
  return type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
}

APInt toAPInt(Scalar value, Type type) {
  return APInt(widthOf(type), static_cast<uint64_t>(value.i),
               /*isSigned=*/true);
}

Scalar fromAPInt(const APInt &value) {
  return Scalar::ofInt(value.getSExtValue());
}

Scalar fromBool(bool value) { return Scalar::ofInt(value ? -1 : 0); }

std::string str(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// A double that came from an integer element, back as an int64_t: HostTensor
/// hands elements out as doubles, and an i64 near 2^63 rounds to a double
/// that int64_t cannot hold, so saturate rather than convert out of range.
int64_t saturatingInt(double value) {
  constexpr double limit = 9223372036854775808.0; // 2^63
  if (std::isnan(value))
    return 0;
  if (value >= limit)
    return std::numeric_limits<int64_t>::max();
  if (value < -limit)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

/// The value of an arith.constant the interpreter can hold.
std::optional<Scalar> constantValue(arith::ConstantOp constant) {
  if (!constant || !isScalar(constant.getType()))
    return std::nullopt;
  Attribute attr = constant.getValue();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return Scalar::ofFloat(f.getValueAsDouble());
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return Scalar::ofInt(i.getValue().getSExtValue());
  return std::nullopt;
}

bool compareInt(arith::CmpIPredicate predicate, const APInt &a,
                const APInt &b) {
  switch (predicate) {
  case arith::CmpIPredicate::eq:
    return a == b;
  case arith::CmpIPredicate::ne:
    return a != b;
  case arith::CmpIPredicate::slt:
    return a.slt(b);
  case arith::CmpIPredicate::sle:
    return a.sle(b);
  case arith::CmpIPredicate::sgt:
    return a.sgt(b);
  case arith::CmpIPredicate::sge:
    return a.sge(b);
  case arith::CmpIPredicate::ult:
    return a.ult(b);
  case arith::CmpIPredicate::ule:
    return a.ule(b);
  case arith::CmpIPredicate::ugt:
    return a.ugt(b);
  case arith::CmpIPredicate::uge:
    return a.uge(b);
  }
  return false;
}

bool compareFloat(arith::CmpFPredicate predicate, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (predicate) {
  case arith::CmpFPredicate::AlwaysFalse:
    return false;
  case arith::CmpFPredicate::AlwaysTrue:
    return true;
  case arith::CmpFPredicate::OEQ:
    return !unordered && a == b;
  case arith::CmpFPredicate::OGT:
    return !unordered && a > b;
  case arith::CmpFPredicate::OGE:
    return !unordered && a >= b;
  case arith::CmpFPredicate::OLT:
    return !unordered && a < b;
  case arith::CmpFPredicate::OLE:
    return !unordered && a <= b;
  case arith::CmpFPredicate::ONE:
    return !unordered && a != b;
  case arith::CmpFPredicate::ORD:
    return !unordered;
  case arith::CmpFPredicate::UEQ:
    return unordered || a == b;
  case arith::CmpFPredicate::UGT:
    return unordered || a > b;
  case arith::CmpFPredicate::UGE:
    return unordered || a >= b;
  case arith::CmpFPredicate::ULT:
    return unordered || a < b;
  case arith::CmpFPredicate::ULE:
    return unordered || a <= b;
  case arith::CmpFPredicate::UNE:
    return unordered || a != b;
  case arith::CmpFPredicate::UNO:
    return unordered;
  }
  return false;
}

/// arith.maximumf / minimumf: NaN if either is NaN, and -0 < +0.
double maximumF(double a, double b, bool max) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b) // equal, or +0 and -0: the sign decides
    return std::signbit(a) == max ? b : a;
  return (a > b) == max ? a : b;
}

bool isSupported(Operation *op) {
  return isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp,
             arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
             arith::FloorDivSIOp, arith::CeilDivSIOp, arith::CeilDivUIOp,
             arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp,
             arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::ShLIOp,
             arith::ShRUIOp, arith::ShRSIOp, arith::CmpIOp, arith::CmpFOp,
             arith::SelectOp, arith::IndexCastOp, arith::IndexCastUIOp,
             arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp, arith::FPToUIOp,
             arith::ExtFOp, arith::TruncFOp, arith::ExtSIOp, arith::ExtUIOp,
             arith::TruncIOp, arith::AddFOp, arith::SubFOp, arith::MulFOp,
             arith::DivFOp, arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp, math::TanhOp, math::ExpOp,
             math::Exp2Op, math::LogOp, math::AbsFOp, math::SqrtOp,
             math::AbsIOp, math::FmaOp, tensor::ExtractOp>(op);
}

/// 'arith.divsi' at FILE:LINE:COL, for messages.
std::string describe(Operation &op) {
  std::string text = "'" + op.getName().getStringRef().str() + "'";
  if (auto loc = op.getLoc()->findInstanceOf<FileLineColLoc>())
    text += llvm::formatv(" at {0}:{1}:{2}", loc.getFilename().getValue(),
                          loc.getLine(), loc.getColumn());
  return text;
}

llvm::Error opError(Operation &op, const llvm::Twine &what) {
  return llvm::createStringError(describe(op) + " " + what);
}

/// Integer ops of two operands (and a result) of one type. Division by zero
/// and signed division overflow are undefined behaviour in MLIR (and trap
/// on x86); a shift by the width or more, a flagged overflow and an inexact
/// `exact` division are poison. All are errors.
llvm::Expected<Scalar> evaluateIntBinary(Operation &op, Scalar lhs,
                                         Scalar rhs) {
  Type type = op.getOperand(0).getType();
  APInt a = toAPInt(lhs, type), b = toAPInt(rhs, type);
  unsigned width = a.getBitWidth();
  bool isSigned = isa<arith::DivSIOp, arith::RemSIOp, arith::CeilDivSIOp,
                      arith::FloorDivSIOp>(op);
  bool divides =
      isSigned || isa<arith::DivUIOp, arith::RemUIOp, arith::CeilDivUIOp>(op);
  if (divides && b.isZero())
    return opError(op, llvm::formatv("divides {0} by zero ({1})",
                                     isSigned ? llvm::toString(a, 10, true)
                                              : llvm::toString(a, 10, false),
                                     str(type)));
  if (isSigned && a.isMinSignedValue() && b.isAllOnes())
    return opError(op, llvm::formatv("divides {0} by -1, which overflows {1}",
                                     llvm::toString(a, 10, true), str(type)));
  bool shifts = isa<arith::ShLIOp, arith::ShRUIOp, arith::ShRSIOp>(op);
  if (shifts && b.uge(width))
    return opError(op, llvm::formatv("shifts by {0} bits, at least the width "
                                     "of {1}: poison",
                                     llvm::toString(b, 10, false), str(type)));
  unsigned amount = shifts ? static_cast<unsigned>(b.getZExtValue()) : 0;

  bool signedOverflow = false, unsignedOverflow = false;
  APInt r =
      llvm::TypeSwitch<Operation *, APInt>(&op)
          .Case([&](arith::AddIOp) {
            (void)a.sadd_ov(b, signedOverflow);
            return a.uadd_ov(b, unsignedOverflow);
          })
          .Case([&](arith::SubIOp) {
            (void)a.ssub_ov(b, signedOverflow);
            return a.usub_ov(b, unsignedOverflow);
          })
          .Case([&](arith::MulIOp) {
            (void)a.smul_ov(b, signedOverflow);
            return a.umul_ov(b, unsignedOverflow);
          })
          .Case([&](arith::ShLIOp) {
            (void)a.sshl_ov(amount, signedOverflow);
            return a.ushl_ov(amount, unsignedOverflow);
          })
          .Case([&](arith::DivSIOp) { return a.sdiv(b); })
          .Case([&](arith::DivUIOp) { return a.udiv(b); })
          .Case([&](arith::RemSIOp) { return a.srem(b); })
          .Case([&](arith::RemUIOp) { return a.urem(b); })
          .Case([&](arith::CeilDivSIOp) {
            return llvm::APIntOps::RoundingSDiv(a, b, APInt::Rounding::UP);
          })
          .Case([&](arith::CeilDivUIOp) {
            return llvm::APIntOps::RoundingUDiv(a, b, APInt::Rounding::UP);
          })
          .Case([&](arith::FloorDivSIOp) {
            return llvm::APIntOps::RoundingSDiv(a, b, APInt::Rounding::DOWN);
          })
          .Case([&](arith::MinSIOp) { return a.slt(b) ? a : b; })
          .Case([&](arith::MaxSIOp) { return a.sgt(b) ? a : b; })
          .Case([&](arith::MinUIOp) { return a.ult(b) ? a : b; })
          .Case([&](arith::MaxUIOp) { return a.ugt(b) ? a : b; })
          .Case([&](arith::AndIOp) { return a & b; })
          .Case([&](arith::OrIOp) { return a | b; })
          .Case([&](arith::XOrIOp) { return a ^ b; })
          .Case([&](arith::ShRUIOp) { return a.lshr(amount); })
          .Case([&](arith::ShRSIOp) { return a.ashr(amount); })
          .Default([&](Operation *) { return APInt(width, 0); });

  if (auto flags = dyn_cast<arith::ArithIntegerOverflowFlagsInterface>(op)) {
    if (flags.hasNoSignedWrap() && signedOverflow)
      return opError(op, llvm::formatv("overflows a signed {0} with "
                                       "overflow<nsw>, which is poison",
                                       str(type)));
    if (flags.hasNoUnsignedWrap() && unsignedOverflow)
      return opError(op, llvm::formatv("overflows an unsigned {0} with "
                                       "overflow<nuw>, which is poison",
                                       str(type)));
  }
  bool exact =
      llvm::TypeSwitch<Operation *, bool>(&op)
          .Case<arith::DivSIOp, arith::DivUIOp, arith::ShRUIOp, arith::ShRSIOp>(
              [](auto typed) { return typed.getIsExact(); })
          .Default([](Operation *) { return false; });
  if (exact) {
    bool inexact =
        shifts ? a.countr_zero() < amount
               : !(isa<arith::DivSIOp>(op) ? a.srem(b) : a.urem(b)).isZero();
    if (inexact)
      return opError(op, "is not exact although marked `exact`, which is "
                         "poison");
  }
  return fromAPInt(r);
}

/// Integer-to-integer casts: sign or zero extension and truncation, all
/// defined; a truncation with overflow flags that changes the value is
/// poison.
llvm::Expected<Scalar> evaluateIntCast(Operation &op, Scalar in) {
  Type from = op.getOperand(0).getType(), to = op.getResult(0).getType();
  APInt a = toAPInt(in, from);
  unsigned width = widthOf(to);
  bool zeroExtends = isa<arith::IndexCastUIOp, arith::ExtUIOp>(op);
  APInt r = zeroExtends ? a.zextOrTrunc(width) : a.sextOrTrunc(width);
  if (auto trunc = dyn_cast<arith::TruncIOp>(op)) {
    if (trunc.hasNoSignedWrap() && r.sext(a.getBitWidth()) != a)
      return opError(op, llvm::formatv("truncates {0} to {1} with "
                                       "overflow<nsw>, which is poison",
                                       llvm::toString(a, 10, true), str(to)));
    if (trunc.hasNoUnsignedWrap() && r.zext(a.getBitWidth()) != a)
      return opError(op, llvm::formatv("truncates {0} to {1} with "
                                       "overflow<nuw>, which is poison",
                                       llvm::toString(a, 10, false), str(to)));
  }
  return fromAPInt(r);
}

/// fptosi / fptoui: NaN and values whose integer part the result type
/// cannot hold give poison.
llvm::Expected<Scalar> evaluateFloatToInt(Operation &op, Scalar in) {
  Type to = op.getResult(0).getType();
  unsigned width = widthOf(to);
  bool isSigned = isa<arith::FPToSIOp>(op);
  double t = std::trunc(in.f);
  double low = isSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  double high = std::ldexp(1.0, isSigned ? width - 1 : width);
  if (std::isnan(t) || t < low || t >= high)
    return opError(op, llvm::formatv("converts {0} to {1}, which cannot hold "
                                     "it: poison",
                                     llvm::format("%.17g", in.f), str(to)));
  if (isSigned)
    return Scalar::ofInt(static_cast<int64_t>(t));
  return Scalar::ofInt(llvm::SignExtend64(static_cast<uint64_t>(t), width));
}

/// fastmath<nnan> and <ninf> make a NaN or an infinity among the operands or
/// the result poison.
llvm::Error checkFastMath(Operation &op, ArrayRef<Scalar> in, Scalar result) {
  auto fastMath = dyn_cast<arith::ArithFastMathInterface>(op);
  if (!fastMath || !fastMath.getFastMathFlagsAttr())
    return llvm::Error::success();
  arith::FastMathFlags flags = fastMath.getFastMathFlagsAttr().getValue();
  bool noNaN = arith::bitEnumContainsAll(flags, arith::FastMathFlags::nnan);
  bool noInf = arith::bitEnumContainsAll(flags, arith::FastMathFlags::ninf);
  if (!noNaN && !noInf)
    return llvm::Error::success();
  SmallVector<double, 4> floats;
  for (auto [operand, value] : llvm::zip(op.getOperands(), in))
    if (isa<FloatType>(operand.getType()))
      floats.push_back(value.f);
  if (isa<FloatType>(op.getResult(0).getType()))
    floats.push_back(result.f);
  for (double value : floats) {
    if (noNaN && std::isnan(value))
      return opError(op, "meets a NaN with fastmath<nnan>, which is poison");
    if (noInf && std::isinf(value))
      return opError(op,
                     "meets an infinity with fastmath<ninf>, which is poison");
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error RegionInterpreter::check(Region &region, StringRef name) const {
  if (!region.hasOneBlock())
    return llvm::createStringError("the reference evaluates a " + name +
                                   " of one block only");
  Block &block = region.front();
  for (Operation &op : block) {
    bool isYield = isa<attn::YieldOp>(op);
    if (!isYield && (!isSupported(&op) || op.getNumResults() != 1))
      return llvm::createStringError(
          "the reference cannot evaluate '" + op.getName().getStringRef() +
          "' in a region (" + describe(op) + " in " + name +
          "); it knows arith, math and tensor.extract of captured tensors");
    for (Type type : op.getResultTypes())
      if (!isScalar(type))
        return llvm::createStringError(
            describe(op) + " in " + name + " gives a " + str(type) +
            "; the reference evaluates integers of up to 64 bits, index and "
            "floats");
    auto extract = dyn_cast<tensor::ExtractOp>(op);
    for (Value operand : op.getOperands()) {
      if (extract && operand == extract.getTensor()) {
        if (!captures.count(operand))
          return llvm::createStringError(
              "tensor.extract in a region must read a function argument (" +
              describe(op) + " in " + name + ")");
        continue;
      }
      if (!isScalar(operand.getType()))
        return llvm::createStringError(
            describe(op) + " in " + name + " takes a " +
            str(operand.getType()) +
            "; the reference evaluates integers of up to 64 bits, index and "
            "floats");
      // Values from above the region: only constants (hoisted out of it)
      // have a value the reference knows.
      if (operand.getParentBlock() != &block &&
          !constantValue(operand.getDefiningOp<arith::ConstantOp>()))
        return llvm::createStringError(
            describe(op) + " in " + name +
            " uses a value defined above the region that is not an "
            "arith.constant; the reference cannot evaluate it");
    }
  }
  return llvm::Error::success();
}

llvm::Expected<Scalar> RegionInterpreter::run(Region &region,
                                              ArrayRef<Scalar> args) const {
  Block &block = region.front();
  if (args.size() != block.getNumArguments())
    return llvm::createStringError(
        llvm::formatv("the region takes {0} arguments, not {1}",
                      block.getNumArguments(), args.size()));
  llvm::SmallDenseMap<Value, Scalar, 16> values;
  for (auto [arg, value] : llvm::zip_equal(block.getArguments(), args))
    values[arg] = value;
  auto get = [&](Value v) -> std::optional<Scalar> {
    auto it = values.find(v);
    if (it != values.end())
      return it->second;
    return constantValue(v.getDefiningOp<arith::ConstantOp>());
  };

  for (Operation &op : block.without_terminator()) {
    // The scalar operands, in order (tensor.extract's tensor left out).
    SmallVector<Scalar, 4> in;
    for (Value operand : op.getOperands()) {
      if (isa<TensorType>(operand.getType()))
        continue;
      std::optional<Scalar> value = get(operand);
      if (!value)
        return opError(op, "uses a value the reference cannot evaluate");
      in.push_back(*value);
    }
    auto a = [&] { return in[0].f; };
    auto b = [&] { return in[1].f; };
    std::optional<llvm::Expected<Scalar>> result;
    auto set = [&](llvm::Expected<Scalar> value) {
      result.emplace(std::move(value));
    };
    auto setFloat = [&](double value) { set(Scalar::ofFloat(value)); };
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](arith::ConstantOp c) {
          std::optional<Scalar> value = constantValue(c);
          if (value)
            set(*value);
        })
        .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp,
              arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
              arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp,
              arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp,
              arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::ShLIOp,
              arith::ShRUIOp, arith::ShRSIOp>(
            [&](Operation *) { set(evaluateIntBinary(op, in[0], in[1])); })
        .Case([&](arith::CmpIOp c) {
          Type type = c.getLhs().getType();
          set(fromBool(compareInt(c.getPredicate(), toAPInt(in[0], type),
                                  toAPInt(in[1], type))));
        })
        .Case([&](arith::CmpFOp c) {
          set(fromBool(compareFloat(c.getPredicate(), a(), b())));
        })
        .Case([&](arith::SelectOp) { set(in[0].i != 0 ? in[1] : in[2]); })
        .Case<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
              arith::ExtUIOp, arith::TruncIOp>(
            [&](Operation *) { set(evaluateIntCast(op, in[0])); })
        .Case([&](arith::SIToFPOp s) {
          setFloat(static_cast<double>(
              toAPInt(in[0], s.getIn().getType()).getSExtValue()));
        })
        .Case([&](arith::UIToFPOp u) {
          setFloat(static_cast<double>(
              toAPInt(in[0], u.getIn().getType()).getZExtValue()));
        })
        .Case<arith::FPToSIOp, arith::FPToUIOp>(
            [&](Operation *) { set(evaluateFloatToInt(op, in[0])); })
        // The reference keeps every float in double precision.
        .Case<arith::ExtFOp, arith::TruncFOp>(
            [&](Operation *) { setFloat(a()); })
        .Case([&](arith::AddFOp) { setFloat(a() + b()); })
        .Case([&](arith::SubFOp) { setFloat(a() - b()); })
        .Case([&](arith::MulFOp) { setFloat(a() * b()); })
        .Case([&](arith::DivFOp) { setFloat(a() / b()); })
        .Case([&](arith::NegFOp) { setFloat(-a()); })
        .Case([&](arith::MaximumFOp) { setFloat(maximumF(a(), b(), true)); })
        .Case([&](arith::MinimumFOp) { setFloat(maximumF(a(), b(), false)); })
        .Case([&](arith::MaxNumFOp) { setFloat(std::fmax(a(), b())); })
        .Case([&](arith::MinNumFOp) { setFloat(std::fmin(a(), b())); })
        .Case([&](math::TanhOp) { setFloat(std::tanh(a())); })
        .Case([&](math::ExpOp) { setFloat(std::exp(a())); })
        .Case([&](math::Exp2Op) { setFloat(std::exp2(a())); })
        .Case([&](math::LogOp) { setFloat(std::log(a())); })
        .Case([&](math::AbsFOp) { setFloat(std::fabs(a())); })
        .Case([&](math::SqrtOp) { setFloat(std::sqrt(a())); })
        // |INT_MIN| wraps to INT_MIN, as math.absi lowers to llvm.intr.abs
        // with is_int_min_poison = false.
        .Case([&](math::AbsIOp i) {
          set(fromAPInt(toAPInt(in[0], i.getType()).abs()));
        })
        .Case([&](math::FmaOp) { setFloat(std::fma(a(), b(), in[2].f)); })
        .Case([&](tensor::ExtractOp extract) {
          set(extractElement(extract, in));
        });
    if (!result)
      return opError(op, "cannot be evaluated by the reference");
    if (!*result)
      return result->takeError();
    if (llvm::Error error = checkFastMath(op, in, **result))
      return std::move(error);
    values[op.getResult(0)] = **result;
  }
  auto yield = cast<attn::YieldOp>(block.getTerminator());
  std::optional<Scalar> value = get(yield.getValues()[0]);
  if (!value)
    return opError(*yield, "yields a value the reference cannot evaluate");
  return *value;
}

llvm::Expected<Scalar>
RegionInterpreter::extractElement(tensor::ExtractOp extract,
                                  ArrayRef<Scalar> indices) const {
  Operation &op = *extract;
  const HostTensor *tensor = captures.lookup(extract.getTensor());
  if (!tensor)
    return opError(op, "reads a tensor that is not a captured argument");
  std::string argument = "a captured tensor";
  if (auto arg = dyn_cast<BlockArgument>(extract.getTensor()))
    argument = "argument #" + std::to_string(arg.getArgNumber());
  const std::vector<int64_t> &shape = tensor->shape();
  if (indices.size() != shape.size())
    return opError(op, llvm::formatv("reads {0} with {1} indices, but it has "
                                     "{2} dims",
                                     argument, indices.size(), shape.size()));
  // Out-of-bounds reads are undefined (and the kernel's may fault): an
  // error, with no clamped stand-in value.
  int64_t linear = 0;
  for (auto [dim, index] : llvm::enumerate(indices)) {
    int64_t size = shape[dim];
    if (index.i < 0 || index.i >= size)
      return opError(op, llvm::formatv("reads index {0} of dim {1} of {2}, "
                                       "whose size is {3}: out of bounds",
                                       index.i, dim, argument, size));
    linear = linear * size + index.i;
  }
  Type type = extract.getType();
  if (attn_runtime::isFloat(tensor->kind()) != isa<FloatType>(type))
    return opError(
        op, llvm::formatv("reads a {0} from {1}, which holds {2}", str(type),
                          argument, attn_runtime::elementName(tensor->kind())));
  double value = tensor->get(linear);
  if (isa<FloatType>(type))
    return Scalar::ofFloat(value);
  return Scalar::ofInt(llvm::SignExtend64(
      static_cast<uint64_t>(saturatingInt(value)), widthOf(type)));
}

llvm::Expected<ReferenceResult> attn_run::referenceAttention(
    mlir::attn::AttentionOp op, const RegionInterpreter &interp,
    const HostTensor &q, const HostTensor &k, const HostTensor &v,
    std::pair<int64_t, int64_t> blockSizes) {
  int64_t batches = q.shape()[0], heads = q.shape()[1], rows = q.shape()[2],
          d = q.shape()[3];
  int64_t kvHeads = k.shape()[1], n = k.shape()[2], dv = v.shape()[3];
  int64_t group = heads / kvHeads;
  double scale = op.getScaleValue();
  bool causal = op.getCausal();
  double negInf = -std::numeric_limits<double>::infinity();
  // An undefined region result names the region and the position.
  auto at = [](const char *region, int64_t b, int64_t h, int64_t i, int64_t j,
               llvm::Error error) -> llvm::Error {
    return llvm::createStringError(
        llvm::formatv("{0} at (b, h, q, kv) = ({1}, {2}, {3}, {4}): {5}",
                      region, b, h, i, j, llvm::toString(std::move(error)))
            .str());
  };

  // Decode the inputs once; the loops below touch each element many times.
  auto decode = [](const HostTensor &t) {
    std::vector<double> values(t.numElements());
    for (int64_t i = 0; i < t.numElements(); ++i)
      values[i] = t.get(i);
    return values;
  };
  std::vector<double> qs = decode(q), ks = decode(k), vs = decode(v);

  ReferenceResult result;
  result.blocks = BlockPattern(batches, heads, rows, n, blockSizes.first,
                               blockSizes.second);
  result.output.assign(batches * heads * rows * dv, 0.0);
  result.logsumexp.assign(batches * heads * rows, negInf);
  std::vector<double> scores(n);
  std::vector<char> keep(n);
  // Regions see only positions inside the problem (q < M, kv < N), but all
  // of those, masked or not: kernels evaluate both regions on whole tiles
  // and select afterwards, so a region that is undefined at a masked
  // position is reported here too, before the kernel runs.
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t hk = h / group;
      for (int64_t i = 0; i < rows; ++i) {
        double max = negInf;
        for (int64_t j = 0; j < n; ++j) {
          bool visible = !causal || j <= i;
          if (op.hasMaskMod()) {
            Scalar position[] = {Scalar::ofInt(b), Scalar::ofInt(h),
                                 Scalar::ofInt(i), Scalar::ofInt(j)};
            llvm::Expected<Scalar> kept = interp.run(op.getMaskMod(), position);
            if (!kept)
              return at("mask_mod", b, h, i, j, kept.takeError());
            visible = visible && kept->i != 0;
          }
          keep[j] = visible;
          result.blocks.mark(b, h, i, j, visible);
          if (!visible && !op.hasScoreMod())
            continue;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += qs[((b * heads + h) * rows + i) * d + c] *
                   ks[((b * kvHeads + hk) * n + j) * d + c];
          double s = scale * dot;
          if (op.hasScoreMod()) {
            Scalar args[] = {Scalar::ofFloat(s), Scalar::ofInt(b),
                             Scalar::ofInt(h), Scalar::ofInt(i),
                             Scalar::ofInt(j)};
            llvm::Expected<Scalar> modified =
                interp.run(op.getScoreMod(), args);
            if (!modified)
              return at("score_mod", b, h, i, j, modified.takeError());
            s = modified->f;
          }
          if (!visible)
            continue;
          ++result.visiblePairs;
          scores[j] = s;
          max = std::max(max, s);
        }
        if (max == negInf)
          continue; // fully masked row: output 0, logsumexp -inf
        double sum = 0;
        for (int64_t j = 0; j < n; ++j)
          if (keep[j])
            sum += std::exp(scores[j] - max);
        double *out = &result.output[((b * heads + h) * rows + i) * dv];
        for (int64_t j = 0; j < n; ++j) {
          if (!keep[j])
            continue;
          double p = std::exp(scores[j] - max) / sum;
          for (int64_t c = 0; c < dv; ++c)
            out[c] += p * vs[((b * kvHeads + hk) * n + j) * dv + c];
        }
        result.logsumexp[(b * heads + h) * rows + i] = max + std::log(sum);
      }
    }
  return result;
}
