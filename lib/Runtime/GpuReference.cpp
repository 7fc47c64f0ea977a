//===- GpuReference.cpp - float64 attention on the GPU, for checking ------===//

#include "AttnRuntime/GpuReference.h"

#include <cstring>
#include <limits>

#ifdef ATTN_HAS_GPU_REFERENCE
extern const char attnReferenceAttentionPtx[];
#endif

namespace attn_runtime {

bool hasGpuReference() {
#ifdef ATTN_HAS_GPU_REFERENCE
  return true;
#else
  return false;
#endif
}

bool gpuReferenceAttention(CudaDriver &driver, const ReferenceProblem &p,
                           uint64_t q, uint64_t k, uint64_t v,
                           std::vector<double> &out, std::vector<double> &lse,
                           std::string &error) {
#ifndef ATTN_HAS_GPU_REFERENCE
  error = "this runtime has no GPU reference kernel (nvcc was not found when "
          "it was built)";
  return false;
#else
  if (p.d > 256 || p.dv > 256 || p.hkv <= 0 || p.hq % p.hkv != 0) {
    error = "the GPU reference takes D, Dv <= 256 and Hq a multiple of Hkv";
    return false;
  }
  Binary binary;
  binary.name = "attn_reference";
  binary.format = "ptx";
  binary.target = "compute_80";
  binary.image = attnReferenceAttentionPtx;
  void *module = nullptr, *function = nullptr;
  if (!driver.loadModule(binary, module, error) ||
      !driver.getFunction(module, "attn_reference_attention", function, error))
    return false;

  // Sizes come from the command line: multiply without overflow.
  int64_t rows = 0, outElements = 0;
  if (p.batch < 0 || p.hq < 0 || p.m < 0 || p.dv < 0 ||
      __builtin_mul_overflow(p.batch, p.hq, &rows) ||
      __builtin_mul_overflow(rows, p.m, &rows) ||
      __builtin_mul_overflow(rows, p.dv, &outElements) ||
      outElements > std::numeric_limits<int64_t>::max() / 8) {
    error = "the GPU reference's output size overflows";
    return false;
  }
  size_t outBytes = outElements * sizeof(double),
         lseBytes = rows * sizeof(double);
  uint64_t outAddress = 0, lseAddress = 0;
  if (!driver.allocate(outBytes, outAddress, error) ||
      !driver.allocate(lseBytes, lseAddress, error)) {
    if (outAddress)
      driver.free(outAddress);
    error = "the GPU reference cannot allocate its float64 output: " + error;
    return false;
  }
  auto i64 = [](int64_t value) {
    Param param;
    param.kind = Param::Kind::I64;
    param.i64 = value;
    return param;
  };
  auto pointer = [](uint64_t address) {
    Param param;
    param.kind = Param::Kind::Pointer;
    param.pointer = address;
    return param;
  };
  int64_t scaleBits;
  std::memcpy(&scaleBits, &p.scale, sizeof(scaleBits));
  int64_t dtype = p.kind == ElementKind::F32   ? 0
                  : p.kind == ElementKind::F16 ? 1
                                               : 2;
  std::vector<Param> params = {pointer(q),
                               pointer(k),
                               pointer(v),
                               pointer(outAddress),
                               pointer(lseAddress),
                               i64(p.batch),
                               i64(p.hq),
                               i64(p.hkv),
                               i64(p.m),
                               i64(p.n),
                               i64(p.d),
                               i64(p.dv),
                               i64(dtype),
                               i64(p.causal),
                               i64(p.window),
                               i64(scaleBits)};
  // One warp per row, four rows per block.
  int64_t grid[3] = {(rows + 3) / 4, 1, 1}, block[3] = {128, 1, 1};
  out.resize(rows * p.dv);
  lse.resize(rows);
  bool ok = driver.launch(function, grid, block, 0, params, error) &&
            driver.synchronize(error) &&
            driver.copyToHost(out.data(), outAddress, outBytes, error) &&
            driver.copyToHost(lse.data(), lseAddress, lseBytes, error);
  driver.free(outAddress);
  driver.free(lseAddress);
  return ok;
#endif
}

} // namespace attn_runtime
