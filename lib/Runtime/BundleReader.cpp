//===- BundleReader.cpp - reading and validating bundle.json --------------===//
//
// Everything a launch will use is checked here, so that a bundle that loads
// can be launched: each name (an argument, a binary, an op, an element
// type) must exist and each dim must be within its argument's rank.
//
//===----------------------------------------------------------------------===//

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/Json.h"

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

using namespace attn_runtime;

namespace {

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

bool isArray(const JsonValue *v) {
  return v && v->kind == JsonValue::Kind::Array;
}

/// A member that must be a boolean when present (false when absent).
bool readBool(const JsonValue &json, const char *key, bool &out,
              std::string &error, const std::string &where) {
  const JsonValue *v = json.get(key);
  out = v && v->boolean;
  if (!v || v->kind == JsonValue::Kind::Bool)
    return true;
  error = where + " has a \"" + key + "\" that is not true or false";
  return false;
}

/// The function's "args": names, element types and shapes.
bool readArgs(const JsonValue *json, Function &function, std::string &error) {
  if (!isArray(json)) {
    error = "no \"args\" list";
    return false;
  }
  for (const JsonValue &a : json->array) {
    ArgumentType arg;
    std::string where = "argument " + std::to_string(function.args.size());
    const std::string *name = a.getString("name"),
                      *dtype = a.getString("dtype");
    const JsonValue *shape = a.get("shape");
    if (!name || name->empty() || !dtype || !isArray(shape)) {
      error = where + " is not {\"name\": NAME, \"dtype\": TYPE, \"shape\": "
                      "[...]}";
      return false;
    }
    where += " (" + quoted(*name) + ")";
    if (function.argIndex(*name) >= 0) {
      error = where + " has the name of argument " +
              std::to_string(function.argIndex(*name));
      return false;
    }
    arg.name = *name;
    arg.dtype = *dtype;
    arg.elementBytes = dtypeBytes(*dtype);
    if (arg.elementBytes == 0) {
      error = where + " has unknown dtype " + quoted(*dtype) +
              " (expected f16, bf16, f32, f64, i1, i8, i16, i32, i64 or "
              "index)";
      return false;
    }
    for (const JsonValue &size : shape->array) {
      int64_t value = -1;
      if (size.kind != JsonValue::Kind::Null &&
          (!size.integer(value) || value < 0)) {
        error = where + " has a size that is neither a non-negative integer "
                        "nor null (dynamic)";
        return false;
      }
      arg.shape.push_back(value);
    }
    function.contract.argNames.push_back(arg.name);
    function.contract.argDims.push_back(arg.shape);
    function.args.push_back(std::move(arg));
  }
  return true;
}

/// Reads "shape_contract" (when there) into `function.contract`, whose
/// names and argDims are already set; false with `error` when it names an
/// argument or a dim that does not exist.
bool readContract(const JsonValue *json, Function &function,
                  std::string &error) {
  if (!json)
    return true;
  ShapeContract &contract = function.contract;
  size_t numArgs = contract.argDims.size();
  const JsonValue *constraints = json->get("constraints");
  if (json->kind != JsonValue::Kind::Object || !isArray(constraints)) {
    error = "\"shape_contract\" must be an object with a list "
            "\"constraints\"";
    return false;
  }
  for (const JsonValue &c : constraints->array) {
    std::string where = "\"shape_contract\" constraint " +
                        std::to_string(contract.constraints.size()) + " ";
    ShapeConstraint constraint;
    const std::string *kind = c.getString("kind"), *what = c.getString("what");
    if (!kind || !ShapeConstraint::parseKind(*kind, constraint.kind)) {
      error = where + "has no kind equal, multiple_of, at_least, at_most or "
                      "one_or_equal";
      return false;
    }
    if (what)
      constraint.what = *what;
    // The right side is a dimension ("rhs") or a size ("rhs_value"),
    // optionally counted in blocks ("rhs_block").
    if (const JsonValue *value = c.get("rhs_value")) {
      int64_t size = 0;
      if (!value->integer(size) || size < 0) {
        error = where + "needs \"rhs_value\": a size >= 0";
        return false;
      }
      constraint.rhsValue = size;
    }
    if (const JsonValue *block = c.get("rhs_block")) {
      if (!block->integer(constraint.rhsBlock) || constraint.rhsBlock < 1) {
        error = where + "needs \"rhs_block\": a block size >= 1";
        return false;
      }
    }
    for (const char *side : {"lhs", "rhs"}) {
      if (side[0] == 'r' && constraint.rhsValue)
        continue;
      const JsonValue *ref = c.get(side);
      DimRef &out = side[0] == 'l' ? constraint.lhs : constraint.rhs;
      if (!isArray(ref) || ref->array.size() != 2 ||
          !ref->array[0].integer(out.arg) || out.arg < 0 ||
          !ref->array[1].integer(out.dim) || out.dim < 0) {
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

/// A mask_mod or score_mod record: null (none), or {"name", "digest"} and
/// optionally "program".
bool readRegion(const JsonValue &json, const char *key,
                Computation::Region &region, std::string &error,
                const std::string &where) {
  const JsonValue *v = json.get(key);
  if (!v || v->kind == JsonValue::Kind::Null)
    return true;
  const std::string *name = v->getString("name"),
                    *digest = v->getString("digest");
  const JsonValue *nameValue = v->get("name");
  if (v->kind != JsonValue::Kind::Object || !digest || (nameValue && !name)) {
    error = where + " has a \"" + key +
            "\" that is neither null nor {\"name\": NAME, \"digest\": HEX}";
    return false;
  }
  region.present = true;
  region.name = name ? *name : "";
  region.digest = *digest;
  if (const JsonValue *program = v->get("program")) {
    std::string why;
    if (!RegionProgram::fromJson(*program, region.program, why)) {
      error = where + "'s \"" + key + "\" program: " + why;
      return false;
    }
    region.hasProgram = true;
  }
  return true;
}

/// "computes": what each attn op of the function computes.
bool readComputes(const JsonValue *json, Function &function,
                  std::string &error) {
  if (!json)
    return true;
  if (!isArray(json)) {
    error = "\"computes\" is not a list";
    return false;
  }
  for (const JsonValue &c : json->array) {
    Computation computation;
    std::string where =
        "\"computes\" entry " + std::to_string(function.computes.size());
    const std::string *op = c.getString("op"), *dtype = c.getString("dtype");
    if (!op ||
        (*op != "attention" && *op != "attention_grad" && *op != "softmax")) {
      error = where + " has unknown op " + quoted(op ? *op : "") +
              " (expected attention, attention_grad or softmax)";
      return false;
    }
    if (!dtype || !dtypeBytes(*dtype)) {
      error = where + " has unknown dtype " + quoted(dtype ? *dtype : "");
      return false;
    }
    computation.op = *op;
    computation.dtype = *dtype;
    if (*op != "softmax") {
      const JsonValue *scale = c.get("scale");
      if (!c.get("head_dim") ||
          !c.get("head_dim")->integer(computation.headDim) ||
          !c.get("value_head_dim") ||
          !c.get("value_head_dim")->integer(computation.valueHeadDim) ||
          !scale || scale->kind != JsonValue::Kind::Number ||
          !(std::fabs(scale->number) <= FLT_MAX)) {
        error = where + " needs integers \"head_dim\", \"value_head_dim\" "
                        "and an f32 \"scale\"";
        return false;
      }
      computation.scale = static_cast<float>(scale->number);
      if (const JsonValue *sizes = c.get("block_sizes")) {
        if (!isArray(sizes) || sizes->array.size() != 2 ||
            !sizes->array[0].integer(computation.qBlock) ||
            !sizes->array[1].integer(computation.kvBlock) ||
            computation.qBlock <= 0 || computation.kvBlock <= 0) {
          error = where + " has \"block_sizes\" that are not two positive "
                          "integers";
          return false;
        }
      }
      if (!readBool(c, "causal", computation.causal, error, where) ||
          !readBool(c, "logsumexp", computation.logsumexp, error, where) ||
          !readBool(c, "block_mask", computation.blockMask, error, where) ||
          !readRegion(c, "mask_mod", computation.maskMod, error, where) ||
          !readRegion(c, "score_mod", computation.scoreMod, error, where))
        return false;
      if (const JsonValue *wrt = c.get("wrt")) {
        if (!isArray(wrt)) {
          error = where + " has a \"wrt\" that is not a list";
          return false;
        }
        for (const JsonValue &entry : wrt->array) {
          Computation::Wrt w;
          int64_t args = static_cast<int64_t>(function.args.size());
          const JsonValue *tensor = entry.get("tensor"),
                          *grad = entry.get("grad");
          if (!tensor || !grad || !tensor->integer(w.tensor) ||
              !grad->integer(w.grad) || w.tensor < -1 || w.tensor >= args ||
              w.grad < -1 || w.grad >= args) {
            error = where + " has a \"wrt\" entry whose \"tensor\" and "
                            "\"grad\" are not argument numbers (or -1)";
            return false;
          }
          computation.wrt.push_back(w);
        }
      }
    }
    function.computes.push_back(std::move(computation));
  }
  return true;
}

/// The box of a tensor_map operand of argument `arg`: one size per dim of
/// the argument (1 to 5 dims), each 1 to 256, and rows of 32, 64 or 128
/// bytes of f16, bf16 or f32 (the swizzles the kernels use).
bool readBox(const JsonValue *json, const ArgumentType &arg,
             std::vector<int64_t> &box, std::string &error) {
  if (!isArray(json)) {
    error = "has no \"box\" list (the sizes of a copy's box)";
    return false;
  }
  for (const JsonValue &size : json->array) {
    int64_t value = 0;
    if (!size.integer(value) || value < 1 || value > 256) {
      error = "has a \"box\" size that is not an integer from 1 to 256";
      return false;
    }
    box.push_back(value);
  }
  if (box.size() != arg.shape.size() || box.empty() || box.size() > 5) {
    error = "has a box of " + std::to_string(box.size()) +
            " sizes for argument " + quoted(arg.name) + " of rank " +
            std::to_string(arg.shape.size()) +
            " (a tensor map takes 1 to 5 dims, one size each)";
    return false;
  }
  if (arg.dtype != "f16" && arg.dtype != "bf16" && arg.dtype != "f32") {
    error = "maps argument " + quoted(arg.name) + " of " + arg.dtype +
            " (a tensor map takes f16, bf16 or f32)";
    return false;
  }
  int64_t rowBytes = box.back() * arg.elementBytes;
  if (rowBytes != 32 && rowBytes != 64 && rowBytes != 128) {
    error = "has a box whose rows are " + std::to_string(rowBytes) +
            " bytes (the swizzles take 32, 64 or 128)";
    return false;
  }
  return true;
}

/// One kernel operand: {"kind": "buffer", "arg": NAME}, {"kind":
/// "tensor_map", "arg": NAME, "box": [SIZES]}, {"kind": "workspace"},
/// {"kind": "scratch"}, {"kind": "int", "value": EXPR} or {"kind": "f32",
/// "value": NUMBER, "inf", "-inf" or "nan"}.
bool readOperand(const JsonValue &json, const Function &function,
                 Operand &operand, std::string &error) {
  const std::string *kind = json.getString("kind");
  const JsonValue *value = json.get("value");
  if (!kind) {
    error = "has no \"kind\"";
    return false;
  }
  if (*kind == "buffer" || *kind == "tensor_map") {
    operand.kind =
        *kind == "buffer" ? Operand::Kind::Buffer : Operand::Kind::TensorMap;
    const std::string *name = json.getString("arg");
    operand.arg = name ? function.argIndex(*name) : -1;
    if (!name) {
      error = "has no \"arg\" (the argument's name)";
      return false;
    }
    if (operand.arg < 0) {
      std::string known;
      for (const ArgumentType &arg : function.args)
        known += (known.empty() ? "" : ", ") + arg.name;
      error = "names argument " + quoted(*name) +
              ", which the function does not have (it has " +
              (known.empty() ? "none" : known) + ")";
      return false;
    }
    operand.dtype = function.args[operand.arg].dtype;
    return operand.kind == Operand::Kind::Buffer ||
           readBox(json.get("box"), function.args[operand.arg], operand.box,
                   error);
  }
  if (*kind == "workspace" || *kind == "scratch") {
    operand.kind = *kind == "workspace" ? Operand::Kind::Workspace
                                        : Operand::Kind::Scratch;
    return true;
  }
  if (*kind == "int") {
    operand.kind = Operand::Kind::Int;
    if (!value) {
      error = "has no \"value\"";
      return false;
    }
    return Expr::fromJson(*value, function.args, operand.value, error);
  }
  if (*kind == "f32") {
    operand.kind = Operand::Kind::F32;
    double special;
    if (value && nonFiniteNumber(*value, special)) {
      operand.f32 = static_cast<float>(special);
      return true;
    }
    // Read as f32 from its text, so that the writer's shortest text for an
    // f32 gives back its bits.
    if (value && value->kind == JsonValue::Kind::Number)
      operand.f32 = std::strtof(value->string.c_str(), nullptr);
    if (!value || value->kind != JsonValue::Kind::Number ||
        std::isinf(operand.f32)) {
      error = "has a \"value\" that is no f32 (a number f32 holds, \"inf\", "
              "\"-inf\" or \"nan\")";
      return false;
    }
    return true;
  }
  error = "has unknown kind " + quoted(*kind) +
          " (expected buffer, tensor_map, workspace, scratch, int or f32)";
  return false;
}

bool readLaunch(const JsonValue &json, const Bundle &bundle,
                const Function &function, Launch &launch, std::string &error) {
  const std::string *module = json.getString("module"),
                    *kernel = json.getString("kernel");
  if (!module || !kernel) {
    error = "a launch lacks \"module\" or \"kernel\"";
    return false;
  }
  launch.module = *module;
  launch.kernel = *kernel;
  std::string where = "kernel " + quoted(*kernel);
  if (!bundle.binary(*module)) {
    error = where + " names binary " + quoted(*module) +
            ", which the bundle does not have";
    return false;
  }
  auto expression = [&](const JsonValue *value, const std::string &what,
                        Expr &out) {
    if (!value) {
      error = where + " has no " + what;
      return false;
    }
    if (Expr::fromJson(*value, function.args, out, error))
      return true;
    error = where + " " + what + " " + error;
    return false;
  };
  for (const char *key : {"grid", "block"}) {
    const JsonValue *list = json.get(key);
    if (!isArray(list) || list->array.size() != 3) {
      error = where + " needs \"" + key + "\": a list of 3 expressions";
      return false;
    }
    for (int d = 0; d < 3; ++d)
      if (!expression(&list->array[d], key + ("[" + std::to_string(d) + "]"),
                      key[0] == 'g' ? launch.grid[d] : launch.block[d]))
        return false;
  }
  // Each is 0 (Expr's default) when left out.
  for (auto [key, bytes] :
       {std::pair{"shared_memory_bytes", &launch.sharedMemoryBytes},
        std::pair{"workspace_bytes", &launch.workspaceBytes},
        std::pair{"scratch_bytes", &launch.scratchBytes}}) {
    const JsonValue *value = json.get(key);
    if (value && !expression(value, key, *bytes))
      return false;
  }
  const JsonValue *operands = json.get("operands");
  if (!isArray(operands)) {
    error = where + " has no \"operands\" list";
    return false;
  }
  for (const JsonValue &o : operands->array) {
    launch.operands.emplace_back();
    if (!readOperand(o, function, launch.operands.back(), error)) {
      error = where + " operand " + std::to_string(launch.operands.size() - 1) +
              " " + error;
      return false;
    }
  }
  return true;
}

bool readFunction(const JsonValue &json, const Bundle &bundle,
                  Function &function, std::string &error) {
  const std::string *name = json.getString("name");
  const JsonValue *launches = json.get("launches");
  if (!name || !isArray(launches)) {
    error = "a function lacks \"name\" or \"launches\"";
    return false;
  }
  function.name = *name;
  std::string where = "function " + quoted(*name) + ": ";
  if (!readArgs(json.get("args"), function, error) ||
      !readContract(json.get("shape_contract"), function, error) ||
      !readComputes(json.get("computes"), function, error)) {
    error = where + error;
    return false;
  }
  for (const JsonValue &l : launches->array) {
    function.launches.emplace_back();
    if (!readLaunch(l, bundle, function, function.launches.back(), error)) {
      error = where + error;
      return false;
    }
  }
  return true;
}

bool readBinary(const JsonValue &json, const std::string &directory,
                Binary &binary, std::string &error) {
  const std::string *name = json.getString("name"),
                    *file = json.getString("file"),
                    *format = json.getString("format"),
                    *target = json.getString("target");
  if (!name || !file || !format || !target) {
    error = "a binary lacks name, file, format or target";
    return false;
  }
  if (*format != "ptx" && *format != "cubin") {
    error = "binary " + quoted(*name) + " has format " + quoted(*format) +
            " (expected ptx or cubin)";
    return false;
  }
  // The bundle's own directory and nothing else: a bundle may come from
  // elsewhere, and must not read ../../etc/passwd or /dev/zero.
  bool plain =
      !file->empty() && *file != "." && *file != ".." &&
      std::none_of(file->begin(), file->end(), [](char c) {
        return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
      });
  if (!plain) {
    error = "binary " + quoted(*name) + " names file " + quoted(*file) +
            ", which is not a plain file name in the bundle's directory (no "
            "'/', '\\' or control characters, not empty, '.' or '..')";
    return false;
  }
  binary = Binary{*name, *format, *target, ""};
  if (!readFile(directory + *file, kMaxBinaryBytes, "a binary", binary.image,
                error, /*insideOnly=*/true)) {
    error = "binary " + quoted(*name) + ": " + error;
    return false;
  }
  if (binary.image.empty()) {
    error = quoted(*file) + " is empty";
    return false;
  }
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
  // The version first: bundles of version 1 had no "format".
  const JsonValue *format = root.get("format"), *version = root.get("version");
  auto notOurs = [&] {
    return fail(std::string("\"format\" is not \"") + kBundleFormat + "\"");
  };
  if (format && (format->kind != JsonValue::Kind::String ||
                 format->string != kBundleFormat))
    return notOurs();
  int64_t number = 0;
  if (!version || !version->integer(number) || number != kBundleVersion)
    return fail(
        "it has version " +
        (!version                                   ? std::string("none")
         : version->kind == JsonValue::Kind::Number ? version->string
                                                    : quoted(version->string)) +
        "; this runtime reads version " + std::to_string(kBundleVersion) +
        " (write the bundle again with a matching attn)");
  if (!format)
    return notOurs();
  std::string dir = directory;
  if (!dir.empty() && dir.back() != '/')
    dir += '/';

  const JsonValue *binaries = root.get("binaries");
  if (!isArray(binaries))
    return fail("no \"binaries\" list");
  for (const JsonValue &b : binaries->array) {
    bundle.binaries.emplace_back();
    if (!readBinary(b, dir, bundle.binaries.back(), error))
      return fail(error);
  }
  const JsonValue *functions = root.get("functions");
  if (!isArray(functions))
    return fail("no \"functions\" list");
  for (const JsonValue &f : functions->array) {
    bundle.functions.emplace_back();
    if (!readFunction(f, bundle, bundle.functions.back(), error))
      return fail(error);
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
