//===- Reference.h - float64 reference of attn.attention ------------------===//
//
// attn-run's reference: the op's regions translated into the runtime's
// region programs (the form kernel bundles record) and the runtime's
// float64 reference attention (AttnRuntime/Reference.h), with the block
// pattern of the masks on top.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUN_REFERENCE_H
#define ATTN_RUN_REFERENCE_H

#include "BlockPattern.h"

#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Region.h"

#include "AttnDialect/IR/AttnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace attn_run {

using attn_runtime::HostTensor;

/// The programs of an attn.attention's regions, when it has them.
struct RegionPrograms {
  std::optional<attn_runtime::RegionProgram> maskMod, scoreMod;
};

/// Translates the regions of `op` in `func`; their tensor.extract may read
/// the function arguments for which `isCapture` holds. Fails with the first
/// op the reference cannot evaluate.
llvm::Expected<RegionPrograms>
regionPrograms(mlir::func::FuncOp func, mlir::attn::AttentionOp op,
               llvm::function_ref<bool(unsigned)> isCapture);
/// The same for any op's score_mod and mask_mod (either may be empty).
llvm::Expected<RegionPrograms>
regionPrograms(mlir::func::FuncOp func, mlir::Region &scoreMod,
               mlir::Region &maskMod,
               llvm::function_ref<bool(unsigned)> isCapture);

struct ReferenceResult {
  std::vector<double> output;    // [B, Hq, M, Dv]
  std::vector<double> logsumexp; // [B, Hq, M]
  /// (b, h, q, kv) elements that no mask removes: the useful work.
  int64_t visiblePairs = 0;
  /// The blocks of `blockSizes` that hold visible elements.
  BlockPattern blocks;
  /// With `emulate` f16 or bf16: the float32 kernel rounded as attn's
  /// (attn_runtime::ReferenceResult::emulated).
  std::vector<double> emulated;
};

/// q, k, v hold the (rounded) inputs the kernel saw; `arguments` are the
/// function's arguments by number. Fails with the region and the
/// (b, h, q, kv) position where a region's result is undefined.
llvm::Expected<ReferenceResult>
referenceAttention(mlir::attn::AttentionOp op, const RegionPrograms &programs,
                   const std::vector<const HostTensor *> &arguments,
                   const HostTensor &q, const HostTensor &k,
                   const HostTensor &v, std::pair<int64_t, int64_t> blockSizes,
                   attn_runtime::ElementKind emulate);

} // namespace attn_run

#endif // ATTN_RUN_REFERENCE_H
