//===- Bundle.cpp - reading and evaluating kernel bundles -----------------===//

#include "AttnRuntime/Bundle.h"

#include "AttnRuntime/Json.h"
#include <algorithm>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

using namespace attn_runtime;

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
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

/// "name(inner)" -> inner, when text has that form.
bool call(const std::string &text, const std::string &name,
          std::string &inner) {
  if (text.size() < name.size() + 2 || text.compare(0, name.size(), name) ||
      text[name.size()] != '(' || text.back() != ')')
    return false;
  inner = text.substr(name.size() + 1, text.size() - name.size() - 2);
  return true;
}

/// Evaluates an affine expression (+ - * ceildiv floordiv mod, symbols and
/// dims by name) with the given values.
class AffineEvaluator {
public:
  AffineEvaluator(const std::string &text,
                  const std::vector<std::string> &names,
                  const std::vector<int64_t> &values)
      : names(names), values(values) {
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

  bool evaluate(int64_t &result) {
    ok = true;
    result = sum();
    return ok && pos == tokens.size();
  }

private:
  std::string peek() { return pos < tokens.size() ? tokens[pos] : ""; }
  std::string take() { return pos < tokens.size() ? tokens[pos++] : ""; }

  int64_t atom() {
    std::string t = take();
    if (t == "(") {
      int64_t v = sum();
      ok &= take() == ")";
      return v;
    }
    if (t == "-")
      return -atom();
    if (isInteger(t))
      return std::strtoll(t.c_str(), nullptr, 10);
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == t)
        return values[i];
    ok = false;
    return 0;
  }

  int64_t product() {
    int64_t v = atom();
    for (std::string op = peek();
         op == "*" || op == "ceildiv" || op == "floordiv" || op == "mod";
         op = peek()) {
      take();
      int64_t r = atom();
      if (op == "*") {
        v *= r;
        continue;
      }
      if (r == 0) {
        ok = false;
        return 0;
      }
      int64_t q = v / r, m = v % r;
      if (op == "floordiv")
        v = (m != 0 && ((m < 0) != (r < 0))) ? q - 1 : q;
      else if (op == "ceildiv")
        v = (m != 0 && ((m < 0) == (r < 0))) ? q + 1 : q;
      else
        v = (m < 0) ? m + (r < 0 ? -r : r) : m;
    }
    return v;
  }

  int64_t sum() {
    int64_t v = product();
    for (std::string op = peek(); op == "+" || op == "-"; op = peek()) {
      take();
      int64_t r = product();
      v = op == "+" ? v + r : v - r;
    }
    return v;
  }

  std::vector<std::string> tokens;
  const std::vector<std::string> &names;
  const std::vector<int64_t> &values;
  size_t pos = 0;
  bool ok = true;
};

} // namespace

