//===- ShapeCheck.cpp - argument shapes checked before a launch -----------===//

#include "AttnRuntime/ShapeCheck.h"

using namespace attn_runtime;

const char *ShapeConstraint::kindName(Kind kind) {
  switch (kind) {
  case Kind::Equal:
    return "equal";
  case Kind::MultipleOf:
    return "multiple_of";
  case Kind::AtLeast:
    return "at_least";
  }
  return "?";
}

bool ShapeConstraint::parseKind(const std::string &name, Kind &kind) {
  for (Kind k : {Kind::Equal, Kind::MultipleOf, Kind::AtLeast})
    if (name == kindName(k)) {
      kind = k;
      return true;
    }
  return false;
}

std::string ShapeContract::argName(int64_t arg) const {
  if (arg >= 0 && static_cast<uint64_t>(arg) < argNames.size() &&
      !argNames[arg].empty())
    return argNames[arg];
  return "argument " + std::to_string(arg);
}

namespace {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text;
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? "x" : "") + std::to_string(shape[d]);
  return text.empty() ? "a scalar" : text;
}

} // namespace

std::string
ShapeContract::check(const std::vector<std::vector<int64_t>> &shapes,
                     const std::vector<int64_t> &elementBytes) const {
  if (shapes.size() != argDims.size())
    return "expected " + std::to_string(argDims.size()) + " arguments, got " +
           std::to_string(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::vector<int64_t> &shape = shapes[i], &dims = argDims[i];
    std::string name = argName(i);
    if (shape.size() != dims.size())
      return name + " has rank " + std::to_string(shape.size()) +
             " but its type has rank " + std::to_string(dims.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0)
        return name + " dim " + std::to_string(d) + " is " +
               std::to_string(shape[d]) + "; sizes cannot be negative";
      if (dims[d] >= 0 && shape[d] != dims[d])
        return name + " dim " + std::to_string(d) + " is " +
               std::to_string(shape[d]) + " but its type fixes it at " +
               std::to_string(dims[d]);
    }
    // Kernels and callers compute byte offsets in int64.
    int64_t bytes =
        i < elementBytes.size() && elementBytes[i] > 0 ? elementBytes[i] : 1;
    for (int64_t size : shape)
      if (__builtin_mul_overflow(bytes, size, &bytes))
        return name + " (" + shapeString(shape) +
               ") is too large: its size in bytes overflows int64";
  }
  for (size_t j = 0; j < constraints.size(); ++j) {
    const ShapeConstraint &c = constraints[j];
    auto exists = [&](const DimRef &ref) {
      return ref.arg >= 0 && static_cast<uint64_t>(ref.arg) < shapes.size() &&
             ref.dim >= 0 &&
             static_cast<uint64_t>(ref.dim) < shapes[ref.arg].size();
    };
    auto describe = [&](const DimRef &ref) {
      return argName(ref.arg) + " dim " + std::to_string(ref.dim);
    };
    if (!exists(c.lhs) || !exists(c.rhs))
      return "shape constraint " + std::to_string(j) + " names " +
             describe(exists(c.lhs) ? c.rhs : c.lhs) + ", which does not exist";
    int64_t a = shapes[c.lhs.arg][c.lhs.dim], b = shapes[c.rhs.arg][c.rhs.dim];
    std::string lhs = describe(c.lhs) +
                      (c.what.empty() ? "" : " (" + c.what + ")") + " is " +
                      std::to_string(a);
    std::string rhs = describe(c.rhs);
    switch (c.kind) {
    case ShapeConstraint::Kind::Equal:
      if (a != b)
        return lhs + " but " + rhs + " is " + std::to_string(b);
      break;
    case ShapeConstraint::Kind::MultipleOf:
      // Sizes are non-negative here, so b == 0 is the only trap.
      if (b == 0 ? a != 0 : a % b != 0)
        return lhs + ", not a multiple of " + rhs + ", which is " +
               std::to_string(b);
      break;
    case ShapeConstraint::Kind::AtLeast:
      if (a < b)
        return lhs + " but " + rhs + " is " + std::to_string(b) +
               "; it must be at least that";
      break;
    }
  }
  return "";
}
