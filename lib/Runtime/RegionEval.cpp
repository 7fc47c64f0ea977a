//===- RegionEval.cpp - evaluating region programs ------------------------===//
//
// Integers are held sign-extended in 64 bits and wrapped to their width
// after every op, as MLIR's APInt semantics give; what MLIR leaves
// undefined is an error naming the op.
//
//===----------------------------------------------------------------------===//

#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Region.h"

#include <cmath>
#include <cstdio>
#include <limits>

using namespace attn_runtime;

namespace {

using Kind = RegionOp::Kind;

uint64_t lowBits(unsigned width) {
  return width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
}

/// The low `width` bits of `value`, sign-extended.
int64_t signExtend(uint64_t value, unsigned width) {
  if (width >= 64)
    return static_cast<int64_t>(value);
  uint64_t sign = uint64_t(1) << (width - 1);
  value &= lowBits(width);
  return static_cast<int64_t>((value ^ sign) - sign);
}

/// The low `width` bits of `value`, read unsigned.
uint64_t unsignedOf(int64_t value, unsigned width) {
  return static_cast<uint64_t>(value) & lowBits(width);
}

std::string format17(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

bool compareInt(const std::string &predicate, int64_t a, int64_t b,
                unsigned width) {
  uint64_t ua = unsignedOf(a, width), ub = unsignedOf(b, width);
  if (predicate == "eq")
    return a == b;
  if (predicate == "ne")
    return a != b;
  if (predicate == "slt")
    return a < b;
  if (predicate == "sle")
    return a <= b;
  if (predicate == "sgt")
    return a > b;
  if (predicate == "sge")
    return a >= b;
  if (predicate == "ult")
    return ua < ub;
  if (predicate == "ule")
    return ua <= ub;
  if (predicate == "ugt")
    return ua > ub;
  return ua >= ub; // uge
}

bool compareFloat(const std::string &predicate, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  if (predicate == "false")
    return false;
  if (predicate == "true")
    return true;
  if (predicate == "ord")
    return !unordered;
  if (predicate == "uno")
    return unordered;
  bool ordered = predicate[0] == 'o';
  std::string relation = predicate.substr(1);
  bool holds = relation == "eq"   ? a == b
               : relation == "gt" ? a > b
               : relation == "ge" ? a >= b
               : relation == "lt" ? a < b
               : relation == "le" ? a <= b
                                  : a != b; // ne
  return ordered ? !unordered && holds : unordered || holds;
}

/// arith.maximumf / minimumf: NaN if either is NaN, and -0 < +0.
double maximumF(double a, double b, bool max) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b) // equal, or +0 and -0: the sign decides
    return std::signbit(a) == max ? b : a;
  return (a > b) == max ? a : b;
}

