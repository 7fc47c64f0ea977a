// A CUDA prototype of the split-row softmax schedule, to measure a design
// on the GPU before lowering it in attn-softmax-to-gpu: a persistent grid
// (resident blocks only), each block taking items (row, split) in blockIdx
// order, its next tile copied (cp.async) into a second buffer while it
// reduces the current one, waits for the row's other blocks and writes.
// Rows are assumed aligned (N a multiple of the vector width).
//   nvcc -O3 -arch=sm_90 -std=c++17 persistent_softmax.cu -o ps && ./ps
#include "common.cuh"

__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void waitGroup() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

// The row's (max, sum) from this block's partial `v` (per thread): the
// block's is published as item `it` of the row, the row's other splits are
// waited for and merged; thread 0 counts the block out (*left0: the row's
// departures before it).
template <int THREADS>
__device__ MS mergeRow(MS v, MS *scratch, float *partial, unsigned *arrived,
                       unsigned *departed, int it, int row, int splits,
                       unsigned *left0) {
  MS blk = blockReduce<THREADS>(v, scratch);
  if (threadIdx.x == 0) {
    partial[2 * it] = blk.m;
    partial[2 * it + 1] = blk.s;
    arriveAndWait(arrived + row, splits);
  }
  __syncthreads();
  MS tot{-INFINITY, 0.f};
  for (int i = threadIdx.x; i < splits; i += THREADS)
    tot = mergeMS(tot, MS{partial[2 * (row * splits + i)], partial[2 * (row * splits + i) + 1]});
  tot = blockReduce<THREADS>(tot, scratch);
  if (threadIdx.x == 0) *left0 = atomicAdd(departed + row, 1u);
  return tot;
}

// ws: [arrived rows][departed rows][partials items*2]
template <typename T, int THREADS, int VECS, int DEPTH>
__global__ void __launch_bounds__(THREADS)
persistent(const T *in, T *out, int rows, long n, int splits, unsigned *ws) {
  constexpr int W = 16 / sizeof(T);
  constexpr int TILE = THREADS * VECS * W;
  extern __shared__ uint4 smem[];
  __shared__ MS scratch[THREADS / 32];
  T *buf = reinterpret_cast<T *>(smem);
  int items = rows * splits;
  int G = gridDim.x;
  unsigned *arrived = ws, *departed = ws + rows;
  float *partial = reinterpret_cast<float *>(ws + 2 * rows);
  auto issue = [&](int it, int slot) {
    if (it < items) {
      int row = it / splits, s = it % splits;
      const T *src = in + row * n + (long)s * TILE;
      long left = n - (long)s * TILE;
      T *dst = buf + slot * TILE;
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        int idx = (k * THREADS + threadIdx.x) * W;
        if (idx < left) cpAsync16(dst + idx, src + idx);
      }
    }
    commit();
  };
  for (int d = 0; d < DEPTH - 1; ++d) issue(blockIdx.x + d * G, d);
  int slot = 0;
  for (int it = blockIdx.x; it < items; it += G) {
    issue(it + (DEPTH - 1) * G, (slot + DEPTH - 1) % DEPTH);
    waitGroup<DEPTH - 1>();
    int row = it / splits, s = it % splits;
    long left = n - (long)s * TILE;
    T *tile = buf + slot * TILE;
    MS v{-INFINITY, 0.f};
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      int idx = (k * THREADS + threadIdx.x) * W;
      if (idx < left) v = foldVector<T>(v, *reinterpret_cast<uint4 *>(tile + idx));
    }
    __shared__ unsigned left0;
    MS tot = mergeRow<THREADS>(v, scratch, partial, arrived, departed, it, row,
                               splits, &left0);
    float sh = tot.m == -INFINITY ? 0.f : tot.m;
    float inv = tot.s > 0 ? 1.f / tot.s : 0.f;
    T *dst = out + row * n + (long)s * TILE;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      int idx = (k * THREADS + threadIdx.x) * W;
      if (idx < left)
        *reinterpret_cast<uint4 *>(dst + idx) =
            softmaxVector<T>(*reinterpret_cast<uint4 *>(tile + idx), sh, inv);
    }
    __syncthreads();  // the tile's slot is refilled next-but-one item
    if (threadIdx.x == 0 && left0 == (unsigned)splits - 1) {
      arrived[row] = 0;
      departed[row] = 0;
    }
    slot = (slot + 1) % DEPTH;
  }
  waitGroup<0>();
}


