//===- Reference.cpp ------------------------------------------------------===//

#include "Reference.h"

#include "AttnDialect/Transforms/RegionProgram.h"
#include "AttnRuntime/Reference.h"

using namespace mlir;
using namespace attn_run;

llvm::Expected<RegionPrograms>
attn_run::regionPrograms(func::FuncOp func, attn::AttentionOp op,
                         llvm::function_ref<bool(unsigned)> isCapture) {
  return regionPrograms(func, op.getScoreMod(), op.getMaskMod(), isCapture);
}

llvm::Expected<RegionPrograms>
attn_run::regionPrograms(func::FuncOp func, Region &scoreMod, Region &maskMod,
                         llvm::function_ref<bool(unsigned)> isCapture) {
  Block *entry = &func.getBody().front();
  auto argumentNumber = [&](Value tensor) -> int64_t {
    auto arg = dyn_cast<BlockArgument>(tensor);
    if (!arg || arg.getOwner() != entry || !isCapture(arg.getArgNumber()))
      return -1;
    return arg.getArgNumber();
  };
  RegionPrograms programs;
  std::pair<Region *, std::optional<attn_runtime::RegionProgram> *> regions[] =
      {{&scoreMod, &programs.scoreMod}, {&maskMod, &programs.maskMod}};
  for (auto [region, program] : regions) {
    if (region->empty())
      continue;
    llvm::Expected<attn_runtime::RegionProgram> translated =
        attn::translateRegion(
            *region, region == &scoreMod ? "score_mod" : "mask_mod",
            argumentNumber);
    if (!translated)
      return translated.takeError();
    *program = std::move(*translated);
  }
  return programs;
}

llvm::Expected<ReferenceResult> attn_run::referenceAttention(
    attn::AttentionOp op, const RegionPrograms &programs,
    const std::vector<const HostTensor *> &arguments, const HostTensor &q,
    const HostTensor &k, const HostTensor &v,
    std::pair<int64_t, int64_t> blockSizes, attn_runtime::ElementKind emulate) {
  ReferenceResult result;
  result.blocks =
      BlockPattern(q.shape()[0], q.shape()[1], q.shape()[2], k.shape()[2],
                   blockSizes.first, blockSizes.second);
  attn_runtime::ReferenceAttention problem;
  problem.q = &q;
  problem.k = &k;
  problem.v = &v;
  problem.scale = op.getScaleValue();
  problem.causal = op.getCausal();
  problem.maskMod = programs.maskMod ? &*programs.maskMod : nullptr;
  problem.scoreMod = programs.scoreMod ? &*programs.scoreMod : nullptr;
  problem.arguments = arguments;
  problem.emulate = emulate;
  problem.visit = [&](int64_t b, int64_t h, int64_t i, int64_t j,
                      bool visible) {
    result.blocks.mark(b, h, i, j, visible);
  };
  attn_runtime::ReferenceResult computed;
  std::string error;
  if (!attn_runtime::referenceAttention(problem, computed, error))
    return llvm::createStringError(error);
  result.output = std::move(computed.output);
  result.logsumexp = std::move(computed.logsumexp);
  result.visiblePairs = computed.visiblePairs;
  result.emulated = std::move(computed.emulated);
  return result;
}
