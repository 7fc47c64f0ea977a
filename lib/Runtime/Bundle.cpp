//===- Bundle.cpp - reading and evaluating kernel bundles -----------------===//

#include "AttnRuntime/Bundle.h"

#include "AttnRuntime/Json.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

using namespace attn_runtime;

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// `text` quoted for a message: control characters escaped, and cut short,
/// since a bundle's strings may be long or binary.
std::string quoted(const std::string &text, size_t limit = 100) {
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    unsigned char c = text[i];
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    const char *hex = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  if (text.size() > limit)
    out += "...";
  return out + "'";
}

/// Splits "a, f(b, c), [d]" at top-level commas.
std::vector<std::string> splitTopLevel(const std::string &s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : s) {
    if (c == '(' || c == '[')
      ++depth;
    else if (c == ')' || c == ']')
      --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!trim(current).empty())
    parts.push_back(trim(current));
  return parts;
}

bool isInteger(const std::string &s) {
  if (s.empty())
    return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size())
    return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      return false;
  return true;
}

/// The value of a decimal integer (isInteger), false when it does not fit
/// in int64.
bool parseInteger(const std::string &s, int64_t &value) {
  if (!isInteger(s))
    return false;
  errno = 0;
  long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return false;
  value = v;
  return true;
}

bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

/// "name(inner)" -> inner, when text has that form.
bool call(const std::string &text, const std::string &name,
          std::string &inner) {
  if (text.size() < name.size() + 2 || text.compare(0, name.size(), name) ||
      text[name.size()] != '(' || text.back() != ')')
    return false;
  inner = text.substr(name.size() + 1, text.size() - name.size() - 2);
  return true;
}

/// `a op b` for the integer operations of launch expressions and affine
/// maps; false with `why` on division by zero and when the result does not
/// fit in int64 (so that INT64_MIN / -1 is an error, not SIGFPE).
bool arithmetic(const std::string &op, int64_t a, int64_t b, int64_t &result,
                std::string &why) {
  if (op == "add" || op == "+") {
    if (!__builtin_add_overflow(a, b, &result))
      return true;
  } else if (op == "sub" || op == "-") {
    if (!__builtin_sub_overflow(a, b, &result))
      return true;
  } else if (op == "mul" || op == "*") {
    if (!__builtin_mul_overflow(a, b, &result))
      return true;
  } else if (op == "min" || op == "max") {
    result = op == "min" ? std::min(a, b) : std::max(a, b);
    return true;
  } else if (op == "div" || op == "ceildiv" || op == "floordiv" ||
             op == "mod") {
    if (b == 0) {
      why = "division by zero";
      return false;
    }
    if (op == "mod") {
      // Non-negative for either sign of b, as MLIR's mod; a % -1 traps for
      // INT64_MIN and is 0 anyway.
      int64_t m = b == -1 ? 0 : a % b;
      result = m >= 0 ? m : (b < 0 ? m - b : m + b);
      return true;
    }
    if (!(a == std::numeric_limits<int64_t>::min() && b == -1)) {
      int64_t q = a / b, m = a % b;
      // |b| >= 2 whenever m != 0, so q +- 1 cannot overflow.
      if (op == "ceildiv" && m != 0 && ((m < 0) == (b < 0)))
        ++q;
      else if (op == "floordiv" && m != 0 && ((m < 0) != (b < 0)))
        --q;
      result = q;
      return true;
    }
  } else {
    why = "unknown operation '" + op + "'";
    return false;
  }
  why = "integer overflow";
  return false;
}

/// An affine map's result expression (+ - * ceildiv floordiv mod, integers,
/// dims and symbols by name), parsed by recursive descent with its depth
/// bounded; evaluates it for `values`, or with none only checks it.
class AffineExpression {
public:
  AffineExpression(const std::string &text,
                   const std::vector<std::string> &names,
                   const std::vector<int64_t> *values)
      : text(text), names(names), values(values) {
    std::string token;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (std::isspace(static_cast<unsigned char>(c)))
        continue;
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        token += c;
        if (i + 1 == text.size() ||
            !(std::isalnum(static_cast<unsigned char>(text[i + 1])) ||
              text[i + 1] == '_')) {
          tokens.push_back(token);
          token.clear();
        }
      } else {
        tokens.push_back(std::string(1, c));
      }
    }
  }

  bool evaluate(int64_t &result, std::string &error) {
    if (!sum(result, 1))
      return fail(error);
    if (pos != tokens.size()) {
      why = "unexpected " + quoted(tokens[pos]);
      return fail(error);
    }
    return true;
  }

