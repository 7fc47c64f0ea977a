//===- Stages.h - named, stoppable stages of the attn pipelines -*- C++ -*-===//

#ifndef ATTN_LIB_PIPELINES_STAGES_H
#define ATTN_LIB_PIPELINES_STAGES_H

#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include <string>

namespace mlir::attn {

/// A stage of a pipeline: its name (for `until=`) and what adds its passes.
template <typename AddStage> struct Stage {
  StringRef name;
  AddStage add;
};

/// The index of stage `until` among `stages`; an error through
/// `errorHandler` that lists the stages when there is none.
template <typename AddStage>
FailureOr<int>
findStage(StringRef pipeline, ArrayRef<Stage<AddStage>> stages, StringRef until,
          function_ref<LogicalResult(const Twine &)> errorHandler) {
  for (auto [index, stage] : llvm::enumerate(stages))
    if (stage.name == until)
      return static_cast<int>(index);
  std::string expected;
  for (auto [index, stage] : llvm::enumerate(stages))
    expected += (index == 0                   ? ""
                 : index + 1 == stages.size() ? " or "
                                              : ", ") +
                stage.name.str();
  (void)errorHandler(pipeline + ": unknown stage '" + until + "' (expected " +
                     expected + ")");
  return failure();
}

/// The canonicalizer of every stage, visiting ops bottom-up. The
/// tensor-core kernels' loops carry a hundred fragments as iter_args, and
/// in MLIR 22's default top-down order the region-branch patterns compare
/// those loops' operand mappings again after each change inside them:
/// twenty times the work for the same result.
inline std::unique_ptr<Pass> createStageCanonicalizer() {
  GreedyRewriteConfig config;
  config.setUseTopDownTraversal(false);
  return createCanonicalizerPass(config);
}

/// The decompositions both pipelines share: every attn op but the tiles'
/// loops becomes linalg on tensors, and attn-check-decomposed fails on any
/// op left.
inline void addDecompositions(OpPassManager &pm,
                              const DecomposeOptions &options) {
  pm.addPass(createDecompose(options));
  pm.addPass(createStageCanonicalizer());
  pm.addPass(createCSEPass());
  pm.addPass(createCheckDecomposed());
}

} // namespace mlir::attn

#endif // ATTN_LIB_PIPELINES_STAGES_H
