//===- KernelStrategy.cpp - names of the attention kernels ----------------===//

#include "AttnDialect/Conversion/KernelStrategy.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlir::attn;

llvm::StringRef mlir::attn::stringifyKernelStrategy(KernelStrategy strategy) {
  switch (strategy) {
  case KernelStrategy::Auto:
    return "auto";
  case KernelStrategy::Simt:
    return "simt";
  case KernelStrategy::MmaSync:
    return "mma-sync";
  case KernelStrategy::Wgmma:
    return "wgmma";
  case KernelStrategy::WgmmaWs:
    return "wgmma-ws";
  }
  llvm_unreachable("unknown kernel strategy");
}

std::optional<KernelStrategy>
mlir::attn::parseKernelStrategy(llvm::StringRef name) {
  for (int i = 0; i <= static_cast<int>(KernelStrategy::WgmmaWs); ++i)
    if (stringifyKernelStrategy(static_cast<KernelStrategy>(i)) == name)
      return static_cast<KernelStrategy>(i);
  return std::nullopt;
}