private:
  bool fail(std::string &error) {
    error = why + " in affine expression " + quoted(text);
    return false;
  }

  std::string peek() const { return pos < tokens.size() ? tokens[pos] : ""; }
  std::string take() { return pos < tokens.size() ? tokens[pos++] : ""; }

  bool apply(const std::string &op, int64_t a, int64_t b, int64_t &result) {
    if (!values) {
      result = 0; // checking the syntax only
      return true;
    }
    if (arithmetic(op, a, b, result, why))
      return true;
    why += " (" + std::to_string(a) + " " + op + " " + std::to_string(b) + ")";
    return false;
  }

  /// `depth`: the parentheses and unary minus signs around the atom.
  bool atom(int64_t &value, int depth) {
    if (depth > kMaxExprDepth) {
      why = "nesting deeper than " + std::to_string(kMaxExprDepth) + " levels";
      return false;
    }
    std::string t = take();
    if (t == "(") {
      if (!sum(value, depth + 1))
        return false;
      if (take() == ")")
        return true;
      why = "a missing ')'";
      return false;
    }
    if (t == "-") {
      // -9223372036854775808 is a literal: its digits alone overflow.
      if (isInteger(peek())) {
        if (parseInteger("-" + peek(), value)) {
          take();
          return true;
        }
        why = "integer -" + peek() + " out of range";
        return false;
      }
      int64_t v;
      return atom(v, depth + 1) && apply("-", 0, v, value);
    }
    if (isInteger(t)) {
      if (parseInteger(t, value))
        return true;
      why = "integer " + t + " out of range";
      return false;
    }
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == t) {
        value = values && i < values->size() ? (*values)[i] : 0;
        return true;
      }
    why = t.empty() ? "an unexpected end" : "unknown name " + quoted(t);
    return false;
  }

  bool product(int64_t &value, int depth) {
    if (!atom(value, depth))
      return false;
    for (std::string op = peek();
         op == "*" || op == "ceildiv" || op == "floordiv" || op == "mod";
         op = peek()) {
      take();
      int64_t rhs;
      if (!atom(rhs, depth) || !apply(op, value, rhs, value))
        return false;
    }
    return true;
  }

  bool sum(int64_t &value, int depth) {
    if (!product(value, depth))
      return false;
    for (std::string op = peek(); op == "+" || op == "-"; op = peek()) {
      take();
      int64_t rhs;
      if (!product(rhs, depth) || !apply(op, value, rhs, value))
        return false;
    }
    return true;
  }

  const std::string &text;
  std::vector<std::string> tokens;
  const std::vector<std::string> &names;
  const std::vector<int64_t> *values;
  size_t pos = 0;
  std::string why;
};

/// The index of the '[' or '(' that matches the bracket at `close`, or npos.
size_t matchingOpen(const std::string &s, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (s[i] == ')' || s[i] == ']')
      ++depth;
    else if ((s[i] == '(' || s[i] == '[') && --depth == 0)
      return i;
  }
  return std::string::npos;
}

/// Parses launch expressions with their nesting bounded, so that neither
/// this recursion nor evaluateIndex's can run out of stack.
class ExprParser {
public:
  explicit ExprParser(std::string &error) : error(error) {}