bool Expr::parse(const std::string &raw, Expr &expr, std::string &error) {
  std::string text = trim(raw), inner;
  expr = Expr();
  if (isInteger(text)) {
    expr.kind = Kind::Int;
    expr.value = std::strtoll(text.c_str(), nullptr, 10);
    return true;
  }
  if (call(text, "f32", inner)) {
    expr.kind = Kind::F32;
    if (inner == "Inf" || inner == "+Inf")
      expr.f32 = std::numeric_limits<float>::infinity();
    else if (inner == "-Inf")
      expr.f32 = -std::numeric_limits<float>::infinity();
    else if (inner == "NaN")
      expr.f32 = std::numeric_limits<float>::quiet_NaN();
    else
      expr.f32 = std::strtof(inner.c_str(), nullptr);
    return true;
  }
  if (text == "sm_count" || text == "workspace") {
    expr.kind = text == "sm_count" ? Kind::SmCount : Kind::Workspace;
    return true;
  }
  if (text.size() > 4 && text.compare(0, 4, "%arg") == 0 &&
      isInteger(text.substr(4))) {
    expr.kind = Kind::Arg;
    expr.value = std::strtoll(text.c_str() + 4, nullptr, 10);
    return true;
  }
  if (call(text, "dim", inner)) {
    std::vector<std::string> parts = splitTopLevel(inner);
    expr.kind = Kind::Dim;
    expr.operands.resize(1);
    if (parts.size() != 2 || !isInteger(parts[1]) ||
        !parse(parts[0], expr.operands[0], error)) {
      error = "malformed dim expression '" + text + "'";
      return false;
    }
    expr.value = std::strtoll(parts[1].c_str(), nullptr, 10);
    return true;
  }
  for (const char *op : {"add", "sub", "mul", "div", "ceildiv", "min", "max"}) {
    if (!call(text, op, inner))
      continue;
    std::vector<std::string> parts = splitTopLevel(inner);
    expr.kind = Kind::Binary;
    expr.op = op;
    expr.operands.resize(2);
    if (parts.size() != 2 || !parse(parts[0], expr.operands[0], error) ||
        !parse(parts[1], expr.operands[1], error)) {
      error = "malformed expression '" + text + "'";
      return false;
    }
    return true;
  }
  if (call(text, "affine", inner)) {
    // affine(()[s0, s1] -> (expr), [E0, E1])
    size_t arrow = inner.find("->");
    size_t open = inner.find('['), close = inner.find(']');
    size_t last = inner.rfind('[');
    if (arrow == std::string::npos || open == std::string::npos ||
        close == std::string::npos || last == std::string::npos ||
        open > arrow || inner.back() != ']') {
      error = "malformed affine expression '" + text + "'";
      return false;
    }
    for (const std::string &s :
         splitTopLevel(inner.substr(open + 1, close - open - 1)))
      expr.symbols.push_back(s);
    size_t resultOpen = inner.find('(', arrow);
    size_t resultClose = inner.rfind(')', last);
    if (resultOpen == std::string::npos || resultClose == std::string::npos ||
        resultClose <= resultOpen) {
      error = "malformed affine map in '" + text + "'";
      return false;
    }
    expr.kind = Kind::Affine;
    expr.affine = inner.substr(resultOpen + 1, resultClose - resultOpen - 1);
    for (const std::string &operand :
         splitTopLevel(inner.substr(last + 1, inner.size() - last - 2))) {
      expr.operands.emplace_back();
      if (!parse(operand, expr.operands.back(), error))
        return false;
    }
    if (expr.operands.size() != expr.symbols.size()) {
      error = "affine expression '" + text +
              "' has a different number of symbols and operands";
      return false;
    }
    return true;
  }
  error = "unknown bundle expression '" + text + "'";
  return false;
}

bool attn_runtime::evaluateIndex(const Expr &expr,
                                 const std::vector<Argument> &args,
                                 int64_t &value, std::string &error,
                                 const Environment *environment) {
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
    const Expr &source = expr.operands[0];
    if (source.kind != Expr::Kind::Arg || source.value < 0 ||
        static_cast<size_t>(source.value) >= args.size()) {
      error = "dim() of something that is not an argument";
      return false;
    }
    const Argument &arg = args[source.value];
    if (expr.value < 0 || static_cast<size_t>(expr.value) >= arg.shape.size()) {
      error = "dim " + std::to_string(expr.value) + " of argument " +
              std::to_string(source.value) + ", which has rank " +
              std::to_string(arg.shape.size());
      return false;
    }
    value = arg.shape[expr.value];
    return true;
  }
  case Expr::Kind::Binary: {
    int64_t a, b;
    if (!evaluateIndex(expr.operands[0], args, a, error, environment) ||
        !evaluateIndex(expr.operands[1], args, b, error, environment))
      return false;
    if ((expr.op == "div" || expr.op == "ceildiv") && b == 0) {
      error = "division by zero in a launch expression";
      return false;
    }
    value = expr.op == "add"   ? a + b
            : expr.op == "sub" ? a - b
            : expr.op == "mul" ? a * b
            : expr.op == "div" ? a / b
            : expr.op == "min" ? std::min(a, b)
            : expr.op == "max" ? std::max(a, b)
                               : (a + b - 1) / b;
    return true;
  }
  case Expr::Kind::Affine: {
    std::vector<int64_t> values;
    for (const Expr &operand : expr.operands) {
      values.emplace_back();
      if (!evaluateIndex(operand, args, values.back(), error, environment))
        return false;
    }
    if (!AffineEvaluator(expr.affine, expr.symbols, values).evaluate(value)) {
      error = "cannot evaluate affine expression '" + expr.affine + "'";
      return false;
    }
    return true;
  }
  }
  return false;
}

bool Launch::params(const std::vector<Argument> &args, std::vector<Param> &out,
                    std::string &error, const Environment *environment) const {
  out.clear();
  auto pushMemRef = [&](uint64_t address, const std::vector<int64_t> &shape) {
    // A dense row-major memref: allocated and aligned pointer, offset 0,
    // sizes, strides.
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
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
      strides[d - 1] = strides[d] * shape[d];
    for (int64_t stride : strides) {
      Param s;
      s.i64 = stride;
      out.push_back(s);
    }
  };
  for (const Expr &operand : operands) {
    Param p;
    if (operand.kind == Expr::Kind::Workspace) {
      if (!environment || !environment->workspace) {
        error = "the kernel needs the runtime's workspace, which was not "
                "allocated";
        return false;
      }
      pushMemRef(environment->workspace, {environment->workspaceBytes / 4});
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
        static_cast<size_t>(operand.value) >= args.size()) {
      error = "the kernel needs argument " + std::to_string(operand.value) +
              ", but only " + std::to_string(args.size()) + " were given";
      return false;
    }
    const Argument &arg = args[operand.value];
    pushMemRef(arg.address, arg.shape);
  }
  return true;
}

