//===- Reference.h - float64 reference of attn.attention ------------------===//
//
// Computes what an attn.attention means, straight from its definition, in
// double precision: every score, the op's own score_mod and mask_mod
// regions evaluated by a small interpreter (not by the compiler under test),
// one softmax per row. The compiled kernel is checked against this.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUN_REFERENCE_H
#define ATTN_RUN_REFERENCE_H

#include "BlockPattern.h"

#include "AttnRuntime/HostTensor.h"

#include "AttnDialect/IR/AttnOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

namespace attn_run {

using attn_runtime::HostTensor;

/// A value of a region: an integer (i1 to i64, index) as the sign-extended
/// two's complement of its width, or a float as a double (the reference
/// computes every float type in double precision).
struct Scalar {
  int64_t i = 0;
  double f = 0;

  static Scalar ofInt(int64_t value) { return {value, 0}; }
  static Scalar ofFloat(double value) { return {0, value}; }
};

/// Evaluates the scalar ops of score_mod/mask_mod regions: arith, math, and
/// tensor.extract from captured tensors. Integers are exact and wrap as MLIR
/// defines; what MLIR leaves undefined (division by zero, signed division
/// overflow, out-of-bounds reads, shifts past the width, poison from
/// overflow flags or out-of-range conversions) is an error naming the op,
/// not a made-up value: the compiled kernel's answer is not defined either.
class RegionInterpreter {
public:
  explicit RegionInterpreter(
      llvm::DenseMap<mlir::Value, const HostTensor *> captures)
      : captures(std::move(captures)) {}

  /// Reports the first op of the region (`name`: score_mod or mask_mod)
  /// that the interpreter cannot evaluate: an unknown op, a non-scalar
  /// type, or a value from above the region that is not a constant.
  llvm::Error check(mlir::Region &region, llvm::StringRef name) const;
  /// The region's yielded value for the given block arguments, or the
  /// error of the first op whose result is undefined for them.
  llvm::Expected<Scalar> run(mlir::Region &region,
                             llvm::ArrayRef<Scalar> args) const;

private:
  /// tensor.extract: an in-bounds element of a captured tensor.
  llvm::Expected<Scalar> extractElement(mlir::tensor::ExtractOp extract,
                                        llvm::ArrayRef<Scalar> indices) const;

  llvm::DenseMap<mlir::Value, const HostTensor *> captures;
};

struct ReferenceResult {
  std::vector<double> output;    // [B, Hq, M, Dv]
  std::vector<double> logsumexp; // [B, Hq, M]
  /// (b, h, q, kv) elements that no mask removes: the useful work.
  int64_t visiblePairs = 0;
  /// The blocks of `blockSizes` that hold visible elements.
  BlockPattern blocks;
};

/// q, k, v hold the (rounded) inputs the kernel saw. Fails with the region
/// and the (b, h, q, kv) position where a region's result is undefined.
llvm::Expected<ReferenceResult>
referenceAttention(mlir::attn::AttentionOp op,
                   const RegionInterpreter &interpreter, const HostTensor &q,
                   const HostTensor &k, const HostTensor &v,
                   std::pair<int64_t, int64_t> blockSizes);

} // namespace attn_run

#endif // ATTN_RUN_REFERENCE_H
