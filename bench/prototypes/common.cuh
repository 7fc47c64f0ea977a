// Helpers shared by the softmax prototypes in this folder (see their
// headers): cp.async, element conversions, the (max, sum) pair and its
// block reduction, one 16-byte vector's fold and write, the split-row
// wait, input generation, the host reference check and L2-flushed event
// timing.
#pragma once
#include <cuda_fp16.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

constexpr float kLog2E = 1.4426950408889634f;

__device__ __forceinline__ void cpAsync16(void *smem, const void *g) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(g));
}
__device__ float toF(float x) { return x; }
__device__ float toF(__half x) { return __half2float(x); }
template <typename T> __device__ T fromF(float x);
template <> __device__ float fromF<float>(float x) { return x; }
template <> __device__ __half fromF<__half>(float x) { return __float2half(x); }

struct MS { float m, s; };
__device__ MS mergeMS(MS a, MS b) {
  float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.s * exp2f((a.m - m) * kLog2E) + b.s * exp2f((b.m - m) * kLog2E)};
}
template <int THREADS> __device__ MS blockReduce(MS v, MS *scratch) {
  for (int o = 16; o > 0; o >>= 1)
    v = mergeMS(v, MS{__shfl_xor_sync(~0u, v.m, o), __shfl_xor_sync(~0u, v.s, o)});
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  MS r = scratch[0];
  for (int i = 1; i < THREADS / 32; ++i) r = mergeMS(r, scratch[i]);
  __syncthreads();
  return r;
}

// (max, sum) folded with one 16-byte vector of T (online: the vector's max,
// then the running sum rescaled to it).
template <typename T> __device__ MS foldVector(MS v, uint4 raw) {
  constexpr int W = 16 / sizeof(T);
  const T *x = reinterpret_cast<const T *>(&raw);
  float m = v.m;
  for (int i = 0; i < W; ++i) m = fmaxf(m, toF(x[i]));
  float sh = m == -INFINITY ? 0.f : m;
  float l = v.s * exp2f((v.m - sh) * kLog2E);
  for (int i = 0; i < W; ++i) l += exp2f((toF(x[i]) - sh) * kLog2E);
  return {m, l};
}
// exp(x - sh) * inv of one 16-byte vector of T.
template <typename T> __device__ uint4 softmaxVector(uint4 raw, float sh, float inv) {
  constexpr int W = 16 / sizeof(T);
  const T *x = reinterpret_cast<const T *>(&raw);
  uint4 o;
  T *y = reinterpret_cast<T *>(&o);
  for (int i = 0; i < W; ++i) y[i] = fromF<T>(exp2f((toF(x[i]) - sh) * kLog2E) * inv);
  return o;
}

// Counts this block in at `arrived` (a release reduction) and waits until
// `expected` blocks have (acquiring loads): one thread of the block.
__device__ void arriveAndWait(unsigned *arrived, unsigned expected) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(arrived) : "memory");
  unsigned c;
  while (true) {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(c) : "l"(arrived) : "memory");
    if (c >= expected) break;
    __nanosleep(32);
  }
}

__global__ void fill(float *p, long n, unsigned seed) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    p[i] = (h % 20000) / 1000.0f - 10.0f;
  }
}
template <typename T> __global__ void convert(const float *a, T *b, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) b[i] = fromF<T>(a[i]);
}

// The worst relative error of rows 0, rows / 2 and rows - 1 of `out`
// against a double softmax of `in` (device buffers of [rows, n]), over the
// entries whose reference exceeds `smallest`.
template <typename T>
double worstRowError(const T *in, const T *out, int rows, long n, double smallest) {
  std::vector<T> hi(n), ho(n);
  double worst = 0;
  auto f = [](T x) { if constexpr (sizeof(T) == 4) return (double)x; else return (double)__half2float(x); };
  for (int r : {0, rows / 2, rows - 1}) {
    CHECK(cudaMemcpy(hi.data(), in + r * n, n * sizeof(T), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(ho.data(), out + r * n, n * sizeof(T), cudaMemcpyDeviceToHost));
    double m = -INFINITY, s = 0;
    for (long i = 0; i < n; ++i) m = std::max(m, f(hi[i]));
    for (long i = 0; i < n; ++i) s += std::exp(f(hi[i]) - m);
    for (long i = 0; i < n; ++i) {
      double ref = std::exp(f(hi[i]) - m) / s;
      if (ref > smallest) worst = std::max(worst, std::fabs(f(ho[i]) - ref) / std::max(ref, 1e-30));
    }
  }
  return worst;
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

// Median of `reps` launches, each after a 256 MiB memset flushes L2 (as
// triton's do_bench), timed with events.
struct Timer {
  cudaEvent_t a, b; void *flush;
  Timer() { cudaEventCreate(&a); cudaEventCreate(&b); CHECK(cudaMalloc(&flush, 256 << 20)); }
  template <typename F> float ms(F f, int reps = 30) {
    std::vector<float> t;
    f();
    CHECK(cudaDeviceSynchronize());
    for (int r = 0; r < reps; ++r) {
      cudaMemsetAsync(flush, r, 256 << 20);
      cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b);
      float x; cudaEventElapsedTime(&x, a, b); t.push_back(x);
    }
    CHECK(cudaGetLastError());
    return median(t);
  }
};