/// Integer ops of two operands (and a result) of one type. Division by zero
/// and signed division overflow are undefined behaviour in MLIR (and trap
/// on x86); a shift by the width or more, a flagged overflow and an inexact
/// `exact` division are poison. All are errors.
bool intBinary(const RegionOp &op, int64_t a, int64_t b, int64_t &r,
               std::string &error) {
  const std::string &type = op.type.name;
  unsigned width = op.type.width;
  uint64_t ua = unsignedOf(a, width), ub = unsignedOf(b, width);
  int64_t minSigned = signExtend(uint64_t(1) << (width - 1), width);
  Kind kind = op.kind;
  bool isSigned = kind == Kind::DivSI || kind == Kind::RemSI ||
                  kind == Kind::CeilDivSI || kind == Kind::FloorDivSI;
  bool divides = isSigned || kind == Kind::DivUI || kind == Kind::RemUI ||
                 kind == Kind::CeilDivUI;
  auto fail = [&](const std::string &what) {
    error = op.describe() + " " + what;
    return false;
  };
  if (divides && ub == 0)
    return fail("divides " +
                (isSigned ? std::to_string(a) : std::to_string(ua)) +
                " by zero (" + type + ")");
  if (isSigned && a == minSigned && b == -1)
    return fail("divides " + std::to_string(a) + " by -1, which overflows " +
                type);
  bool shifts =
      kind == Kind::ShLI || kind == Kind::ShRUI || kind == Kind::ShRSI;
  if (shifts && ub >= width)
    return fail("shifts by " + std::to_string(ub) +
                " bits, at least the width of " + type + ": poison");
  unsigned amount = shifts ? static_cast<unsigned>(ub) : 0;

  // The exact result, to tell a flagged overflow.
  bool signedOverflow = false, unsignedOverflow = false;
  uint64_t bits = 0;
  switch (kind) {
  case Kind::AddI:
  case Kind::SubI:
  case Kind::MulI: {
    __int128 exact = kind == Kind::AddI   ? __int128(a) + b
                     : kind == Kind::SubI ? __int128(a) - b
                                          : __int128(a) * b;
    unsigned __int128 uexact = kind == Kind::AddI   ? (unsigned __int128)ua + ub
                               : kind == Kind::MulI ? (unsigned __int128)ua * ub
                                                    : (unsigned __int128)0;
    bits = static_cast<uint64_t>(exact);
    signedOverflow = exact != signExtend(bits, width);
    unsignedOverflow = kind == Kind::SubI
                           ? ua < ub
                           : uexact > (unsigned __int128)lowBits(width);
    break;
  }
  case Kind::ShLI:
    bits = (ua << amount) & lowBits(width);
    signedOverflow = (signExtend(bits, width) >> amount) != a;
    unsignedOverflow = (bits >> amount) != ua;
    break;
  case Kind::DivSI:
    bits = static_cast<uint64_t>(a / b);
    break;
  case Kind::DivUI:
    bits = ua / ub;
    break;
  case Kind::RemSI:
    bits = static_cast<uint64_t>(a % b);
    break;
  case Kind::RemUI:
    bits = ua % ub;
    break;
  case Kind::CeilDivSI:
  case Kind::FloorDivSI: {
    int64_t quotient = a / b, remainder = a % b;
    bool sameSign = (a < 0) == (b < 0);
    if (remainder != 0 && kind == Kind::CeilDivSI && sameSign)
      ++quotient;
    if (remainder != 0 && kind == Kind::FloorDivSI && !sameSign)
      --quotient;
    bits = static_cast<uint64_t>(quotient);
    break;
  }
  case Kind::CeilDivUI:
    bits = ua / ub + (ua % ub != 0);
    break;
  case Kind::MinSI:
    bits = static_cast<uint64_t>(a < b ? a : b);
    break;
  case Kind::MaxSI:
    bits = static_cast<uint64_t>(a > b ? a : b);
    break;
  case Kind::MinUI:
    bits = ua < ub ? ua : ub;
    break;
  case Kind::MaxUI:
    bits = ua > ub ? ua : ub;
    break;
  case Kind::AndI:
    bits = ua & ub;
    break;
  case Kind::OrI:
    bits = ua | ub;
    break;
  case Kind::XOrI:
    bits = ua ^ ub;
    break;
  case Kind::ShRUI:
    bits = ua >> amount;
    break;
  case Kind::ShRSI:
    bits = static_cast<uint64_t>(a >> amount);
    break;
  default:
    break;
  }
  if (op.nsw && signedOverflow)
    return fail("overflows a signed " + type +
                " with overflow<nsw>, which is poison");
  if (op.nuw && unsignedOverflow)
    return fail("overflows an unsigned " + type +
                " with overflow<nuw>, which is poison");
  if (op.exact) {
    bool inexact = shifts                ? (ua & lowBits(amount)) != 0
                   : kind == Kind::DivSI ? a % b != 0
                                         : ua % ub != 0;
    if (inexact)
      return fail("is not exact although marked `exact`, which is poison");
  }
  r = signExtend(bits, width);
  return true;
}

/// fptosi / fptoui: NaN and values whose integer part the result type
/// cannot hold give poison.
bool floatToInt(const RegionOp &op, double in, int64_t &r, std::string &error) {
  unsigned width = op.type.width;
  bool isSigned = op.kind == Kind::FPToSI;
  double t = std::trunc(in);
  double low = isSigned ? -std::ldexp(1.0, width - 1) : 0.0;
  double high = std::ldexp(1.0, isSigned ? width - 1 : width);
  if (std::isnan(t) || t < low || t >= high) {
    error = op.describe() + " converts " + format17(in) + " to " +
            op.type.name + ", which cannot hold it: poison";
    return false;
  }
  r = isSigned ? static_cast<int64_t>(t)
               : signExtend(static_cast<uint64_t>(t), width);
  return true;
}

