//===- Launch.cpp - kernel parameters and argument checks of a bundle -----===//

#include "AttnRuntime/Bundle.h"

#include <algorithm>

using namespace attn_runtime;

int64_t attn_runtime::dtypeBytes(const std::string &dtype) {
  static const std::pair<const char *, int64_t> kDtypes[] = {
      {"f16", 2}, {"bf16", 2}, {"f32", 4}, {"f64", 8}, {"i1", 1},
      {"i8", 1},  {"i16", 2},  {"i32", 4}, {"i64", 8}, {"index", 8}};
  for (const auto &[name, bytes] : kDtypes)
    if (dtype == name)
      return bytes;
  return 0;
}

std::string ArgumentType::str() const {
  std::string text = "memref<";
  for (int64_t size : shape)
    text += (size < 0 ? "?" : std::to_string(size)) + "x";
  return text + dtype + ">";
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
  // A runtime buffer the launch takes: allocated, or needed 0 bytes (an
  // empty problem), when the kernel gets a null descriptor of size 0.
  auto hasBuffer = [&](uint64_t address, const Expr &bytes, const char *what) {
    int64_t needed = 0;
    if (environment && !address &&
        !evaluateIndex(bytes, args, needed, error, environment))
      return false;
    if (environment && (address || needed == 0))
      return true;
    error = std::string("the kernel needs the runtime's ") + what +
            ", which was not allocated";
    return false;
  };
  for (const Operand &operand : operands) {
    Param p;
    switch (operand.kind) {
    case Operand::Kind::Workspace:
      if (!hasBuffer(environment ? environment->workspace : 0, workspaceBytes,
                     "workspace"))
        return false;
      if (!pushMemRef(environment->workspace,
                      {environment->workspaceBytes / 4}))
        return false;
      break;
    case Operand::Kind::Scratch:
      if (!hasBuffer(environment ? environment->scratch : 0, scratchBytes,
                     "scratch buffer"))
        return false;
      if (!pushMemRef(environment->scratch, {environment->scratchBytes / 4}))
        return false;
      break;
    case Operand::Kind::F32:
      p.kind = Param::Kind::F32;
      p.f32 = operand.f32;
      out.push_back(p);
      break;
    case Operand::Kind::Int:
      if (!evaluateIndex(operand.value, args, p.i64, error, environment))
        return false;
      out.push_back(p);
      break;
    case Operand::Kind::Buffer:
    case Operand::Kind::TensorMap: {
      if (operand.arg < 0 ||
          static_cast<uint64_t>(operand.arg) >= args.size()) {
        error = "the kernel needs argument " + std::to_string(operand.arg) +
                ", but only " + std::to_string(args.size()) + " were given";
        return false;
      }
      const Argument &arg = args[operand.arg];
      if (operand.kind == Operand::Kind::Buffer) {
        if (!pushMemRef(arg.address, arg.shape))
          return false;
        break;
      }
      // An empty argument's map stays zero: the kernel copies nothing from
      // it, and the driver encodes no empty tensor.
      p.kind = Param::Kind::TensorMap;
      bool empty =
          std::find(arg.shape.begin(), arg.shape.end(), 0) != arg.shape.end();
      std::string why;
      if (!empty && (!environment || !environment->encodeTensorMap)) {
        error = "the kernel takes a tensor map of argument " +
                std::to_string(operand.arg) + ", which needs the CUDA driver";
        return false;
      }
      if (!empty && !environment->encodeTensorMap(
                        TensorMapRequest{arg.address, operand.dtype, arg.shape,
                                         operand.box},
                        p.tensorMap, why)) {
        error = "cannot make the tensor map of argument " +
                std::to_string(operand.arg) + ": " + why;
        return false;
      }
      out.push_back(p);
      break;
    }
    }
  }
  return true;
}

int64_t Function::argIndex(const std::string &name) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == name)
      return i;
  return -1;
}

std::string Function::checkArguments(
    const std::vector<std::vector<int64_t>> &shapes) const {
  std::vector<int64_t> elementBytes;
  for (const ArgumentType &arg : args)
    elementBytes.push_back(arg.elementBytes);
  std::string message = contract.check(shapes, elementBytes);
  return message.empty() ? message : "@" + name + ": " + message;
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
