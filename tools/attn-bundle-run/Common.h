//===- Common.h - what attn-bundle-run's checks share -----------*- C++ -*-===//

#ifndef ATTN_BUNDLE_RUN_COMMON_H
#define ATTN_BUNDLE_RUN_COMMON_H

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/HostTensor.h"

#include <cstdint>
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

/// Device buffers of `bytes[i]` bytes for arguments of `shapes`; fails
/// (status 2) naming `names[i]` when the GPU cannot hold one.
std::vector<attn_runtime::Argument>
allocateArguments(attn_runtime::CudaDriver &driver,
                  const std::vector<std::vector<int64_t>> &shapes,
                  const std::vector<int64_t> &bytes,
                  const std::vector<std::string> &names);

} // namespace attn_bundle_run

#endif // ATTN_BUNDLE_RUN_COMMON_H