  bool parse(const std::string &raw, Expr &expr, int depth) {
    std::string text = trim(raw), inner;
    expr = Expr();
    if (depth > kMaxExprDepth)
      return fail("launch expression nested deeper than " +
                  std::to_string(kMaxExprDepth) + " levels");
    if (isInteger(text)) {
      expr.kind = Expr::Kind::Int;
      if (!parseInteger(text, expr.value))
        return fail("integer " + quoted(text) + " does not fit in 64 bits");
      return true;
    }
    if (call(text, "f32", inner))
      return parseF32(text, inner, expr);
    if (text == "sm_count" || text == "workspace") {
      expr.kind =
          text == "sm_count" ? Expr::Kind::SmCount : Expr::Kind::Workspace;
      return true;
    }
    if (text.size() > 4 && text.compare(0, 4, "%arg") == 0 &&
        isInteger(text.substr(4))) {
      expr.kind = Expr::Kind::Arg;
      if (!parseInteger(text.substr(4), expr.value) || expr.value < 0)
        return fail("malformed argument " + quoted(text));
      return true;
    }
    if (call(text, "dim", inner)) {
      std::vector<std::string> parts = splitTopLevel(inner);
      expr.kind = Expr::Kind::Dim;
      expr.operands.resize(1);
      if (parts.size() != 2 || !parseInteger(parts[1], expr.value) ||
          expr.value < 0)
        return fail("malformed dim expression " + quoted(text));
      return parse(parts[0], expr.operands[0], depth + 1);
    }
    for (const char *op :
         {"add", "sub", "mul", "div", "ceildiv", "min", "max"}) {
      if (!call(text, op, inner))
        continue;
      std::vector<std::string> parts = splitTopLevel(inner);
      expr.kind = Expr::Kind::Binary;
      expr.op = op;
      expr.operands.resize(2);
      if (parts.size() != 2)
        return fail("malformed expression " + quoted(text));
      return parse(parts[0], expr.operands[0], depth + 1) &&
             parse(parts[1], expr.operands[1], depth + 1);
    }
    if (call(text, "affine", inner))
      return parseAffine(text, inner, expr, depth);
    return fail("unknown bundle expression " + quoted(text));
  }

private:
  bool fail(const std::string &message) {
    error = message;
    return false;
  }

  bool parseF32(const std::string &text, const std::string &inner, Expr &expr) {
    expr.kind = Expr::Kind::F32;
    if (inner == "Inf" || inner == "+Inf") {
      expr.f32 = std::numeric_limits<float>::infinity();
    } else if (inner == "-Inf") {
      expr.f32 = -std::numeric_limits<float>::infinity();
    } else if (inner == "NaN") {
      expr.f32 = std::numeric_limits<float>::quiet_NaN();
    } else {
      char *end = nullptr;
      expr.f32 = std::strtof(inner.c_str(), &end);
      if (inner.empty() || std::isspace(static_cast<unsigned char>(inner[0])) ||
          end != inner.c_str() + inner.size())
        return fail("malformed f32 constant " + quoted(text));
    }
    return true;
  }

  /// affine((d0, ...)[s0, ...] -> (result), [E0, E1, ...]): the operands are
  /// the dims', then the symbols' values.
  bool parseAffine(const std::string &text, const std::string &inner,
                   Expr &expr, int depth) {
    auto malformed = [&](const char *what) {
      return fail(std::string("malformed affine expression ") + quoted(text) +
                  ": " + what);
    };
    size_t open = inner.empty() ? std::string::npos
                                : matchingOpen(inner, inner.size() - 1);
    if (inner.empty() || inner.back() != ']' || open == std::string::npos ||
        inner[open] != '[')
      return malformed("no operand list");
    std::string map = trim(inner.substr(0, open));
    if (map.empty() || map.back() != ',')
      return malformed("no ',' between the map and its operands");
    map = trim(map.substr(0, map.size() - 1));
    size_t arrow = map.find("->");
    if (arrow == std::string::npos)
      return malformed("no '->'");
    std::string lhs = trim(map.substr(0, arrow)),
                rhs = trim(map.substr(arrow + 2));
    size_t dimsClose = lhs.find(')');
    if (lhs.empty() || lhs[0] != '(' || dimsClose == std::string::npos)
      return malformed("no dimension list");
    std::string symbols = trim(lhs.substr(dimsClose + 1));
    if (!symbols.empty() &&
        (symbols.size() < 2 || symbols[0] != '[' || symbols.back() != ']'))
      return malformed("a malformed symbol list");
    if (rhs.size() < 2 || rhs[0] != '(' || rhs.back() != ')')
      return malformed("a malformed result");
    std::vector<std::string> names =
        splitTopLevel(lhs.substr(1, dimsClose - 1));
    if (!symbols.empty())
      for (const std::string &s :
           splitTopLevel(symbols.substr(1, symbols.size() - 2)))
        names.push_back(s);
    for (const std::string &name : names)
      if (!isIdentifier(name))
        return malformed("a dimension or symbol that is not a name");
    expr.kind = Expr::Kind::Affine;
    expr.symbols = names;
    expr.affine = rhs.substr(1, rhs.size() - 2);
    for (const std::string &operand :
         splitTopLevel(inner.substr(open + 1, inner.size() - open - 2))) {
      expr.operands.emplace_back();
      if (!parse(operand, expr.operands.back(), depth + 1))
        return false;
    }
    if (expr.operands.size() != expr.symbols.size())
      return fail("affine expression " + quoted(text) +
                  " has a different number of symbols and operands");
    int64_t unused;
    return AffineExpression(expr.affine, expr.symbols, nullptr)
        .evaluate(unused, error);
  }