/// tensor.extract: an in-bounds element of a function argument.
bool extract(const RegionOp &op, const std::vector<Scalar> &indices,
             const std::vector<const HostTensor *> &arguments, Scalar &r,
             std::string &error) {
  std::string argument = "argument #" + std::to_string(op.tensor);
  const HostTensor *tensor = op.tensor < static_cast<int64_t>(arguments.size())
                                 ? arguments[op.tensor]
                                 : nullptr;
  auto fail = [&](const std::string &what) {
    error = op.describe() + " " + what;
    return false;
  };
  if (!tensor)
    return fail("reads " + argument + ", which was not given");
  const std::vector<int64_t> &shape = tensor->shape();
  if (indices.size() != shape.size())
    return fail("reads " + argument + " with " +
                std::to_string(indices.size()) + " indices, but it has " +
                std::to_string(shape.size()) + " dims");
  // Out-of-bounds reads are undefined (and the kernel's may fault): an
  // error, with no clamped stand-in value.
  int64_t linear = 0;
  for (size_t dim = 0; dim < indices.size(); ++dim) {
    int64_t index = indices[dim].i, size = shape[dim];
    if (index < 0 || index >= size)
      return fail("reads index " + std::to_string(index) + " of dim " +
                  std::to_string(dim) + " of " + argument + ", whose size is " +
                  std::to_string(size) + ": out of bounds");
    linear = linear * size + index;
  }
  if (isFloat(tensor->kind()) != op.type.isFloat)
    return fail("reads a " + op.type.name + " from " + argument +
                ", which holds " + elementName(tensor->kind()));
  double value = tensor->get(linear);
  if (op.type.isFloat) {
    r = Scalar::ofFloat(value);
    return true;
  }
  // Integer elements come back as doubles; saturate what int64_t cannot
  // hold rather than convert out of range.
  constexpr double limit = 9223372036854775808.0; // 2^63
  int64_t i = std::isnan(value) ? 0
              : value >= limit  ? std::numeric_limits<int64_t>::max()
              : value < -limit  ? std::numeric_limits<int64_t>::min()
                                : static_cast<int64_t>(value);
  r = Scalar::ofInt(signExtend(static_cast<uint64_t>(i), op.type.width));
  return true;
}

} // namespace

