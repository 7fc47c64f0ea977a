//===- Common.h - what attn-bundle-run's checks share -----------*- C++ -*-===//

#ifndef ATTN_BUNDLE_RUN_COMMON_H
#define ATTN_BUNDLE_RUN_COMMON_H

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/HostTensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn_bundle_run {

/// The element kind a bundle names `name` ("f16", "i32", ...).
bool elementKind(const std::string &name, attn_runtime::ElementKind &kind);

/// This machine's memory in bytes (INT64_MAX if unknown).
int64_t physicalMemory();

/// Fails (status 2) if a launch size of `function` that does not depend
/// on the GPU cannot be evaluated for arguments of `shapes`.
void checkLaunchSizes(const attn_runtime::Function &function,
                      const std::vector<std::vector<int64_t>> &shapes);

/// A block-mask list a function may take, by its bundle name
/// (kv_num_blocks, ..., full_q_indices): kv-side lists have a row per
/// q-block, q-side ones a row per kv-block.
struct BlockList {
  bool qSide = false, counts = false, full = false;
  /// The list `name` names, if it names one.
  static std::optional<BlockList> of(const std::string &name);
  /// Its shape for `batch` x `heads` and m x n positions in blocks of
  /// qBlock x kvBlock.
  std::vector<int64_t> shape(int64_t batch, int64_t heads, int64_t m, int64_t n,
                             int64_t qBlock, int64_t kvBlock) const;
  /// Fills `t` (of that shape) so that every block of every line is listed
  /// as partial, which is right for any mask: the kernel evaluates the
  /// mask_mod on each.
  void fillAllPartial(attn_runtime::HostTensor &t, int64_t m, int64_t n,
                      int64_t qBlock, int64_t kvBlock) const;
};

/// Device buffers of `bytes[i]` bytes for arguments of `shapes`; fails
/// (status 2) naming `names[i]` when the GPU cannot hold one.
std::vector<attn_runtime::Argument>
allocateArguments(attn_runtime::CudaDriver &driver,
                  const std::vector<std::vector<int64_t>> &shapes,
                  const std::vector<int64_t> &bytes,
                  const std::vector<std::string> &names);

} // namespace attn_bundle_run

#endif // ATTN_BUNDLE_RUN_COMMON_H