namespace {

bool readFile(const std::string &path, std::string &contents,
              std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read '" + path + "'";
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  contents = ss.str();
  return true;
}

const std::string *stringMember(const JsonValue &v, const char *key) {
  const JsonValue *m = v.get(key);
  return m && m->kind == JsonValue::Kind::String ? &m->string : nullptr;
}

bool parseExprs(const JsonValue *list, size_t count, Expr *out,
                std::string &error) {
  if (!list || list->kind != JsonValue::Kind::Array ||
      list->array.size() != count) {
    error = "expected a list of " + std::to_string(count) + " expressions";
    return false;
  }
  for (size_t i = 0; i < count; ++i)
    if (list->array[i].kind != JsonValue::Kind::String ||
        !Expr::parse(list->array[i].string, out[i], error))
      return false;
  return true;
}

} // namespace

bool Bundle::load(const std::string &jsonPath, Bundle &bundle,
                  std::string &error) {
  std::string text;
  if (!readFile(jsonPath, text, error))
    return false;
  JsonValue root;
  if (!parseJson(text, root, error)) {
    error = "'" + jsonPath + "' is not a kernel bundle: " + error;
    return false;
  }
  auto fail = [&](const std::string &why) {
    error = "'" + jsonPath + "' is not a valid kernel bundle: " + why;
    return false;
  };
  const JsonValue *version = root.get("version");
  if (!version || version->kind != JsonValue::Kind::Number ||
      version->number != 1)
    return fail("missing or unsupported \"version\" (expected 1)");
  std::string dir;
  size_t slash = jsonPath.rfind('/');
  if (slash != std::string::npos)
    dir = jsonPath.substr(0, slash + 1);

  bundle = Bundle();
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
      return fail("binary '" + *name + "' has format '" + *format +
                  "' (expected ptx or cubin)");
    Binary binary{*name, *format, *target, ""};
    if (!readFile(dir + *file, binary.image, error))
      return fail(error);
    if (binary.image.empty())
      return fail("'" + *file + "' is empty");
    bundle.binaries.push_back(std::move(binary));
  }

  const JsonValue *functions = root.get("functions");
  if (!functions || functions->kind != JsonValue::Kind::Array)
    return fail("no \"functions\" list");
  for (const JsonValue &f : functions->array) {
    Function function;
    const std::string *name = stringMember(f, "name");
    const JsonValue *args = f.get("args"), *launches = f.get("launches");
    if (!name || !args || args->kind != JsonValue::Kind::Array || !launches ||
        launches->kind != JsonValue::Kind::Array)
      return fail("a function lacks name, args or launches");
    function.name = *name;
    for (const JsonValue &a : args->array)
      function.argTypes.push_back(a.string);
    for (const JsonValue &l : launches->array) {
      Launch launch;
      const std::string *module = stringMember(l, "module"),
                        *kernel = stringMember(l, "kernel");
      if (!module || !kernel)
        return fail("a launch lacks module or kernel");
      launch.module = *module;
      launch.kernel = *kernel;
      if (!bundle.binary(*module))
        return fail("launch of '" + *kernel + "' names unknown binary '" +
                    *module + "'");
      const JsonValue *operands = l.get("operands");
      if (!parseExprs(l.get("grid"), 3, launch.grid, error) ||
          !parseExprs(l.get("block"), 3, launch.block, error) || !operands ||
          operands->kind != JsonValue::Kind::Array)
        return fail("launch of '" + *kernel + "': " + error);
      const std::string zero = "0";
      const std::string *shared = stringMember(l, "shared_memory_bytes");
      const std::string *workspace = stringMember(l, "workspace_bytes");
      if (!Expr::parse(shared ? *shared : zero, launch.sharedMemoryBytes,
                       error) ||
          !Expr::parse(workspace ? *workspace : zero, launch.workspaceBytes,
                       error))
        return fail("launch of '" + *kernel + "': " + error);
      for (const JsonValue &o : operands->array) {
        launch.operands.emplace_back();
        if (!Expr::parse(o.string, launch.operands.back(), error))
          return fail(error);
      }
      function.launches.push_back(std::move(launch));
    }
    bundle.functions.push_back(std::move(function));
  }
  return true;
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
