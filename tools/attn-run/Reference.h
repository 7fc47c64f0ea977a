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

#include "AttnRuntime/HostTensor.h"

#include "AttnDialect/IR/AttnOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

namespace attn_run {

using attn_runtime::HostTensor;

/// Evaluates the scalar ops of score_mod/mask_mod regions on doubles:
/// arith, math, and tensor.extract from captured tensors.
class RegionInterpreter {
public:
  explicit RegionInterpreter(
      llvm::DenseMap<mlir::Value, const HostTensor *> captures)
      : captures(std::move(captures)) {}

  /// Reports the first op the interpreter cannot evaluate.
  llvm::Error check(mlir::Region &region) const;
  /// The region's yielded value for the given block arguments.
  double run(mlir::Region &region, llvm::ArrayRef<double> args) const;

private:
  llvm::DenseMap<mlir::Value, const HostTensor *> captures;
};

struct ReferenceResult {
  std::vector<double> output;    // [B, Hq, M, Dv]
  std::vector<double> logsumexp; // [B, Hq, M]
  /// (b, h, q, kv) elements that no mask removes: the useful work.
  int64_t visiblePairs = 0;
};

/// q, k, v hold the (rounded) inputs the kernel saw.
ReferenceResult referenceAttention(mlir::attn::AttentionOp op,
                                   const RegionInterpreter &interpreter,
                                   const HostTensor &q, const HostTensor &k,
                                   const HostTensor &v);

} // namespace attn_run

#endif // ATTN_RUN_REFERENCE_H
