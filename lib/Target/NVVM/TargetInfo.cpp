//===- TargetInfo.cpp - the NVIDIA chips attn compiles for ----------------===//

#include "AttnDialect/Target/NVVM/TargetInfo.h"

using namespace mlir::attn::nvvm;

namespace {
constexpr int64_t KiB = 1024;
constexpr TargetInfo kTargets[] = {
    {"sm_75", 75, 64 * KiB, 64 * KiB},
    {"sm_80", 80, 164 * KiB, 163 * KiB},
    {"sm_86", 86, 100 * KiB, 99 * KiB},
    {"sm_87", 87, 164 * KiB, 163 * KiB},
    {"sm_89", 89, 100 * KiB, 99 * KiB},
    {"sm_90", 90, 228 * KiB, 227 * KiB},
    {"sm_90a", 90, 228 * KiB, 227 * KiB},
    {"sm_100", 100, 228 * KiB, 227 * KiB},
    {"sm_100a", 100, 228 * KiB, 227 * KiB},
    {"sm_120", 120, 100 * KiB, 99 * KiB},
    {"sm_120a", 120, 100 * KiB, 99 * KiB},
};
} // namespace

llvm::ArrayRef<TargetInfo> mlir::attn::nvvm::knownTargets() { return kTargets; }

const TargetInfo *mlir::attn::nvvm::lookupTarget(llvm::StringRef chip) {
  for (const TargetInfo &target : kTargets)
    if (target.chip == chip)
      return &target;
  return nullptr;
}

std::string mlir::attn::nvvm::knownTargetNames() {
  std::string list;
  for (const TargetInfo &target : kTargets)
    list += (list.empty() ? "" : ", ") + target.chip.str();
  return list;
}
