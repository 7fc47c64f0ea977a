//===- Expr.cpp - launch expressions: reading, printing, evaluating -------===//

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/Json.h"

#include <algorithm>
#include <limits>

using namespace attn_runtime;

namespace {

constexpr Expr::Op kOps[] = {
    Expr::Op::Add,     Expr::Op::Sub,      Expr::Op::Mul, Expr::Op::Div,
    Expr::Op::CeilDiv, Expr::Op::FloorDiv, Expr::Op::Mod, Expr::Op::Min,
    Expr::Op::Max,     Expr::Op::Lt,       Expr::Op::Le,  Expr::Op::Gt,
    Expr::Op::Ge,      Expr::Op::Eq,       Expr::Op::Ne};

std::string quote(const std::string &text) {
  // Names come from files: escape what would garble a message.
  std::string out = "'";
  for (char c : text.substr(0, 100))
    out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return out + (text.size() > 100 ? "...'" : "'");
}

/// Whether `json` is an object whose members are all in `allowed`; else
/// sets `error` naming the first other one.
bool onlyMembers(const JsonValue &json,
                 std::initializer_list<const char *> allowed,
                 std::string &error) {
  for (const auto &member : json.object) {
    const std::string &key = member.first;
    if (std::none_of(allowed.begin(), allowed.end(),
                     [&](const char *name) { return key == name; })) {
      error = "has unknown member " + quote(key);
      return false;
    }
  }
  return true;
}

class Reader {
public:
  Reader(const std::vector<ArgumentType> &args, std::string &error)
      : args(args), error(error) {}

  bool read(const JsonValue &json, Expr &expr, int depth) {
    expr = Expr();
    if (depth > kMaxExprDepth)
      return fail("is nested deeper than " + std::to_string(kMaxExprDepth) +
                  " levels");
    if (json.kind != JsonValue::Kind::Object)
      return fail("is not an expression (a JSON object)");
    if (const JsonValue *value = json.get("const")) {
      expr.kind = Expr::Kind::Const;
      if (!value->integer(expr.value))
        return fail("has a constant that is not an integer of 64 bits: " +
                    quote(value->string));
      return onlyMembers(json, {"const"}, error);
    }
    if (const JsonValue *dim = json.get("dim"))
      return readDim(json, *dim, expr);
    const std::string *op = json.getString("op");
    if (!op)
      return fail("has none of \"const\", \"dim\" and \"op\"");
    if (*op == "sm_count") {
      expr.kind = Expr::Kind::SmCount;
      return onlyMembers(json, {"op"}, error);
    }
    if (*op == "select") {
      expr.kind = Expr::Kind::Select;
      expr.operands.resize(3);
      return onlyMembers(json, {"op", "cond", "then", "else"}, error) &&
             member(json, "cond", expr.operands[0], depth) &&
             member(json, "then", expr.operands[1], depth) &&
             member(json, "else", expr.operands[2], depth);
    }
    for (Expr::Op candidate : kOps)
      if (*op == Expr::opName(candidate)) {
        expr.kind = Expr::Kind::Binary;
        expr.op = candidate;
        expr.operands.resize(2);
        return onlyMembers(json, {"op", "lhs", "rhs"}, error) &&
               member(json, "lhs", expr.operands[0], depth) &&
               member(json, "rhs", expr.operands[1], depth);
      }
    std::string known = "sm_count, select";
    for (Expr::Op candidate : kOps)
      known += std::string(", ") + Expr::opName(candidate);
    return fail("has unknown op " + quote(*op) + " (expected " + known + ")");
  }

private:
  bool fail(const std::string &message) {
    error = message;
    return false;
  }

  bool member(const JsonValue &json, const char *key, Expr &out, int depth) {
    const JsonValue *value = json.get(key);
    if (!value)
      return fail("has no \"" + std::string(key) + "\"");
    return read(*value, out, depth + 1);
  }