  std::string &error;
};

bool evaluate(const Expr &expr, const std::vector<Argument> &args,
              int64_t &value, std::string &error,
              const Environment *environment, int depth) {
  if (depth > kMaxExprDepth) {
    error = "launch expression nested deeper than " +
            std::to_string(kMaxExprDepth) + " levels";
    return false;
  }
  switch (expr.kind) {
  case Expr::Kind::Int:
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
  case Expr::Kind::F32:
  case Expr::Kind::Arg:
  case Expr::Kind::Workspace:
    error = "expected an index expression, got a value";
    return false;
  case Expr::Kind::Dim: {
    if (expr.operands.size() != 1 || expr.operands[0].kind != Expr::Kind::Arg ||
        expr.operands[0].value < 0 ||
        static_cast<uint64_t>(expr.operands[0].value) >= args.size()) {
      error = "dim() of something that is not an argument";
      return false;
    }
    int64_t source = expr.operands[0].value;
    const Argument &arg = args[source];
    if (expr.value < 0 ||
        static_cast<uint64_t>(expr.value) >= arg.shape.size()) {
      error = "dim " + std::to_string(expr.value) + " of argument " +
              std::to_string(source) + ", which has rank " +
              std::to_string(arg.shape.size());
      return false;
    }
    value = arg.shape[expr.value];
    return true;
  }
  case Expr::Kind::Binary: {
    int64_t a, b;
    if (expr.operands.size() != 2) {
      error = "malformed " + expr.op + " expression";
      return false;
    }
    if (!evaluate(expr.operands[0], args, a, error, environment, depth + 1) ||
        !evaluate(expr.operands[1], args, b, error, environment, depth + 1))
      return false;
    std::string why;
    if (arithmetic(expr.op, a, b, value, why))
      return true;
    error = why + " in a launch expression: " + expr.op + "(" +
            std::to_string(a) + ", " + std::to_string(b) + ")";
    return false;
  }
  case Expr::Kind::Affine: {
    if (expr.operands.size() != expr.symbols.size()) {
      error = "affine expression '" + expr.affine +
              "' has a different number of symbols and operands";
      return false;
    }
    std::vector<int64_t> values;
    for (const Expr &operand : expr.operands) {
      values.emplace_back();
      if (!evaluate(operand, args, values.back(), error, environment,
                    depth + 1))
        return false;
    }
    return AffineExpression(expr.affine, expr.symbols, &values)
        .evaluate(value, error);
  }
  }
  error = "unknown kind of launch expression";
  return false;
}

} // namespace

bool Expr::parse(const std::string &text, Expr &expr, std::string &error) {
  expr = Expr();
  if (text.size() > kMaxExprBytes) {
    error = "launch expression of " + std::to_string(text.size()) +
            " bytes; at most " + std::to_string(kMaxExprBytes) +
            " are allowed: " + quoted(text, 40);
    return false;
  }
  return ExprParser(error).parse(text, expr, 1);
}

bool attn_runtime::evaluateIndex(const Expr &expr,
                                 const std::vector<Argument> &args,
                                 int64_t &value, std::string &error,
                                 const Environment *environment) {
  return evaluate(expr, args, value, error, environment, 1);
}

bool Launch::params(const std::vector<Argument> &args, std::vector<Param> &out,
                    std::string &error, const Environment *environment) const {
  out.clear();
  auto pushMemRef = [&](uint64_t address, const std::vector<int64_t> &shape) {
    // A dense row-major memref: allocated and aligned pointer, offset 0,
    // sizes, strides.
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
      if (__builtin_mul_overflow(strides[d], shape[d], &strides[d - 1])) {
        error = "a memref operand's strides overflow int64";
        return false;
      }
    Param ptr;
    ptr.kind = Param::Kind::Pointer;
    ptr.pointer = address;
    out.push_back(ptr);
    out.push_back(ptr);
    out.push_back(Param{});
    for (int64_t size : shape) {
      Param s;
      s.i64 = size;
      out.push_back(s);
    }
    for (int64_t stride : strides) {
      Param s;
      s.i64 = stride;
      out.push_back(s);
    }
    return true;
  };
  for (const Expr &operand : operands) {
    Param p;
    if (operand.kind == Expr::Kind::Workspace) {
      if (!environment || !environment->workspace) {
        error = "the kernel needs the runtime's workspace, which was not "
                "allocated";
        return false;
      }
      if (!pushMemRef(environment->workspace,
                      {environment->workspaceBytes / 4}))
        return false;
      continue;
    }
    if (operand.kind == Expr::Kind::F32) {
      p.kind = Param::Kind::F32;
      p.f32 = operand.f32;
      out.push_back(p);
      continue;
    }
    if (operand.kind != Expr::Kind::Arg) {
      if (!evaluateIndex(operand, args, p.i64, error, environment))
        return false;
      out.push_back(p);
      continue;
    }
    if (operand.value < 0 ||
        static_cast<uint64_t>(operand.value) >= args.size()) {
      error = "the kernel needs argument " + std::to_string(operand.value) +
              ", but only " + std::to_string(args.size()) + " were given";
      return false;
    }
    const Argument &arg = args[operand.value];
    if (!pushMemRef(arg.address, arg.shape))
      return false;
  }
  return true;
}