// The two-sweep schedule: a block sweeps its slice once for (max, sum),
// exchanges them with its row's other blocks (ticket order, as the MLIR
// kernel), then reads the slice again, from L2 if the hint keeps it there,
// and writes it. No shared memory held while waiting: more blocks per SM.
template <typename T, int THREADS, int VECS, int ITERS, bool HINT>
__global__ void __launch_bounds__(THREADS)
twoSweeps(const T *in, T *out, int rows, long n, int splits, unsigned *ws) {
  constexpr int W = 16 / sizeof(T);
  constexpr int CHUNK = THREADS * VECS * W;
  constexpr int SLICE = CHUNK * ITERS;
  __shared__ MS scratch[THREADS / 32];
  __shared__ unsigned ticketSlot, left0;
  unsigned *ticket = ws, *arrived = ws + 1, *departed = ws + 1 + rows;
  float *partial = reinterpret_cast<float *>(ws + 1 + 2 * rows);
  if (threadIdx.x == 0) {
    unsigned t = atomicAdd(ticket, 1u);
    ticketSlot = t;
    if (t == gridDim.x - 1) *ticket = 0;
  }
  __syncthreads();
  int it = ticketSlot;
  int row = it / splits, s = it % splits;
  const T *src = in + row * n + (long)s * SLICE;
  T *dst = out + row * n + (long)s * SLICE;
  long left = n - (long)s * SLICE;
  uint64_t keep, drop;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(drop));
  auto load = [&](const T *p, uint64_t policy) {
    uint4 r;
    if (HINT)
      asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                   : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p), "l"(policy));
    else
      r = *reinterpret_cast<const uint4 *>(p);
    return r;
  };
  MS v{-INFINITY, 0.f};
  for (int c = 0; c < ITERS; ++c) {
    uint4 raw[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      int idx = c * CHUNK + (k * THREADS + threadIdx.x) * W;
      if (idx < left) raw[k] = load(src + idx, keep);
      else raw[k] = make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
    }
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      int idx = c * CHUNK + (k * THREADS + threadIdx.x) * W;
      if (idx < left) v = foldVector<T>(v, raw[k]);
    }
  }
  MS tot = mergeRow<THREADS>(v, scratch, partial, arrived, departed, it, row,
                             splits, &left0);
  float sh = tot.m == -INFINITY ? 0.f : tot.m;
  float inv = tot.s > 0 ? 1.f / tot.s : 0.f;
  for (int c = 0; c < ITERS; ++c) {
    uint4 raw[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      int idx = c * CHUNK + (k * THREADS + threadIdx.x) * W;
      if (idx < left) raw[k] = load(src + idx, drop);
    }
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      int idx = c * CHUNK + (k * THREADS + threadIdx.x) * W;
      if (idx >= left) continue;
      uint4 o = softmaxVector<T>(raw[k], sh, inv);
      if (HINT)
        asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;"
                     ::"l"(dst + idx), "r"(o.x), "r"(o.y), "r"(o.z), "r"(o.w), "l"(drop) : "memory");
      else
        *reinterpret_cast<uint4 *>(dst + idx) = o;
    }
  }
  if (threadIdx.x == 0 && left0 == (unsigned)splits - 1) {
    arrived[row] = 0;
    departed[row] = 0;
  }
}