  bool readDim(const JsonValue &json, const JsonValue &dim, Expr &expr) {
    expr.kind = Expr::Kind::Dim;
    const std::string *name = dim.getString("arg");
    const JsonValue *index = dim.get("index");
    if (!onlyMembers(json, {"dim"}, error))
      return false;
    if (dim.kind != JsonValue::Kind::Object || !name || !index ||
        !onlyMembers(dim, {"arg", "index"}, error))
      return fail("has a \"dim\" that is not {\"arg\": NAME, \"index\": N}");
    auto found =
        std::find_if(args.begin(), args.end(),
                     [&](const ArgumentType &a) { return a.name == *name; });
    if (found == args.end())
      return fail(namesMissing(*name));
    expr.arg = found - args.begin();
    int64_t rank = found->shape.size();
    if (!index->integer(expr.value))
      return fail("has a \"dim\" index that is not an integer");
    if (expr.value < 0 || expr.value >= rank)
      return fail("takes dim " + std::to_string(expr.value) + " of " +
                  quote(*name) + ", which has rank " + std::to_string(rank));
    return true;
  }

  std::string namesMissing(const std::string &name) {
    std::string known;
    for (const ArgumentType &arg : args)
      known += (known.empty() ? "" : ", ") + arg.name;
    return "names argument " + quote(name) +
           ", which the function does not have (it has " +
           (known.empty() ? "none" : known) + ")";
  }

  const std::vector<ArgumentType> &args;
  std::string &error;
};

/// `a op b`; false with `why` on division by zero and when the result does
/// not fit in int64 (so that INT64_MIN / -1 is an error, not SIGFPE).
bool arithmetic(Expr::Op op, int64_t a, int64_t b, int64_t &result,
                std::string &why) {
  switch (op) {
  case Expr::Op::Add:
    if (!__builtin_add_overflow(a, b, &result))
      return true;
    break;
  case Expr::Op::Sub:
    if (!__builtin_sub_overflow(a, b, &result))
      return true;
    break;
  case Expr::Op::Mul:
    if (!__builtin_mul_overflow(a, b, &result))
      return true;
    break;
  case Expr::Op::Min:
    result = std::min(a, b);
    return true;
  case Expr::Op::Max:
    result = std::max(a, b);
    return true;
  case Expr::Op::Lt:
  case Expr::Op::Le:
  case Expr::Op::Gt:
  case Expr::Op::Ge:
  case Expr::Op::Eq:
  case Expr::Op::Ne:
    result = op == Expr::Op::Lt   ? a < b
             : op == Expr::Op::Le ? a <= b
             : op == Expr::Op::Gt ? a > b
             : op == Expr::Op::Ge ? a >= b
             : op == Expr::Op::Eq ? a == b
                                  : a != b;
    return true;
  case Expr::Op::Div:
  case Expr::Op::CeilDiv:
  case Expr::Op::FloorDiv:
  case Expr::Op::Mod: {
    if (b == 0) {
      why = "division by zero";
      return false;
    }
    if (op == Expr::Op::Mod) {
      // Non-negative for either sign of b, as MLIR's mod; a % -1 traps for
      // INT64_MIN and is 0 anyway.
      int64_t m = b == -1 ? 0 : a % b;
      result = m >= 0 ? m : (b < 0 ? m - b : m + b);
      return true;
    }
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
      break;
    int64_t q = a / b, m = a % b;
    // |b| >= 2 whenever m != 0, so q +- 1 cannot overflow.
    if (op == Expr::Op::CeilDiv && m != 0 && ((m < 0) == (b < 0)))
      ++q;
    else if (op == Expr::Op::FloorDiv && m != 0 && ((m < 0) != (b < 0)))
      --q;
    result = q;
    return true;
  }
  }
  why = "integer overflow";
  return false;
}

bool evaluate(const Expr &expr, const std::vector<Argument> &args,
              int64_t &value, std::string &error,
              const Environment *environment, int depth) {
  if (depth > kMaxExprDepth) {
    error = "launch expression nested deeper than " +
            std::to_string(kMaxExprDepth) + " levels";
    return false;
  }
  switch (expr.kind) {
  case Expr::Kind::Const:
    value = expr.value;
    return true;
  case Expr::Kind::SmCount:
    if (!environment || environment->smCount <= 0) {
      error = "the launch needs the GPU's SM count (sm_count), which only "
              "a GPU runtime knows";
      return false;
    }
    value = environment->smCount;
    return true;
  case Expr::Kind::Dim: {
    if (expr.arg < 0 || static_cast<uint64_t>(expr.arg) >= args.size()) {
      error = "the launch needs argument " + std::to_string(expr.arg) +
              ", but only " + std::to_string(args.size()) + " were given";
      return false;
    }
    const Argument &arg = args[expr.arg];
    if (expr.value < 0 ||
        static_cast<uint64_t>(expr.value) >= arg.shape.size()) {
      error = "dim " + std::to_string(expr.value) + " of argument " +
              std::to_string(expr.arg) + ", which has rank " +
              std::to_string(arg.shape.size());
      return false;
    }
    value = arg.shape[expr.value];
    return true;
  }
  case Expr::Kind::Select: {
    if (expr.operands.size() != 3) {
      error = "malformed select expression";
      return false;
    }
    int64_t condition = 0;
    return evaluate(expr.operands[0], args, condition, error, environment,
                    depth + 1) &&
           evaluate(expr.operands[condition ? 1 : 2], args, value, error,
                    environment, depth + 1);
  }
  case Expr::Kind::Binary: {
    int64_t a, b;
    if (expr.operands.size() != 2) {
      error = std::string("malformed ") + Expr::opName(expr.op) + " expression";
      return false;
    }
    if (!evaluate(expr.operands[0], args, a, error, environment, depth + 1) ||
        !evaluate(expr.operands[1], args, b, error, environment, depth + 1))
      return false;
    std::string why;
    if (arithmetic(expr.op, a, b, value, why))
      return true;
    error = why + " in a launch expression: " + Expr::opName(expr.op) + "(" +
            std::to_string(a) + ", " + std::to_string(b) + ")";
    return false;
  }
  }
  error = "unknown kind of launch expression";
  return false;
}

} // namespace

