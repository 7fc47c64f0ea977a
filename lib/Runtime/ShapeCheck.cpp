//===- ShapeCheck.cpp - argument shapes checked before a launch -----------===//

#include "AttnRuntime/ShapeCheck.h"

using namespace attn_runtime;

namespace {

/// Each kind's bundle spelling and its relation in messages.
struct KindText {
  ShapeConstraint::Kind kind;
  const char *name;
  const char *relation;
};
constexpr KindText kKindTexts[] = {
    {ShapeConstraint::Kind::Equal, "equal", ""},
    {ShapeConstraint::Kind::MultipleOf, "multiple_of", "a multiple of "},
    {ShapeConstraint::Kind::AtLeast, "at_least", "at least "},
    {ShapeConstraint::Kind::AtMost, "at_most", "at most "},
    {ShapeConstraint::Kind::OneOrEqual, "one_or_equal", "1 or "},
};

const KindText *textOf(ShapeConstraint::Kind kind) {
  for (const KindText &text : kKindTexts)
    if (text.kind == kind)
      return &text;
  return nullptr;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text;
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? "x" : "") + std::to_string(shape[d]);
  return text.empty() ? "a scalar" : text;
}

} // namespace

const char *ShapeConstraint::kindName(Kind kind) {
  const KindText *text = textOf(kind);
  return text ? text->name : "?";
}

bool ShapeConstraint::parseKind(const std::string &name, Kind &kind) {
  for (const KindText &text : kKindTexts)
    if (name == text.name) {
      kind = text.kind;
      return true;
    }
  return false;
}

bool ShapeConstraint::holds(Kind kind, int64_t a, int64_t b) {
  switch (kind) {
  case Kind::Equal:
    return a == b;
  case Kind::MultipleOf:
    // Sizes are non-negative here, so b == 0 is the only trap.
    return b == 0 ? a == 0 : a % b == 0;
  case Kind::AtLeast:
    return a >= b;
  case Kind::AtMost:
    return a <= b;
  case Kind::OneOrEqual:
    return a == 1 || a == b;
  }
  return false;
}

const char *ShapeConstraint::relationText(Kind kind) {
  const KindText *text = textOf(kind);
  return text ? text->relation : "";
}

std::string ShapeContract::argName(int64_t arg) const {
  if (arg >= 0 && static_cast<uint64_t>(arg) < argNames.size() &&
      !argNames[arg].empty())
    return argNames[arg];
  return "argument " + std::to_string(arg);
}

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
    bool fixed = c.rhsValue.has_value();
    if (!exists(c.lhs) || (!fixed && !exists(c.rhs)))
      return "shape constraint " + std::to_string(j) + " names " +
             describe(exists(c.lhs) ? c.rhs : c.lhs) + ", which does not exist";
    if (c.rhsBlock < 1)
      return "shape constraint " + std::to_string(j) + " counts blocks of " +
             std::to_string(c.rhsBlock);
    int64_t a = shapes[c.lhs.arg][c.lhs.dim];
    int64_t b = fixed ? *c.rhsValue : shapes[c.rhs.arg][c.rhs.dim];
    if (c.rhsBlock > 1) // Sizes are non-negative here: ceil(b / block).
      b = b / c.rhsBlock + (b % c.rhsBlock != 0);
    if (ShapeConstraint::holds(c.kind, a, b))
      continue;
    std::string lhs = describe(c.lhs) +
                      (c.what.empty() ? "" : " (" + c.what + ")") + " is " +
                      std::to_string(a);
    if (fixed)
      return lhs + "; it must be " + ShapeConstraint::relationText(c.kind) +
             std::to_string(b);
    std::string rhs = describe(c.rhs);
    if (c.rhsBlock > 1)
      rhs = "the " + std::to_string(c.rhsBlock) + "-blocks of " + rhs;
    switch (c.kind) {
    case ShapeConstraint::Kind::Equal:
      return lhs + " but " + rhs + " is " + std::to_string(b);
    case ShapeConstraint::Kind::MultipleOf:
      return lhs + ", not a multiple of " + rhs + ", which is " +
             std::to_string(b);
    case ShapeConstraint::Kind::AtLeast:
    case ShapeConstraint::Kind::AtMost:
    case ShapeConstraint::Kind::OneOrEqual:
      return lhs + " but " + rhs + " is " + std::to_string(b) +
             "; it must be " + ShapeConstraint::relationText(c.kind) + "that";
    }
  }
  return "";
}
