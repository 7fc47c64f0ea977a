//===- TargetInfo.h - the NVIDIA chips attn compiles for --------*- C++ -*-===//
//
// One table of the limits the passes size kernels by, so a chip's numbers
// live in one place.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TARGET_NVVM_TARGETINFO_H
#define ATTNDIALECT_TARGET_NVVM_TARGETINFO_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::attn::nvvm {

/// Threads per block on every chip from sm_75 on.
constexpr int64_t kMaxThreadsPerBlock = 1024;

struct TargetInfo {
  /// The chip name LLVM's NVPTX backend knows, e.g. "sm_90a".
  llvm::StringRef chip;
  /// The compute capability times ten (90 for sm_90 and sm_90a).
  unsigned smVersion;
  /// Shared memory an SM gives its blocks, and one block at most (the CUDA
  /// programming guide's compute capability table): the softmax kernel
  /// sizes split rows' tiles by the first, attention tiles fit the second.
  int64_t sharedMemoryPerSm;
  int64_t sharedMemoryPerBlock;

  /// cp.async (sm_80 and newer).
  bool hasAsyncCopy() const { return smVersion >= 80; }
  /// Hopper's wgmma, which only sm_90a's architecture-specific features
  /// include.
  bool hasWarpgroupMma() const { return chip == "sm_90a"; }
};

/// Every chip LLVM 22's NVPTX backend knows from sm_75 on: a name outside
/// this list (sm_80a, sm_91) would pass a pattern check and then abort
/// instruction selection.
llvm::ArrayRef<TargetInfo> knownTargets();

/// The chip named `chip`, or null.
const TargetInfo *lookupTarget(llvm::StringRef chip);

/// "sm_75, sm_80, ...", for diagnostics.
std::string knownTargetNames();

} // namespace mlir::attn::nvvm

#endif // ATTNDIALECT_TARGET_NVVM_TARGETINFO_H
