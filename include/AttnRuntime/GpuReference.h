//===- GpuReference.h - float64 attention on the GPU, for checking -*- C++ -*-//
//
// The reference for shapes too large for the CPU's float64 reference: a
// plain CUDA C kernel (lib/Runtime/ReferenceAttention.cu, compiled to PTX by
// nvcc when the runtime is built and embedded in it), written independently
// of the compiler it checks.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_GPUREFERENCE_H
#define ATTNRUNTIME_GPUREFERENCE_H

#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/HostTensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attn_runtime {

struct ReferenceProblem {
  int64_t batch, hq, hkv, m, n, d, dv;
  ElementKind kind; // of Q, K and V: f32, f16 or bf16
  double scale;
  bool causal = false;
  int64_t window = 0; // > 0: kv <= q and q - kv <= W
};

/// Whether this build embeds the reference kernel (nvcc was found).
bool hasGpuReference();

/// Computes attention of the device tensors q, k, v in float64 on the GPU;
/// returns the output [B, Hq, M, Dv] and logsumexp [B, Hq, M] on the host.
bool gpuReferenceAttention(CudaDriver &driver, const ReferenceProblem &problem,
                           uint64_t q, uint64_t k, uint64_t v,
                           std::vector<double> &out, std::vector<double> &lse,
                           std::string &error);

} // namespace attn_runtime

#endif // ATTNRUNTIME_GPUREFERENCE_H