const char *Expr::opName(Op op) {
  switch (op) {
  case Op::Add:
    return "add";
  case Op::Sub:
    return "sub";
  case Op::Mul:
    return "mul";
  case Op::Div:
    return "div";
  case Op::CeilDiv:
    return "ceildiv";
  case Op::FloorDiv:
    return "floordiv";
  case Op::Mod:
    return "mod";
  case Op::Min:
    return "min";
  case Op::Max:
    return "max";
  case Op::Lt:
    return "lt";
  case Op::Le:
    return "le";
  case Op::Gt:
    return "gt";
  case Op::Ge:
    return "ge";
  case Op::Eq:
    return "eq";
  case Op::Ne:
    return "ne";
  }
  return "?";
}

bool Expr::fromJson(const JsonValue &json,
                    const std::vector<ArgumentType> &args, Expr &expr,
                    std::string &error) {
  return Reader(args, error).read(json, expr, 1);
}

std::string Expr::str(const std::vector<ArgumentType> *args) const {
  auto join = [&](const char *name) {
    std::string text = std::string(name) + "(";
    for (size_t i = 0; i < operands.size(); ++i)
      text += (i ? ", " : "") + operands[i].str(args);
    return text + ")";
  };
  switch (kind) {
  case Kind::Const:
    return std::to_string(value);
  case Kind::SmCount:
    return "sm_count";
  case Kind::Dim:
    return "dim(" +
           (args && arg >= 0 && static_cast<uint64_t>(arg) < args->size()
                ? (*args)[arg].name
                : "arg" + std::to_string(arg)) +
           ", " + std::to_string(value) + ")";
  case Kind::Select:
    return join("select");
  case Kind::Binary:
    return join(opName(op));
  }
  return "?";
}

bool attn_runtime::evaluateIndex(const Expr &expr,
                                 const std::vector<Argument> &args,
                                 int64_t &value, std::string &error,
                                 const Environment *environment) {
  return evaluate(expr, args, value, error, environment, 1);
}