bool attn_runtime::parseMemRefType(const std::string &type,
                                   std::vector<int64_t> &dims,
                                   std::string &elementType,
                                   int64_t &elementBytes, std::string &error) {
  static const std::pair<const char *, int64_t> kElements[] = {
      {"f16", 2}, {"bf16", 2}, {"f32", 4}, {"f64", 8}, {"i1", 1},
      {"i8", 1},  {"i16", 2},  {"i32", 4}, {"i64", 8}, {"index", 8}};
  error = quoted(type) +
          " is not a memref of f16, bf16, f32, f64, i1, i8, i16, i32, i64 or "
          "index elements with the default layout and memory space";
  dims.clear();
  if (type.size() < 8 || type.compare(0, 7, "memref<") != 0 ||
      type.back() != '>')
    return false;
  std::string body = type.substr(7, type.size() - 8);
  size_t pos = 0;
  // Sizes are "?" or decimal integers, each followed by 'x'; element types
  // start with a letter.
  while (pos < body.size() &&
         (body[pos] == '?' ||
          std::isdigit(static_cast<unsigned char>(body[pos])))) {
    size_t x = body.find('x', pos);
    if (x == std::string::npos)
      return false;
    std::string size = body.substr(pos, x - pos);
    int64_t value = -1;
    if (size != "?" && (!parseInteger(size, value) || value < 0))
      return false;
    dims.push_back(value);
    pos = x + 1;
  }
  elementType = body.substr(pos);
  for (const auto &[name, bytes] : kElements)
    if (elementType == name) {
      elementBytes = bytes;
      error.clear();
      return true;
    }
  return false;
}

std::string Function::checkArguments(
    const std::vector<std::vector<int64_t>> &shapes) const {
  std::string message = contract.check(shapes, argElementBytes);
  return message.empty() ? message : "@" + name + ": " + message;
}

namespace {

/// Reads `path`, which must be a regular file of at most `maxBytes` bytes
/// (checked before reading, so that /dev/zero or a FIFO is an error, not a
/// hang or an exhausted memory); `what` names the limit's rule in errors.
/// With `insideOnly`, a symbolic link is refused too: a binary's file must
/// be in the bundle's directory, not merely named there.
bool readFile(const std::string &path, int64_t maxBytes, const char *what,
              std::string &contents, std::string &error,
              bool insideOnly = false) {
  auto notRegular = [&](const struct stat &st) {
    const char *kind = S_ISLNK(st.st_mode)    ? "a symbolic link"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode)                       ? "a socket"
                                              : "not a plain file";
    error = quoted(path, 4096) + " is " + kind + ", not a regular file";
    return false;
  };
  auto tooLarge = [&](int64_t bytes) {
    error = quoted(path, 4096) + " has " + std::to_string(bytes) + " bytes; " +
            what + " may have at most " + std::to_string(maxBytes >> 20) +
            " MiB";
    return false;
  };
  struct stat st;
  if ((insideOnly ? ::lstat(path.c_str(), &st) : ::stat(path.c_str(), &st)) !=
      0) {
    error = "cannot read " + quoted(path, 4096) + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode))
    return notRegular(st);
  if (st.st_size > maxBytes)
    return tooLarge(st.st_size);
  // O_NONBLOCK: should the file have become a FIFO since stat, opening it
  // must not wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK |
                                    (insideOnly ? O_NOFOLLOW : 0));
  if (fd < 0) {
    error = "cannot read " + quoted(path, 4096) + ": " + std::strerror(errno);
    return false;
  }
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok)
    notRegular(st);
  contents.clear();
  if (ok)
    contents.reserve(std::min<int64_t>(st.st_size, maxBytes));
  std::vector<char> buffer(1 << 16);
  while (ok) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = "cannot read " + quoted(path, 4096) + ": " + std::strerror(errno);
      ok = false;
    } else if (n == 0) {
      break;
    } else if (static_cast<int64_t>(contents.size()) + n > maxBytes) {
      ok = tooLarge(static_cast<int64_t>(contents.size()) + n); // it grew
    } else {
      contents.append(buffer.data(), n);
    }
  }
  ::close(fd);
  return ok;
}

