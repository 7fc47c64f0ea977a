// The GPU reference for attention, for shapes too large for the CPU
// reference: plain float64 arithmetic, two passes over the keys (the row
// maximum, then the exponentials, their sum and the weighted values), no
// tiling and no online softmax: written independently of the compiler under
// test (CUDA C built by nvcc, not MLIR). One warp per query row: lane l owns
// columns l, l + 32, ... of D and Dv; dot products are summed with shuffles.
//
// Inputs are [B, Hq, M, D] / [B, Hkv, N, D] / [B, Hkv, N, Dv] row-major in
// f32, f16 or bf16 (dtype 0, 1, 2); D, Dv <= 256. Outputs are the float64
// output [B, Hq, M, Dv] and natural-log logsumexp [B, Hq, M]. Masks: causal
// keeps kv <= q; a window W > 0 keeps kv <= q and q - kv <= W
// (FlexAttention's sliding window, as attn-run builds it).

#include <cuda_fp16.h>

constexpr int kMaxColumnsPerLane = 8; // 256 / 32

__device__ double loadElement(const void *base, long long index, int dtype) {
  if (dtype == 0)
    return static_cast<const float *>(base)[index];
  unsigned short bits = static_cast<const unsigned short *>(base)[index];
  if (dtype == 1)
    return __half2float(__ushort_as_half(bits));
  return __uint_as_float(static_cast<unsigned>(bits) << 16);
}

__device__ double warpSum(double x) {
  for (int offset = 16; offset > 0; offset /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

extern "C" __global__ void attn_reference_attention(
    const void *q, const void *k, const void *v, double *out, double *lse,
    long long batch, long long hq, long long hkv, long long m, long long n,
    long long d, long long dv, long long dtype, long long causal,
    long long window, long long scaleBits) {
  long long row =
      (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (row >= batch * hq * m)
    return; // whole warps leave together
  double scale = __longlong_as_double(scaleBits);
  long long i = row % m, h = (row / m) % hq, b = row / (m * hq);
  long long kvHead = h / (hq / hkv);
  long long kBase = (b * hkv + kvHead) * n * d;
  long long vBase = (b * hkv + kvHead) * n * dv;
  long long end = causal || window > 0 ? min(n, i + 1) : n;
  long long start = window > 0 ? max(0LL, i - window) : 0;

  double qRow[kMaxColumnsPerLane];
  for (int c = 0; c < kMaxColumnsPerLane; ++c)
    qRow[c] = lane + 32 * c < d ? loadElement(q, row * d + lane + 32 * c, dtype)
                                : 0.0;
  auto score = [&](long long j) {
    double partial = 0;
    for (int c = 0; c < kMaxColumnsPerLane; ++c)
      if (lane + 32 * c < d)
        partial += qRow[c] * loadElement(k, kBase + j * d + lane + 32 * c, dtype);
    return warpSum(partial) * scale;
  };

  double rowMax = -1.0 / 0.0;
  for (long long j = start; j < end; ++j)
    rowMax = fmax(rowMax, score(j));
  double acc[kMaxColumnsPerLane] = {};
  double sum = 0;
  for (long long j = start; j < end; ++j) {
    double p = exp(score(j) - rowMax);
    sum += p;
    for (int c = 0; c < kMaxColumnsPerLane; ++c)
      if (lane + 32 * c < dv)
        acc[c] += p * loadElement(v, vBase + j * dv + lane + 32 * c, dtype);
  }
  for (int c = 0; c < kMaxColumnsPerLane; ++c)
    if (lane + 32 * c < dv)
      out[row * dv + lane + 32 * c] = sum > 0 ? acc[c] / sum : 0.0;
  if (lane == 0)
    lse[row] = sum > 0 ? rowMax + log(sum) : -1.0 / 0.0;
}
