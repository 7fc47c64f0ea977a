//===- Registration.cpp - attn's pipelines in the pass registry -----------===//

#include "AttnDialect/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Registers a pipeline whose builder reports invalid options through the
/// registry's error handler (PassPipelineRegistration's builders cannot).
template <typename Options>
void registerPipeline(
    StringRef name, StringRef description,
    LogicalResult (*build)(OpPassManager &, const Options &,
                           function_ref<LogicalResult(const Twine &)>)) {
  registerPassPipeline(
      name, description,
      [build](OpPassManager &pm, StringRef text,
              function_ref<LogicalResult(const Twine &)> errorHandler) {
        Options options;
        if (failed(options.parseFromString(text)))
          return failure();
        return build(pm, options, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)> optionHandler) {
        optionHandler(Options());
      });
}

} // namespace

void mlir::attn::registerAttnPipelines() {
  registerPipeline<CpuPipelineOptions>(
      "attn-lower-to-cpu",
      "Lower attn ops to the LLVM dialect for the host CPU (stop early with "
      "until=tile|decompose|bufferize|loops)",
      buildCpuPipeline);
  registerPipeline<NvvmPipelineOptions>(
      "attn-lower-to-nvvm",
      "Lower attn.attention to a gpu.binary (PTX or cubin) for an NVIDIA "
      "GPU: chip=sm_80|sm_90 (stop early with "
      "until=tile|decompose|bufferize|gpu|nvvm)",
      buildNvvmPipeline);
}