const std::string *stringMember(const JsonValue &v, const char *key) {
  const JsonValue *m = v.get(key);
  return m && m->kind == JsonValue::Kind::String ? &m->string : nullptr;
}

int64_t countTerms(const Expr &expr) {
  int64_t terms = 1;
  for (const Expr &operand : expr.operands)
    terms += countTerms(operand);
  return terms;
}

/// Parses the launch expressions of a bundle, counting their terms: each
/// takes about 150 bytes, so that 16 MiB of "add(1,1)" would otherwise take
/// gigabytes.
class ExprBudget {
public:
  bool parse(const std::string &text, Expr &expr, std::string &error) {
    if (!Expr::parse(text, expr, error))
      return false;
    terms += countTerms(expr);
    if (terms <= kMaxBundleExprTerms)
      return true;
    error = "the launch expressions have more than " +
            std::to_string(kMaxBundleExprTerms) + " terms in all";
    return false;
  }

  bool parseList(const JsonValue *list, size_t count, Expr *out,
                 std::string &error) {
    if (!list || list->kind != JsonValue::Kind::Array ||
        list->array.size() != count) {
      error = "expected a list of " + std::to_string(count) + " expressions";
      return false;
    }
    for (size_t i = 0; i < count; ++i) {
      if (list->array[i].kind != JsonValue::Kind::String) {
        error = "expected an expression (a string)";
        return false;
      }
      if (!parse(list->array[i].string, out[i], error))
        return false;
    }
    return true;
  }

private:
  int64_t terms = 0;
};

/// A JSON number that is an integer in [min, 2^53].
bool integerMember(const JsonValue &v, int64_t min, int64_t &value) {
  if (v.kind != JsonValue::Kind::Number || !(v.number >= min) ||
      !(v.number <= 9007199254740992.0) || v.number != std::floor(v.number))
    return false;
  value = static_cast<int64_t>(v.number);
  return true;
}

/// Reads "shape_contract" (when there) into `function.contract`, whose
/// argDims are already set; false with `error` when it names an argument or
/// a dim that does not exist.
bool parseContract(const JsonValue *json, Function &function,
                   std::string &error) {
  if (!json)
    return true;
  ShapeContract &contract = function.contract;
  size_t numArgs = contract.argDims.size();
  const JsonValue *names = json->get("names"),
                  *constraints = json->get("constraints");
  if (json->kind != JsonValue::Kind::Object ||
      (names && names->kind != JsonValue::Kind::Array) ||
      (constraints && constraints->kind != JsonValue::Kind::Array)) {
    error = "\"shape_contract\" must be an object with lists \"names\" and "
            "\"constraints\"";
    return false;
  }
  if (names && !names->array.empty()) {
    if (names->array.size() != numArgs) {
      error = "\"shape_contract\" names " +
              std::to_string(names->array.size()) +
              " arguments, but it takes " + std::to_string(numArgs);
      return false;
    }
    for (const JsonValue &name : names->array) {
      if (name.kind != JsonValue::Kind::String) {
        error = "\"shape_contract\" has a name that is not a string";
        return false;
      }
      contract.argNames.push_back(name.string);
    }
  }
  if (!constraints)
    return true;
  for (const JsonValue &c : constraints->array) {
    size_t index = contract.constraints.size();
    std::string where =
        "\"shape_contract\" constraint " + std::to_string(index) + " ";
    ShapeConstraint constraint;
    const std::string *kind = stringMember(c, "kind"),
                      *what = stringMember(c, "what");
    if (!kind || !ShapeConstraint::parseKind(*kind, constraint.kind)) {
      error = where + "has no kind equal, multiple_of or at_least";
      return false;
    }
    if (what)
      constraint.what = *what;
    for (const char *side : {"lhs", "rhs"}) {
      const JsonValue *ref = c.get(side);
      DimRef &out = side[0] == 'l' ? constraint.lhs : constraint.rhs;
      if (!ref || ref->kind != JsonValue::Kind::Array ||
          ref->array.size() != 2 || !integerMember(ref->array[0], 0, out.arg) ||
          !integerMember(ref->array[1], 0, out.dim)) {
        error = where + "needs \"" + side + "\": [argument, dim]";
        return false;
      }
      if (static_cast<uint64_t>(out.arg) >= numArgs) {
        error = where + "names argument " + std::to_string(out.arg) +
                ", but there are " + std::to_string(numArgs);
        return false;
      }
      if (static_cast<uint64_t>(out.dim) >= contract.argDims[out.arg].size()) {
        error = where + "names dim " + std::to_string(out.dim) + " of " +
                contract.argName(out.arg) + ", which has rank " +
                std::to_string(contract.argDims[out.arg].size());
        return false;
      }
    }
    contract.constraints.push_back(std::move(constraint));
  }
  return true;
}