bool attn_runtime::evaluateRegion(
    const RegionProgram &program, const std::vector<Scalar> &args,
    const std::vector<const HostTensor *> &arguments, Scalar &result,
    std::string &error, const RegionNudge &nudge) {
  if (args.size() != program.args.size()) {
    error = "the region takes " + std::to_string(program.args.size()) +
            " arguments, not " + std::to_string(args.size());
    return false;
  }
  std::vector<Scalar> values = args;
  values.reserve(args.size() + program.ops.size());
  std::vector<Scalar> in;
  for (const RegionOp &op : program.ops) {
    in.clear();
    for (int64_t operand : op.operands)
      in.push_back(values[operand]);
    auto type = [&](size_t i) -> const ScalarType & {
      return program.typeOf(op.operands[i]);
    };
    double a = in.empty() ? 0 : in[0].f, b = in.size() < 2 ? 0 : in[1].f;
    Scalar r;
    Kind kind = op.kind;
    switch (kind) {
    case Kind::Constant:
      r = op.constant;
      break;
    case Kind::CmpI:
      r.i = compareInt(op.predicate, in[0].i, in[1].i, type(0).width) ? -1 : 0;
      break;
    case Kind::CmpF:
      r.i = compareFloat(op.predicate, a, b) ? -1 : 0;
      break;
    case Kind::Select:
      r = in[0].i != 0 ? in[1] : in[2];
      break;
    case Kind::IndexCast:
    case Kind::ExtSI:
    case Kind::TruncI:
    case Kind::IndexCastUI:
    case Kind::ExtUI: {
      bool zeroExtends = kind == Kind::IndexCastUI || kind == Kind::ExtUI;
      unsigned from = type(0).width;
      uint64_t bits = zeroExtends ? unsignedOf(in[0].i, from)
                                  : static_cast<uint64_t>(in[0].i);
      r.i = signExtend(bits, op.type.width);
      if (kind == Kind::TruncI && op.nsw && r.i != in[0].i) {
        error = op.describe() + " truncates " + std::to_string(in[0].i) +
                " to " + op.type.name + " with overflow<nsw>, which is poison";
        return false;
      }
      if (kind == Kind::TruncI && op.nuw &&
          unsignedOf(r.i, op.type.width) != unsignedOf(in[0].i, from)) {
        error = op.describe() + " truncates " +
                std::to_string(unsignedOf(in[0].i, from)) + " to " +
                op.type.name + " with overflow<nuw>, which is poison";
        return false;
      }
      break;
    }
    case Kind::SIToFP:
      r.f = static_cast<double>(in[0].i);
      break;
    case Kind::UIToFP:
      r.f = static_cast<double>(unsignedOf(in[0].i, type(0).width));
      break;
    case Kind::FPToSI:
    case Kind::FPToUI:
      if (!floatToInt(op, a, r.i, error))
        return false;
      break;
    // The reference keeps every float in double precision.
    case Kind::ExtF:
    case Kind::TruncF:
      r.f = a;
      break;
    case Kind::AddF:
      r.f = a + b;
      break;
    case Kind::SubF:
      r.f = a - b;
      break;
    case Kind::MulF:
      r.f = a * b;
      break;
    case Kind::DivF:
      r.f = a / b;
      break;
    case Kind::NegF:
      r.f = -a;
      break;
    case Kind::MaximumF:
    case Kind::MinimumF:
      r.f = maximumF(a, b, kind == Kind::MaximumF);
      break;
    case Kind::MaxNumF:
      r.f = std::fmax(a, b);
      break;
    case Kind::MinNumF:
      r.f = std::fmin(a, b);
      break;
    case Kind::Tanh:
      r.f = std::tanh(a);
      break;
    case Kind::Exp:
      r.f = std::exp(a);
      break;
    case Kind::Exp2:
      r.f = std::exp2(a);
      break;
    case Kind::Log:
      r.f = std::log(a);
      break;
    case Kind::AbsF:
      r.f = std::fabs(a);
      break;
    case Kind::Sqrt:
      r.f = std::sqrt(a);
      break;
    case Kind::Fma:
      r.f = std::fma(a, b, in[2].f);
      break;
    // |INT_MIN| wraps to INT_MIN, as math.absi lowers to llvm.intr.abs
    // with is_int_min_poison = false.
    case Kind::AbsI:
      r.i = in[0].i < 0
                ? signExtend(0 - static_cast<uint64_t>(in[0].i), op.type.width)
                : in[0].i;
      break;
    case Kind::Extract:
      if (!extract(op, in, arguments, r, error))
        return false;
      break;
    default:
      if (!intBinary(op, in[0].i, in[1].i, r.i, error))
        return false;
      break;
    }
    // fastmath<nnan> and <ninf> make a NaN or an infinity among the float
    // operands or the result poison.
    if (op.nnan || op.ninf) {
      std::vector<double> floats;
      for (size_t i = 0; i < in.size(); ++i)
        if (type(i).isFloat)
          floats.push_back(in[i].f);
      if (op.type.isFloat)
        floats.push_back(r.f);
      for (double value : floats) {
        if (op.nnan && std::isnan(value)) {
          error = op.describe() +
                  " meets a NaN with fastmath<nnan>, which is poison";
          return false;
        }
        if (op.ninf && std::isinf(value)) {
          error = op.describe() +
                  " meets an infinity with fastmath<ninf>, which is poison";
          return false;
        }
      }
    }
    if (static_cast<int64_t>(values.size() - args.size()) == nudge.op)
      r.f += nudge.by;
    values.push_back(r);
  }
  result = values[program.result];
  if (nudge.values)
    *nudge.values = std::move(values);
  return true;
}
