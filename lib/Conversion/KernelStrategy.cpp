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
