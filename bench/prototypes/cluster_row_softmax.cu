// A CUDA prototype to decide how a split row's blocks should exchange their
// (max, sum): the kernel of attn-softmax-to-gpu's split rows (256 threads,
// tiles of up to 16 vectors per thread evened out over the row, cp.async
// in four groups reduced as they land), with the exchange either through
// global memory (release reduction, acquiring poll, gather: what the pass
// emits) or inside a thread-block cluster that holds the whole row
// (partials in shared memory, read through distributed shared memory after
// a cluster barrier). Rows are assumed 16-byte aligned (N a multiple of
// the vector width).
//   nvcc -O3 -arch=sm_90a -std=c++17 cluster_row_softmax.cu -o crs && ./crs
#include "common.cuh"

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

constexpr int kThreads = 256, kMaxVectors = 16, kGroups = 4;

// ws (global exchange): [arrived rows][departed rows][partials rows*splits*2]
template <typename T, bool kCluster>
__global__ void __launch_bounds__(kThreads)
rowSoftmax(const T *in, T *out, int rows, long n, int splits, int used, unsigned *ws) {
  constexpr int W = 16 / sizeof(T);
  extern __shared__ uint4 smem[];
  T *tile = reinterpret_cast<T *>(smem);
  __shared__ MS scratch[kThreads / 32];
  __shared__ MS mine;
  int row = blockIdx.x / splits, split = blockIdx.x % splits;
  long start = (long)split * kThreads * used * W;
  const T *src = in + row * n + start;
  long left = n - start;
  // Copies in kGroups commit groups, the first pass waiting for one at a time.
#pragma unroll
  for (int k = 0; k < kMaxVectors; ++k) {
    if (k > 0 && k * kGroups / kMaxVectors != (k - 1) * kGroups / kMaxVectors)
      asm volatile("cp.async.commit_group;");
    int idx = (k * kThreads + threadIdx.x) * W;
    if (k < used && idx < left) cpAsync16(tile + idx, src + idx);
  }
  asm volatile("cp.async.commit_group;");
  MS v{-INFINITY, 0.f};
#pragma unroll
  for (int k = 0; k < kMaxVectors; ++k) {
    int g = k * kGroups / kMaxVectors;
    if (k == 0 || g != (k - 1) * kGroups / kMaxVectors) {
      if (g == 0) asm volatile("cp.async.wait_group 3;");
      if (g == 1) asm volatile("cp.async.wait_group 2;");
      if (g == 2) asm volatile("cp.async.wait_group 1;");
      if (g == 3) asm volatile("cp.async.wait_group 0;");
    }
    int idx = (k * kThreads + threadIdx.x) * W;
    if (k < used && idx < left) v = foldVector<T>(v, *reinterpret_cast<uint4 *>(tile + idx));
  }
  MS blk = blockReduce<kThreads>(v, scratch);
  MS tot{-INFINITY, 0.f};
  unsigned departedBefore = 0;
  unsigned *arrived = ws, *departed = ws + rows;
  float *partial = reinterpret_cast<float *>(ws + 2 * rows);
  if constexpr (kCluster) {
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mine = blk;
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
    // Every warp merges the cluster's partials (lane j reads CTA j's).
    int lane = threadIdx.x % 32;
    if (lane < splits) tot = *cluster.map_shared_rank(&mine, lane);
    // Done reading the others' shared memory: they may exit after the
    // matching wait at the end.
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  } else {
    if (threadIdx.x == 0) {
      partial[2 * blockIdx.x] = blk.m;
      partial[2 * blockIdx.x + 1] = blk.s;
      arriveAndWait(arrived + row, splits);
    }
    __syncthreads();
    int lane = threadIdx.x % 32;
    if (lane < splits)
      tot = MS{partial[2 * (row * splits + lane)], partial[2 * (row * splits + lane) + 1]};
  }
  for (int o = 16; o > 0; o >>= 1)
    tot = mergeMS(tot, MS{__shfl_xor_sync(~0u, tot.m, o), __shfl_xor_sync(~0u, tot.s, o)});
  if constexpr (!kCluster) {
    __syncthreads();
    if (threadIdx.x == 0) departedBefore = atomicAdd(departed + row, 1u);
  }
  float sh = tot.m == -INFINITY ? 0.f : tot.m;
  float inv = tot.s > 0 ? 1.f / tot.s : 0.f;
  T *dst = out + row * n + start;
#pragma unroll
  for (int k = 0; k < kMaxVectors; ++k) {
    int idx = (k * kThreads + threadIdx.x) * W;
    if (k < used && idx < left)
      *reinterpret_cast<uint4 *>(dst + idx) =
          softmaxVector<T>(*reinterpret_cast<uint4 *>(tile + idx), sh, inv);
  }
  if constexpr (kCluster) {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
  } else if (threadIdx.x == 0 && departedBefore == (unsigned)splits - 1) {
    arrived[row] = departed[row] = 0;
  }
}

