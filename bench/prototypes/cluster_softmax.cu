// A CUDA prototype of split rows held by a thread-block cluster: each CTA
// copies its tile of the row into shared memory (cp.async), reduces it,
// and the cluster's CTAs read each other's (max, sum) through distributed
// shared memory after a cluster barrier; rows longer than a cluster's
// tiles exchange the clusters' (max, sum) through global memory (ticket
// order). Rows are assumed aligned (N a multiple of the vector width).
//   nvcc -O3 -arch=sm_90a -std=c++17 cluster_softmax.cu -o cs && ./cs
#include "common.cuh"

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// ws: [ticket][arrived rows][departed rows][partials rows*K*2]
template <typename T, int THREADS, int VECS>
__global__ void __launch_bounds__(THREADS)
clusterSoftmax(const T *in, T *out, int rows, long n, int clustersPerRow, unsigned *ws) {
  constexpr int W = 16 / sizeof(T);
  constexpr int TILE = THREADS * VECS * W;
  extern __shared__ uint4 smem[];
  T *tile = reinterpret_cast<T *>(smem);
  __shared__ MS scratch[THREADS / 32];
  __shared__ MS mine;
  __shared__ unsigned ticketSlot;
  cg::cluster_group cluster = cg::this_cluster();
  int cs = cluster.num_blocks(), rank = cluster.block_rank();
  int K = clustersPerRow;
  unsigned *ticket = ws, *arrived = ws + 1, *departed = ws + 1 + rows;
  float *partial = reinterpret_cast<float *>(ws + 1 + 2 * rows);
  int clusterIndex = blockIdx.x / cs;
  if (K > 1) {
    // The cluster's rank 0 takes a ticket; the others read it through DSMEM.
    if (rank == 0 && threadIdx.x == 0) {
      unsigned t = atomicAdd(ticket, 1u);
      ticketSlot = t;
      if (t == gridDim.x / cs - 1) *ticket = 0;
    }
    cluster.sync();
    clusterIndex = *cluster.map_shared_rank(&ticketSlot, 0);
  }
  int row = clusterIndex / K, part = clusterIndex % K;
  long start = ((long)part * cs + rank) * TILE;
  const T *src = in + row * n + start;
  long left = n - start;
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    int idx = (k * THREADS + threadIdx.x) * W;
    if (idx < left) cpAsync16(tile + idx, src + idx);
  }
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_group 0;");
  MS v{-INFINITY, 0.f};
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    int idx = (k * THREADS + threadIdx.x) * W;
    if (idx < left) v = foldVector<T>(v, *reinterpret_cast<uint4 *>(tile + idx));
  }
  MS blk = blockReduce<THREADS>(v, scratch);
  if (threadIdx.x == 0) mine = blk;
  cluster.sync();
  MS tot{-INFINITY, 0.f};
  if (threadIdx.x < cs) tot = *cluster.map_shared_rank(&mine, threadIdx.x);
  // every rank read: the second barrier (before exit) is split
  asm volatile("barrier.cluster.arrive.release.aligned;");
  for (int o = 16; o > 0; o >>= 1)
    tot = mergeMS(tot, MS{__shfl_xor_sync(~0u, tot.m, o), __shfl_xor_sync(~0u, tot.s, o)});
  unsigned left0 = 0;
  if (K > 1) {
    __shared__ MS total;
    if (threadIdx.x == 0) {
      if (rank == 0) {
        partial[2 * clusterIndex] = tot.m;
        partial[2 * clusterIndex + 1] = tot.s;
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(arrived + row) : "memory");
      }
      unsigned c;
      while (true) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(c) : "l"(arrived + row) : "memory");
        if (c >= (unsigned)K) break;
        __nanosleep(32);
      }
      MS t{-INFINITY, 0.f};
      for (int i = 0; i < K; ++i)
        t = mergeMS(t, MS{partial[2 * (row * K + i)], partial[2 * (row * K + i) + 1]});
      total = t;
      if (rank == 0) left0 = atomicAdd(departed + row, 1u);
    }
    __syncthreads();
    tot = total;
  }
  float sh = tot.m == -INFINITY ? 0.f : tot.m;
  float inv = tot.s > 0 ? 1.f / tot.s : 0.f;
  T *dst = out + row * n + start;
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    int idx = (k * THREADS + threadIdx.x) * W;
    if (idx < left)
      *reinterpret_cast<uint4 *>(dst + idx) =
          softmaxVector<T>(*reinterpret_cast<uint4 *>(tile + idx), sh, inv);
  }
  // Departures: the last of the row's clusters (rank 0 of each counts,
  // after every rank of it has read the partials... ranks read partials
  // independently, so count every CTA instead).
  if (K > 1 && threadIdx.x == 0 && rank != 0) left0 = atomicAdd(departed + row, 1u);
  if (K > 1 && threadIdx.x == 0 && left0 == (unsigned)(K * cs) - 1) {
    arrived[row] = 0;
    departed[row] = 0;
  }
  asm volatile("barrier.cluster.wait.acquire.aligned;");
}

