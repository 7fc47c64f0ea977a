//===- ShapeCheck.h - argument shapes checked before a launch ---*- C++ -*-===//
//
// A compiled attn function takes buffers whose dynamic sizes must agree:
// Q, K, V, the output and the logsumexp share the batch, K and V their
// length, Hq is a multiple of Hkv, a captured tensor indexed by a position
// is at least as long as that dimension. The compiler records these ties
// as a ShapeContract (in the kernel bundle, and for CPU kernels next to the
// compiled function); every caller (the CPU JIT, attn.Kernel,
// attn-bundle-run, the C++ API) checks the actual shapes against it before
// a kernel runs, so a mismatch is an error naming both arguments instead of
// an out-of-bounds access. Needs neither MLIR nor CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_SHAPECHECK_H
#define ATTNRUNTIME_SHAPECHECK_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn_runtime {

/// Dimension `dim` of argument `arg`.
struct DimRef {
  int64_t arg = 0;
  int64_t dim = 0;
  bool operator==(const DimRef &o) const {
    return arg == o.arg && dim == o.dim;
  }
};

struct ShapeConstraint {
  enum class Kind {
    /// lhs == rhs.
    Equal,
    /// lhs is a multiple of rhs, and rhs > 0 unless lhs == 0 (GQA: Hq of
    /// Hkv).
    MultipleOf,
    /// lhs >= rhs (a captured tensor indexed by a problem position; a block
    /// mask's rows for the query's length).
    AtLeast,
    /// lhs <= rhs (a query no longer than a static block mask covers).
    AtMost,
    /// lhs == 1 or lhs == rhs (a block mask's batch or heads: 1 serves
    /// them all).
    OneOrEqual,
  } kind = Kind::Equal;
  DimRef lhs, rhs;
  /// When set, the right side is this size instead of `rhs` (a size the
  /// program fixes, such as a block mask built for a constant length).
  std::optional<int64_t> rhsValue;
  /// The right side counts blocks of this many: ceil(rhs / rhsBlock).
  int64_t rhsBlock = 1;
  /// What the tied dimension is, for messages: "batch", "kv length", ...
  std::string what;

  /// "equal", "multiple_of", "at_least", "at_most", "one_or_equal" (the
  /// bundle's spelling).
  static const char *kindName(Kind kind);
  static bool parseKind(const std::string &name, Kind &kind);
  /// Whether sizes `lhs` and `rhs` (rhs already counted in blocks) agree.
  static bool holds(Kind kind, int64_t lhs, int64_t rhs);
  /// "", "a multiple of ", "at least ", "at most ", "1 or ": what lhs must
  /// be of rhs, for messages.
  static const char *relationText(Kind kind);
};

struct ShapeContract {
  /// One name per argument as users know it ("q", "k", "v", "out", "lse",
  /// or "argument 5"); may be empty, then arguments are named by number.
  std::vector<std::string> argNames;
  /// The static sizes of each argument's type, -1 for a dynamic one; the
  /// rank of each argument is the size of its vector.
  std::vector<std::vector<int64_t>> argDims;
  std::vector<ShapeConstraint> constraints;

  /// The name of argument `arg` for messages.
  std::string argName(int64_t arg) const;

  /// Checks `shapes` (one per argument) against the contract: the number of
  /// arguments, each rank, each static size, each constraint, and that every
  /// buffer's element count times `elementBytes[i]` (when given) fits in
  /// int64. Returns an empty string when they agree, else one message that
  /// names both arguments and both sizes, e.g. "out dim 2 (query length) is
  /// 5 but q dim 2 is 8". Negative sizes, and a constraint on a dim that
  /// does not exist, are mismatches too (never out-of-bounds reads).
  std::string check(const std::vector<std::vector<int64_t>> &shapes,
                    const std::vector<int64_t> &elementBytes = {}) const;
};

} // namespace attn_runtime

#endif // ATTNRUNTIME_SHAPECHECK_H