/// Checks that the arguments and dims `expr` names exist in `function`.
bool checkReferences(const Expr &expr, const Function &function,
                     std::string &error) {
  size_t numArgs = function.contract.argDims.size();
  if (expr.kind == Expr::Kind::Arg &&
      static_cast<uint64_t>(expr.value) >= numArgs) {
    error = "uses %arg" + std::to_string(expr.value) + ", but there are " +
            std::to_string(numArgs) + " arguments";
    return false;
  }
  if (expr.kind == Expr::Kind::Dim) {
    const Expr &source = expr.operands[0];
    if (source.kind != Expr::Kind::Arg) {
      error = "takes dim() of something that is not an argument";
      return false;
    }
    if (!checkReferences(source, function, error))
      return false;
    size_t rank = function.contract.argDims[source.value].size();
    if (static_cast<uint64_t>(expr.value) >= rank) {
      error = "takes dim " + std::to_string(expr.value) + " of %arg" +
              std::to_string(source.value) + ", which has rank " +
              std::to_string(rank);
      return false;
    }
  }
  for (const Expr &operand : expr.operands)
    if (!checkReferences(operand, function, error))
      return false;
  return true;
}

} // namespace

bool Bundle::parse(const std::string &text, const std::string &directory,
                   Bundle &bundle, std::string &error,
                   const std::string &jsonName) {
  bundle = Bundle();
  JsonValue root;
  if (!parseJson(text, root, error)) {
    error = quoted(jsonName, 4096) + " is not a kernel bundle: " + error;
    return false;
  }
  auto fail = [&](const std::string &why) {
    error = quoted(jsonName, 4096) + " is not a valid kernel bundle: " + why;
    return false;
  };
  const JsonValue *version = root.get("version");
  if (!version || version->kind != JsonValue::Kind::Number ||
      version->number != 1)
    return fail("missing or unsupported \"version\" (expected 1)");
  std::string dir = directory;
  if (!dir.empty() && dir.back() != '/')
    dir += '/';

  const JsonValue *binaries = root.get("binaries");
  if (!binaries || binaries->kind != JsonValue::Kind::Array)
    return fail("no \"binaries\" list");
  for (const JsonValue &b : binaries->array) {
    const std::string *name = stringMember(b, "name"),
                      *file = stringMember(b, "file"),
                      *format = stringMember(b, "format"),
                      *target = stringMember(b, "target");
    if (!name || !file || !format || !target)
      return fail("a binary lacks name, file, format or target");
    if (*format != "ptx" && *format != "cubin")
      return fail("binary " + quoted(*name) + " has format " + quoted(*format) +
                  " (expected ptx or cubin)");
    // The bundle's own directory and nothing else: a bundle may come from
    // elsewhere, and must not read ../../etc/passwd or /dev/zero.
    bool plain =
        !file->empty() && *file != "." && *file != ".." &&
        std::none_of(file->begin(), file->end(), [](char c) {
          return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
        });
    if (!plain)
      return fail("binary " + quoted(*name) + " names file " + quoted(*file) +
                  ", which is not a plain file name in the bundle's "
                  "directory (no '/', '\\' or control characters, not empty, "
                  "'.' or '..')");
    Binary binary{*name, *format, *target, ""};
    if (!readFile(dir + *file, kMaxBinaryBytes, "a binary", binary.image, error,
                  /*insideOnly=*/true))
      return fail("binary " + quoted(*name) + ": " + error);
    if (binary.image.empty())
      return fail(quoted(*file) + " is empty");
    bundle.binaries.push_back(std::move(binary));
  }

  const JsonValue *functions = root.get("functions");
  if (!functions || functions->kind != JsonValue::Kind::Array)
    return fail("no \"functions\" list");
  ExprBudget budget;
  for (const JsonValue &f : functions->array) {
    Function function;
    const std::string *name = stringMember(f, "name");
    const JsonValue *args = f.get("args"), *launches = f.get("launches");
    if (!name || !args || args->kind != JsonValue::Kind::Array || !launches ||
        launches->kind != JsonValue::Kind::Array)
      return fail("a function lacks name, args or launches");
    function.name = *name;
    std::string where = "function " + quoted(*name) + ": ";
    for (const JsonValue &a : args->array) {
      std::string operand =
          "argument " + std::to_string(function.argTypes.size());
      if (a.kind != JsonValue::Kind::String)
        return fail(where + operand + " has no type (a string)");
      std::vector<int64_t> dims;
      std::string element;
      int64_t bytes = 0;
      if (!parseMemRefType(a.string, dims, element, bytes, error))
        return fail(where + operand + ": the runtime cannot pass it: " + error);
      function.argTypes.push_back(a.string);
      function.argElementTypes.push_back(element);
      function.argElementBytes.push_back(bytes);
      function.contract.argDims.push_back(std::move(dims));
    }
    if (!parseContract(f.get("shape_contract"), function, error))
      return fail(where + error);
    for (const JsonValue &l : launches->array) {
      Launch launch;
      const std::string *module = stringMember(l, "module"),
                        *kernel = stringMember(l, "kernel");
      if (!module || !kernel)
        return fail(where + "a launch lacks module or kernel");
      launch.module = *module;
      launch.kernel = *kernel;
      std::string launchWhere = where + "launch of " + quoted(*kernel);
      if (!bundle.binary(*module))
        return fail(launchWhere + " names unknown binary " + quoted(*module));
      launchWhere += ": ";
      const JsonValue *operands = l.get("operands");
      if (!operands || operands->kind != JsonValue::Kind::Array)
        return fail(launchWhere + "no \"operands\" list");
      if (!budget.parseList(l.get("grid"), 3, launch.grid, error) ||
          !budget.parseList(l.get("block"), 3, launch.block, error))
        return fail(launchWhere + error);
      const std::string zero = "0";
      const std::string *shared = stringMember(l, "shared_memory_bytes");
      const std::string *workspace = stringMember(l, "workspace_bytes");
      if (!budget.parse(shared ? *shared : zero, launch.sharedMemoryBytes,
                        error) ||
          !budget.parse(workspace ? *workspace : zero, launch.workspaceBytes,
                        error))
        return fail(launchWhere + error);
      for (const JsonValue &o : operands->array) {
        launch.operands.emplace_back();
        if (o.kind != JsonValue::Kind::String)
          return fail(launchWhere + "an operand is not a string");
        if (!budget.parse(o.string, launch.operands.back(), error))
          return fail(launchWhere + error);
      }
      std::vector<const Expr *> all = {&launch.sharedMemoryBytes,
                                       &launch.workspaceBytes};
      for (int d = 0; d < 3; ++d)
        all.insert(all.end(), {&launch.grid[d], &launch.block[d]});
      for (const Expr &operand : launch.operands)
        all.push_back(&operand);
      for (const Expr *expr : all)
        if (!checkReferences(*expr, function, error))
          return fail(launchWhere + "an expression " + error);
      function.launches.push_back(std::move(launch));
    }
    bundle.functions.push_back(std::move(function));
  }
  return true;
}

bool Bundle::load(const std::string &jsonPath, Bundle &bundle,
                  std::string &error) {
  std::string text;
  if (!readFile(jsonPath, kMaxBundleJsonBytes, "bundle.json", text, error))
    return false;
  size_t slash = jsonPath.rfind('/');
  return parse(text,
               slash == std::string::npos ? "" : jsonPath.substr(0, slash + 1),
               bundle, error, jsonPath);
}

const Function *Bundle::function(const std::string &name) const {
  for (const Function &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

const Binary *Bundle::binary(const std::string &name) const {
  for (const Binary &b : binaries)
    if (b.name == name)
      return &b;
  return nullptr;
}