template <typename T, bool kCluster>
void run(const char *dtype, long n, Timer &timer, float copyGBs, float *src32, long total) {
  constexpr int W = 16 / sizeof(T);
  int rows = total / n;
  long elems = rows * n;
  T *in, *out; unsigned *ws;
  CHECK(cudaMalloc(&in, elems * sizeof(T))); CHECK(cudaMalloc(&out, elems * sizeof(T)));
  convert<T><<<1024, 256>>>(src32, in, elems);
  long vectors = (n + W - 1) / W;
  int splits = (vectors + kThreads * kMaxVectors - 1) / (kThreads * kMaxVectors);
  int used = (vectors + (long)splits * kThreads - 1) / ((long)splits * kThreads);
  if (kCluster && splits > 16) { printf("%s N=%ld: %d splits, more than a cluster\n", dtype, n, splits); return; }
  auto kernel = rowSoftmax<T, kCluster>;
  int smem = kThreads * used * 16;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if (kCluster && splits > 8) CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int grid = rows * splits;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid; config.blockDim = kThreads; config.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = kCluster ? splits : 1; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
  config.attrs = attr; config.numAttrs = 1;
  int clusters = 0;
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  size_t wsBytes = (2 * rows + 2L * rows * splits) * 4;
  CHECK(cudaMalloc(&ws, wsBytes)); CHECK(cudaMemset(ws, 0, wsBytes));
  float ms = timer.ms([&] { CHECK(cudaLaunchKernelEx(&config, kernel, (const T *)in, out, rows, n, splits, used, ws)); });
  // f16 entries under its normal range (6e-5) are not compared.
  double worst = worstRowError(in, out, rows, n, sizeof(T) == 2 ? 1e-4 : 1e-6 / n);
  std::vector<unsigned> w(2 * rows);
  CHECK(cudaMemcpy(w.data(), ws, w.size() * 4, cudaMemcpyDeviceToHost));
  bool zero = std::all_of(w.begin(), w.end(), [](unsigned x) { return x == 0; });
  double gbs = 2.0 * elems * sizeof(T) / (ms * 1e6);
  printf("%s N=%-8ld %-7s splits=%-2d vectors=%-2d active=%-4d %7.1f us %5.0f GB/s %.2f of copy, err %.1e%s\n",
         dtype, n, kCluster ? "cluster" : "global", splits, used, clusters * (kCluster ? splits : 1), ms * 1e3, gbs,
         gbs / copyGBs, worst, zero ? "" : " WORKSPACE NOT ZERO");
  cudaFree(in); cudaFree(out); cudaFree(ws);
}

int main(int argc, char **argv) {
  Timer timer;
  long total = 1L << (argc > 1 ? atoi(argv[1]) : 26);
  float *src32; CHECK(cudaMalloc(&src32, total * 4));
  fill<<<1024, 256>>>(src32, total, 7);
  void *a, *b; CHECK(cudaMalloc(&a, total * 4)); CHECK(cudaMalloc(&b, total * 4));
  float copy32 = 2.0 * total * 4 / (timer.ms([&] { cudaMemcpyAsync(b, a, total * 4, cudaMemcpyDeviceToDevice); }) * 1e6);
  float copy16 = 2.0 * total * 2 / (timer.ms([&] { cudaMemcpyAsync(b, a, total * 2, cudaMemcpyDeviceToDevice); }) * 1e6);
  printf("copy f32 %.0f GB/s, f16-size %.0f GB/s (2^%d elements)\n", copy32, copy16, __builtin_ctzl(total));
  cudaFree(a); cudaFree(b);
  for (long n : {65536L, 100000L, 131072L, 200000L, 229376L, 262144L, 400000L, 524288L}) {
    run<__half, false>("f16", n, timer, copy16, src32, total);
    run<__half, true>("f16", n, timer, copy16, src32, total);
    run<float, false>("f32", n, timer, copy32, src32, total);
    run<float, true>("f32", n, timer, copy32, src32, total);
  }
}
