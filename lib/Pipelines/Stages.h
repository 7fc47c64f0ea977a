//===- Stages.h - named, stoppable stages of the attn pipelines -*- C++ -*-===//

#ifndef ATTN_LIB_PIPELINES_STAGES_H
#define ATTN_LIB_PIPELINES_STAGES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <string>

namespace mlir::attn {

/// The index of stage `until` among `names`; an error through
/// `errorHandler` that lists the stages when there is none.
inline FailureOr<int>
findStage(StringRef pipeline, ArrayRef<StringRef> names, StringRef until,
          function_ref<LogicalResult(const Twine &)> errorHandler) {
  for (auto [index, name] : llvm::enumerate(names))
    if (name == until)
      return static_cast<int>(index);
  std::string expected;
  for (auto [index, name] : llvm::enumerate(names))
    expected += (index == 0                  ? ""
                 : index + 1 == names.size() ? " or "
                                             : ", ") +
                name.str();
  (void)errorHandler(pipeline + ": unknown stage '" + until + "' (expected " +
                     expected + ")");
  return failure();
}

/// Adds the textual pipelines of stages 0 to `last`.
inline LogicalResult addStages(OpPassManager &pm, ArrayRef<std::string> stages,
                               int last) {
  for (int stage = 0; stage <= last; ++stage)
    if (failed(parsePassPipeline(stages[stage], pm)))
      return failure();
  return success();
}

} // namespace mlir::attn

#endif // ATTN_LIB_PIPELINES_STAGES_H