template <typename T, int THREADS, int VECS, int DEPTH, int ITERS = 0, bool HINT = false>
void run(const char *dtype, long n, Timer &timer, float copyGBs, float *src32) {
  constexpr int W = 16 / sizeof(T);
  constexpr int TILE = THREADS * VECS * W * (ITERS ? ITERS : 1);
  long total = 1L << 26;
  int rows = total / n;
  long elems = rows * n;
  T *in, *out; unsigned *ws;
  CHECK(cudaMalloc(&in, elems * sizeof(T))); CHECK(cudaMalloc(&out, elems * sizeof(T)));
  convert<T><<<1024, 256>>>(src32, in, elems);
  int splits = (n + TILE - 1) / TILE;
  auto kernel = ITERS ? twoSweeps<T, THREADS, VECS, ITERS ? ITERS : 1, HINT> : persistent<T, THREADS, VECS, DEPTH>;
  int smem = ITERS ? 0 : DEPTH * TILE * sizeof(T);
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int perSM = 0, sms = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSM, kernel, THREADS, smem));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int items = rows * splits;
  int grid = ITERS ? items : std::min(items, perSM * sms);
  if (splits > grid) { printf("%s N=%ld: %d splits > grid %d\n", dtype, n, splits, grid); return; }
  size_t wsBytes = (1 + 2 * rows + 2L * items) * 4;
  CHECK(cudaMalloc(&ws, wsBytes)); CHECK(cudaMemset(ws, 0, wsBytes));
  float ms = timer.ms([&] { kernel<<<grid, THREADS, smem>>>(in, out, rows, n, splits, ws); });
  // check a few rows against a double reference
  double worst = worstRowError(in, out, rows, n, -1.0);
  std::vector<unsigned> w(wsBytes / 4);
  CHECK(cudaMemcpy(w.data(), ws, (1 + 2 * rows) * 4, cudaMemcpyDeviceToHost));
  bool zero = std::all_of(w.begin(), w.begin() + 1 + 2 * rows, [](unsigned x) { return x == 0; });
  double gbs = 2.0 * elems * sizeof(T) / (ms * 1e6);
  printf("%s N=%-8ld iters=%d hint=%d threads=%d vecs=%d depth=%d perSM=%d grid=%d splits=%d: %.1f us %.0f GB/s %.2f of copy, err %.1e%s\n",
         dtype, n, ITERS, (int)HINT, THREADS, VECS, DEPTH, perSM, grid, splits, ms * 1e3, gbs, gbs / copyGBs, worst, zero ? "" : " WORKSPACE NOT ZERO");
  cudaFree(in); cudaFree(out); cudaFree(ws);
}

int main() {
  Timer timer;
  long total = 1L << 26;
  float *src32; CHECK(cudaMalloc(&src32, total * 4));
  fill<<<1024, 256>>>(src32, total, 7);
  void *a, *b; CHECK(cudaMalloc(&a, total * 4)); CHECK(cudaMalloc(&b, total * 4));
  float copyMs = timer.ms([&] { cudaMemcpyAsync(b, a, total * 4, cudaMemcpyDeviceToDevice); });
  float copy32 = 2.0 * total * 4 / (copyMs * 1e6);
  float copyMs16 = timer.ms([&] { cudaMemcpyAsync(b, a, total * 2, cudaMemcpyDeviceToDevice); });
  float copy16 = 2.0 * total * 2 / (copyMs16 * 1e6);
  printf("copy f32 %.0f GB/s, f16-size %.0f GB/s\n", copy32, copy16);
  cudaFree(a); cudaFree(b);
  for (long n : {65536L, 100000L, 262144L, 1048576L}) {
    run<float, 256, 4, 0, 4, false>("f32", n, timer, copy32, src32);
    run<float, 256, 4, 0, 4, true>("f32", n, timer, copy32, src32);
    run<float, 256, 4, 0, 8, true>("f32", n, timer, copy32, src32);
    run<float, 256, 8, 0, 2, true>("f32", n, timer, copy32, src32);
    run<float, 256, 8, 0, 4, true>("f32", n, timer, copy32, src32);
    run<float, 512, 4, 0, 4, true>("f32", n, timer, copy32, src32);
    run<__half, 256, 4, 0, 4, false>("f16", n, timer, copy16, src32);
    run<__half, 256, 4, 0, 4, true>("f16", n, timer, copy16, src32);
    run<__half, 256, 4, 0, 8, true>("f16", n, timer, copy16, src32);
    run<__half, 256, 2, 0, 8, true>("f16", n, timer, copy16, src32);
    run<__half, 256, 8, 0, 2, true>("f16", n, timer, copy16, src32);
  }
}
