//===- Region.cpp - region programs: names, checks, JSON ------------------===//

#include "AttnRuntime/Region.h"
#include "AttnRuntime/Json.h"

using namespace attn_runtime;

namespace {

using Kind = RegionOp::Kind;

const std::pair<Kind, const char *> kOpNames[] = {
    {Kind::Constant, "arith.constant"},
    {Kind::AddI, "arith.addi"},
    {Kind::SubI, "arith.subi"},
    {Kind::MulI, "arith.muli"},
    {Kind::DivSI, "arith.divsi"},
    {Kind::DivUI, "arith.divui"},
    {Kind::RemSI, "arith.remsi"},
    {Kind::RemUI, "arith.remui"},
    {Kind::FloorDivSI, "arith.floordivsi"},
    {Kind::CeilDivSI, "arith.ceildivsi"},
    {Kind::CeilDivUI, "arith.ceildivui"},
    {Kind::MinSI, "arith.minsi"},
    {Kind::MaxSI, "arith.maxsi"},
    {Kind::MinUI, "arith.minui"},
    {Kind::MaxUI, "arith.maxui"},
    {Kind::AndI, "arith.andi"},
    {Kind::OrI, "arith.ori"},
    {Kind::XOrI, "arith.xori"},
    {Kind::ShLI, "arith.shli"},
    {Kind::ShRUI, "arith.shrui"},
    {Kind::ShRSI, "arith.shrsi"},
    {Kind::CmpI, "arith.cmpi"},
    {Kind::CmpF, "arith.cmpf"},
    {Kind::Select, "arith.select"},
    {Kind::IndexCast, "arith.index_cast"},
    {Kind::IndexCastUI, "arith.index_castui"},
    {Kind::ExtSI, "arith.extsi"},
    {Kind::ExtUI, "arith.extui"},
    {Kind::TruncI, "arith.trunci"},
    {Kind::SIToFP, "arith.sitofp"},
    {Kind::UIToFP, "arith.uitofp"},
    {Kind::FPToSI, "arith.fptosi"},
    {Kind::FPToUI, "arith.fptoui"},
    {Kind::ExtF, "arith.extf"},
    {Kind::TruncF, "arith.truncf"},
    {Kind::AddF, "arith.addf"},
    {Kind::SubF, "arith.subf"},
    {Kind::MulF, "arith.mulf"},
    {Kind::DivF, "arith.divf"},
    {Kind::NegF, "arith.negf"},
    {Kind::MaximumF, "arith.maximumf"},
    {Kind::MinimumF, "arith.minimumf"},
    {Kind::MaxNumF, "arith.maxnumf"},
    {Kind::MinNumF, "arith.minnumf"},
    {Kind::Tanh, "math.tanh"},
    {Kind::Exp, "math.exp"},
    {Kind::Exp2, "math.exp2"},
    {Kind::Log, "math.log"},
    {Kind::AbsF, "math.absf"},
    {Kind::Sqrt, "math.sqrt"},
    {Kind::AbsI, "math.absi"},
    {Kind::Fma, "math.fma"},
    {Kind::Extract, "tensor.extract"},
};

const char *const kCmpIPredicates[] = {"eq",  "ne",  "slt", "sle", "sgt",
                                       "sge", "ult", "ule", "ugt", "uge"};
const char *const kCmpFPredicates[] = {
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq",   "ugt", "uge", "ult", "ule", "une", "uno", "true"};

template <size_t N>
bool isOneOf(const std::string &text, const char *const (&names)[N]) {
  for (const char *name : names)
    if (text == name)
      return true;
  return false;
}

bool isIntBinary(Kind kind) {
  return kind >= Kind::AddI && kind <= Kind::ShRSI;
}

bool isFloatBinary(Kind kind) {
  return kind >= Kind::AddF && kind <= Kind::MinNumF && kind != Kind::NegF;
}

bool isFloatUnary(Kind kind) {
  return kind == Kind::NegF || (kind >= Kind::Tanh && kind <= Kind::Sqrt);
}

} // namespace

bool ScalarType::parse(const std::string &text, ScalarType &type) {
  type.name = text;
  if (text == "index") {
    type.isFloat = false;
    type.width = 64;
    return true;
  }
  for (auto [name, width] : {std::pair<const char *, unsigned>{"f16", 16},
                             {"bf16", 16},
                             {"f32", 32},
                             {"f64", 64}})
    if (text == name) {
      type.isFloat = true;
      type.width = width;
      return true;
    }
  if (text.size() < 2 || text[0] != 'i' || text[1] == '0' || text.size() > 3)
    return false;
  unsigned width = 0;
  for (size_t i = 1; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      return false;
    width = width * 10 + (text[i] - '0');
  }
  if (width < 1 || width > 64)
    return false;
  type.isFloat = false;
  type.width = width;
  return true;
}

const char *RegionOp::name(Kind kind) {
  for (const auto &[k, name] : kOpNames)
    if (k == kind)
      return name;
  return "?";
}

bool RegionOp::kindOf(const std::string &name, Kind &kind) {
  for (const auto &[k, text] : kOpNames)
    if (name == text) {
      kind = k;
      return true;
    }
  return false;
}

std::string RegionOp::describe() const {
  std::string text = std::string("'") + name(kind) + "'";
  if (!location.empty())
    text += " at " + location;
  return text;
}

std::string RegionProgram::validate() const {
  int64_t defined = static_cast<int64_t>(args.size());
  for (size_t o = 0; o < ops.size(); ++o) {
    const RegionOp &op = ops[o];
    std::string at = "op " + std::to_string(o) + " (" + op.describe() + ")";
    for (int64_t operand : op.operands)
      if (operand < 0 || operand >= defined)
        return at + " uses value " + std::to_string(operand) +
               ", which is not defined before it";
    auto type = [&](size_t i) -> const ScalarType & {
      return typeOf(op.operands[i]);
    };
    auto count = [&](size_t n) {
      return op.operands.size() == n
                 ? std::string()
                 : at + " takes " + std::to_string(n) + " operands, not " +
                       std::to_string(op.operands.size());
    };
    auto allOf = [&](bool isFloat, bool sameAsResult) {
      for (size_t i = 0; i < op.operands.size(); ++i)
        if (type(i).isFloat != isFloat ||
            (sameAsResult && type(i).name != op.type.name))
          return at + " takes a " + type(i).name + " operand " +
                 std::to_string(i);
      return std::string();
    };
    auto result = [&](bool isFloat) {
      return op.type.isFloat == isFloat ? std::string()
                                        : at + " cannot give a " + op.type.name;
    };
    std::string why;
    Kind kind = op.kind;
    if (kind == Kind::Constant) {
      why = count(0);
    } else if (isIntBinary(kind)) {
      why = count(2);
      if (why.empty())
        why = result(false);
      if (why.empty())
        why = allOf(false, true);
    } else if (kind == Kind::CmpI || kind == Kind::CmpF) {
      bool isFloat = kind == Kind::CmpF;
      why = count(2);
      if (why.empty() && (op.type.isFloat || op.type.width != 1))
        why = at + " gives an i1, not a " + op.type.name;
      if (why.empty())
        why = allOf(isFloat, false);
      if (why.empty() && type(0).name != type(1).name)
        why = at + " compares a " + type(0).name + " with a " + type(1).name;
      if (why.empty() && !(isFloat ? isOneOf(op.predicate, kCmpFPredicates)
                                   : isOneOf(op.predicate, kCmpIPredicates)))
        why = at + " has an unknown predicate '" + op.predicate + "'";
    } else if (kind == Kind::Select) {
      why = count(3);
      if (why.empty() && (type(0).isFloat || type(0).width != 1))
        why = at + " takes an i1 condition, not a " + type(0).name;
      if (why.empty() &&
          (type(1).name != op.type.name || type(2).name != op.type.name))
        why = at + " selects between values of another type than its " +
              op.type.name;
    } else if (kind >= Kind::IndexCast && kind <= Kind::FPToUI) {
      bool fromFloat = kind == Kind::FPToSI || kind == Kind::FPToUI;
      bool toFloat = kind == Kind::SIToFP || kind == Kind::UIToFP;
      why = count(1);
      if (why.empty())
        why = result(toFloat);
      if (why.empty())
        why = allOf(fromFloat, false);
    } else if (kind == Kind::ExtF || kind == Kind::TruncF) {
      why = count(1);
      if (why.empty())
        why = result(true);
      if (why.empty())
        why = allOf(true, false);
    } else if (isFloatBinary(kind) || isFloatUnary(kind) || kind == Kind::Fma) {
      why = count(kind == Kind::Fma ? 3 : isFloatUnary(kind) ? 1 : 2);
      if (why.empty())
        why = result(true);
      if (why.empty())
        why = allOf(true, true);
    } else if (kind == Kind::AbsI) {
      why = count(1);
      if (why.empty())
        why = result(false);
      if (why.empty())
        why = allOf(false, true);
    } else if (kind == Kind::Extract) {
      if (op.tensor < 0)
        why = at + " reads no function argument";
      for (size_t i = 0; why.empty() && i < op.operands.size(); ++i)
        if (type(i).name != "index")
          why = at + " takes a " + type(i).name + " index";
    }
    if (!why.empty())
      return why;
    ++defined;
  }
  if (result < 0 || result >= defined)
    return "the region yields value " + std::to_string(result) +
           ", which it does not define";
  return "";
}

bool RegionProgram::fromJson(const JsonValue &json, RegionProgram &program,
                             std::string &error) {
  program = RegionProgram();
  const JsonValue *args = json.get("args"), *ops = json.get("ops"),
                  *result = json.get("yield");
  if (json.kind != JsonValue::Kind::Object || !args ||
      args->kind != JsonValue::Kind::Array || !ops ||
      ops->kind != JsonValue::Kind::Array || !result ||
      !result->integer(program.result)) {
    error = "a \"program\" needs \"args\" and \"ops\" lists and a "
            "\"yield\" value number";
    return false;
  }
  for (const JsonValue &arg : args->array) {
    ScalarType type;
    if (arg.kind != JsonValue::Kind::String ||
        !ScalarType::parse(arg.string, type)) {
      error = "a \"program\" has an argument of unknown type";
      return false;
    }
    program.args.push_back(type);
  }
  for (const JsonValue &entry : ops->array) {
    std::string at =
        "op " + std::to_string(program.ops.size()) + " of a program";
    RegionOp op;
    const std::string *name = entry.getString("op"),
                      *type = entry.getString("type");
    if (!name || !RegionOp::kindOf(*name, op.kind)) {
      error = at + " is not an op regions may hold";
      return false;
    }
    if (!type || !ScalarType::parse(*type, op.type)) {
      error = at + " has no \"type\" of a scalar";
      return false;
    }
    if (const JsonValue *operands = entry.get("operands")) {
      if (operands->kind != JsonValue::Kind::Array) {
        error = at + " has \"operands\" that are not a list";
        return false;
      }
      for (const JsonValue &v : operands->array) {
        int64_t value;
        if (!v.integer(value)) {
          error = at + " has an operand that is not a value number";
          return false;
        }
        op.operands.push_back(value);
      }
    }
    if (const std::string *predicate = entry.getString("predicate"))
      op.predicate = *predicate;
    if (const std::string *location = entry.getString("loc"))
      op.location = *location;
    if (op.kind == Kind::Constant) {
      const JsonValue *value = entry.get("value");
      bool ok = value != nullptr;
      if (ok && op.type.isFloat) {
        if (value->kind == JsonValue::Kind::Number)
          op.constant.f = value->number;
        else
          ok = nonFiniteNumber(*value, op.constant.f);
      } else if (ok) {
        ok = value->integer(op.constant.i);
      }
      if (!ok) {
        error = at + " is a constant without a \"value\" of its type";
        return false;
      }
    }
    if (op.kind == Kind::Extract) {
      const JsonValue *tensor = entry.get("tensor");
      if (!tensor || !tensor->integer(op.tensor)) {
        error = at + " reads no \"tensor\" (a function argument number)";
        return false;
      }
    }
    if (const JsonValue *flags = entry.get("flags")) {
      if (flags->kind != JsonValue::Kind::Array) {
        error = at + " has \"flags\" that are not a list";
        return false;
      }
      for (const JsonValue &flag : flags->array) {
        const std::string &f = flag.string;
        bool *slot = flag.kind != JsonValue::Kind::String ? nullptr
                     : f == "nsw"                         ? &op.nsw
                     : f == "nuw"                         ? &op.nuw
                     : f == "exact"                       ? &op.exact
                     : f == "nnan"                        ? &op.nnan
                     : f == "ninf"                        ? &op.ninf
                                                          : nullptr;
        if (!slot) {
          error = at + " has an unknown flag";
          return false;
        }
        *slot = true;
      }
    }
    program.ops.push_back(std::move(op));
  }
  error = program.validate();
  return error.empty();
}