template <typename T, int THREADS, int VECS>
void run(const char *dtype, long n, int cs, Timer &timer, float copyGBs, float *src32) {
  constexpr int W = 16 / sizeof(T);
  constexpr int TILE = THREADS * VECS * W;
  long total = 1L << 26;
  int rows = total / n;
  long elems = rows * n;
  T *in, *out; unsigned *ws;
  CHECK(cudaMalloc(&in, elems * sizeof(T))); CHECK(cudaMalloc(&out, elems * sizeof(T)));
  convert<T><<<1024, 256>>>(src32, in, elems);
  int tiles = (n + TILE - 1) / TILE;
  cs = std::min(cs, tiles);
  int K = (tiles + cs - 1) / cs;
  auto kernel = clusterSoftmax<T, THREADS, VECS>;
  int smem = TILE * sizeof(T);
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if (cs > 8) CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int grid = rows * K * cs;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid; config.blockDim = THREADS; config.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cs; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
  config.attrs = attr; config.numAttrs = 1;
  int clusters = 0;
  CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  size_t wsBytes = (1 + 2 * rows + 2L * rows * K) * 4;
  CHECK(cudaMalloc(&ws, wsBytes)); CHECK(cudaMemset(ws, 0, wsBytes));
  float ms = timer.ms([&] { CHECK(cudaLaunchKernelEx(&config, kernel, (const T *)in, out, rows, n, K, ws)); });
  double worst = worstRowError(in, out, rows, n, 1e-6 / n);
  std::vector<unsigned> w(1 + 2 * rows);
  CHECK(cudaMemcpy(w.data(), ws, w.size() * 4, cudaMemcpyDeviceToHost));
  bool zero = std::all_of(w.begin(), w.end(), [](unsigned x) { return x == 0; });
  double gbs = 2.0 * elems * sizeof(T) / (ms * 1e6);
  printf("%s N=%-8ld threads=%d vecs=%d tileKiB=%d cluster=%d K=%d activeClusters=%d: %.1f us %.0f GB/s %.2f of copy, err %.1e%s\n",
         dtype, n, THREADS, VECS, smem / 1024, cs, K, clusters, ms * 1e3, gbs, gbs / copyGBs, worst, zero ? "" : " WORKSPACE NOT ZERO");
  cudaFree(in); cudaFree(out); cudaFree(ws);
}

int main() {
  Timer timer;
  long total = 1L << 26;
  float *src32; CHECK(cudaMalloc(&src32, total * 4));
  fill<<<1024, 256>>>(src32, total, 7);
  void *a, *b; CHECK(cudaMalloc(&a, total * 4)); CHECK(cudaMalloc(&b, total * 4));
  float copy32 = 2.0 * total * 4 / (timer.ms([&] { cudaMemcpyAsync(b, a, total * 4, cudaMemcpyDeviceToDevice); }) * 1e6);
  float copy16 = 2.0 * total * 2 / (timer.ms([&] { cudaMemcpyAsync(b, a, total * 2, cudaMemcpyDeviceToDevice); }) * 1e6);
  printf("copy f32 %.0f GB/s, f16-size %.0f GB/s\n", copy32, copy16);
  cudaFree(a); cudaFree(b);
  for (long n : {65536L, 100000L, 262144L, 1048576L}) {
    for (int cs : {4, 8, 16}) {
      run<float, 256, 16>("f32", n, cs, timer, copy32, src32);
      run<float, 256, 8>("f32", n, cs, timer, copy32, src32);
      run<float, 512, 16>("f32", n, cs, timer, copy32, src32);
      run<__half, 256, 8>("f16", n, cs, timer, copy16, src32);
      run<__half, 256, 16>("f16", n, cs, timer, copy16, src32);
      run<__half, 512, 8>("f16", n, cs, timer, copy16, src32);
    }
  }
}
