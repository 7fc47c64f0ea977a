//===- SoftmaxLaunchPlan.h - how attn.softmax's kernel launches -*- C++ -*-===//
//
// The launch of attn-softmax-to-gpu's kernel as arithmetic on the shape
// (rows, N), the element size, the chip (shared memory per SM, SM count)
// and the pass options: whether a row is one block or is split across
// blocks, threads, vectors per thread, tiles, splits, shared memory and
// workspace. docs/Softmax.md describes the design.
//
// rows, N and the SM count are known only at launch, so the launch-time
// formulas are templates over an arithmetic `Sizes`: the pass instantiates
// them with one that emits index arithmetic, IntegerSizes evaluates them
// for known sizes (unit tests, docs). Both run the same expressions. A
// Sizes has a type `Value` and c(int64_t), add, sub, mul, div, ceilDiv,
// min, max (unsigned, as arith's index ops), choose(flag, x, y) (x where
// the 0/1 flag is 0, else y: a select) and multiprocessorCount().
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_CONVERSION_SOFTMAXLAUNCHPLAN_H
#define ATTNDIALECT_CONVERSION_SOFTMAXLAUNCHPLAN_H

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>

namespace mlir::attn::softmax {

/// Shared memory a split row's block takes besides its tile, for pricing
/// tiles (splitTileCount): what the system reserves per block (1 KiB) and
/// the kernel's static shared memory (the block reduction's 256 bytes),
/// with room to spare.
constexpr int64_t kBlockReserveBytes = 2048;

/// The most bytes of shared memory a block's tile may take: what a block
/// may have on sm_80, the smallest of the chips with cp.async that the
/// options are checked for (the runtime refuses more at launch).
constexpr int64_t kMostTileBytes = 163 * 1024;

/// Bytes of one vector: a cp.async copy, a vector load or store.
constexpr int64_t kVectorBytes = 16;

/// attn-softmax-to-gpu's options that shape the launch (Passes.td has
/// their meaning and defaults).
struct LaunchOptions {
  int64_t threads = 512;
  int64_t splitThreads = 256;
  int64_t elementsPerThread = 64;
  int64_t splitVectors = 16;
  int64_t sharedMemoryPerSm = 233472;
  int64_t firstWaveStagger = 4000;
};

/// Why `options` cannot shape a launch (the pass's diagnostic), or nothing.
std::optional<std::string> checkOptions(const LaunchOptions &options);

/// What the launch plan knows at compile time: the element type's and the
/// options' consequences.
struct KernelShape {
  int64_t elementBytes;
  /// Elements per 16-byte vector.
  int64_t width;
  /// Vectors per thread (the kernel unrolls them) for a row in one block.
  int64_t vectors;
  /// Vectors per thread for a row split across blocks (split-vectors).
  int64_t splitVectors;
  /// The most vectors per thread with which an SM holds one more split
  /// block than with splitVectors; 0 when none does.
  int64_t denserVectors;
  /// The first-wave stagger's step as `naps` sleeps of `napNs` (nanosleep
  /// is approximate and takes at most about 1 ms: 1 us naps); 0 naps when
  /// the stagger is off.
  int64_t naps;
  int64_t napNs;
};

/// The kernel shape for elements of `elementBytes` (2 or 4), or nothing
/// when elements-per-thread is not a whole number of vectors of them.
/// `options` must have passed checkOptions.
std::optional<KernelShape> getKernelShape(const LaunchOptions &options,
                                          int64_t elementBytes);

/// Sizes as integers, for a GPU of `sms` SMs.
struct IntegerSizes {
  using Value = int64_t;
  int64_t sms;

  int64_t c(int64_t v) const { return v; }
  int64_t add(int64_t x, int64_t y) const { return x + y; }
  int64_t sub(int64_t x, int64_t y) const { return x - y; }
  int64_t mul(int64_t x, int64_t y) const { return x * y; }
  int64_t div(int64_t x, int64_t y) const {
    assert(x >= 0 && y > 0 && "the plan divides sizes by positive counts");
    return x / y;
  }
  int64_t ceilDiv(int64_t x, int64_t y) const {
    return div(x, y) + (x % y != 0);
  }
  int64_t min(int64_t x, int64_t y) const { return x < y ? x : y; }
  int64_t max(int64_t x, int64_t y) const { return x < y ? y : x; }
  int64_t choose(int64_t flag, int64_t x, int64_t y) const {
    return flag != 0 ? y : x;
  }
  int64_t multiprocessorCount() const { return sms; }
};

/// The launch, in a Sizes' values. Every count is at least 1, also for
/// empty rows (N = 0: no expression divides by zero, and a block per row
/// reads and writes nothing); no rows launch no blocks.
template <typename V> struct LaunchPlan {
  /// Elements a row's vectors span: N, plus width - 1 when N is not a
  /// multiple of the width (a row may start anywhere in a vector).
  V span;
  /// Threads a row in one block needs (whole warps, at least 32).
  V fit;
  /// 1 when rows are split across blocks (`fit` is over `threads`), else 0.
  V split;
  /// Threads per block: `fit`, or split-threads for split rows.
  V blockThreads;
  /// How many tiles a split row is evened out over (splitTileCount).
  V splitTiles;
  /// Vectors per thread that a tile uses: fewer than the kernel's for
  /// short rows, evened out for split rows.
  V used;
  /// Elements per tile, tiles per row, blocks per row (splits) and tiles
  /// per block (sliceTiles: 1 holds the tile in shared memory, more sweep
  /// the slice twice from global memory).
  V tileElements, tiles, splits, sliceTiles;
  /// Split-row blocks in the launch's first wave (SMs x blocks per SM);
  /// only set when the first wave is staggered.
  std::optional<V> firstWave;
  /// Blocks of the launch, and 32-bit words of its workspace.
  V blocks, workspaceWords;
};

/// Split blocks an SM holds with `vectors` per thread, by shared memory:
/// a block's tile plus kBlockReserveBytes.
template <typename Sizes>
typename Sizes::Value blocksPerSm(Sizes &a, const LaunchOptions &options,
                                  typename Sizes::Value vectors) {
  return a.div(a.c(options.sharedMemoryPerSm),
               a.add(a.mul(vectors, a.c(options.splitThreads * kVectorBytes)),
                     a.c(kBlockReserveBytes)));
}

/// How many tiles a split row of `span` elements is evened out over: as
/// few as split-vectors per thread allow, or more and smaller ones (of
/// denserVectors) when an SM then holds one more block and so over 10%
/// more of the rows at once. Never past one tile per SM, where rows would
/// be swept twice.
template <typename Sizes>
typename Sizes::Value
splitTileCount(Sizes &a, const LaunchOptions &options, const KernelShape &shape,
               typename Sizes::Value span, typename Sizes::Value one) {
  using V = typename Sizes::Value;
  int64_t width = shape.width;
  auto tilesOf = [&](int64_t v) {
    return a.max(a.ceilDiv(span, a.c(options.splitThreads * v * width)), one);
  };
  V few = tilesOf(shape.splitVectors);
  if (shape.denserVectors == 0)
    return few;
  V more = tilesOf(shape.denserVectors);
  auto vectorsOf = [&](V tiles) {
    return a.max(
        a.ceilDiv(span, a.mul(tiles, a.c(options.splitThreads * width))), one);
  };
  // more is better if blocksPerSm(more) / more > 1.1 blocksPerSm(few) /
  // few, and at most one tile per SM: a > b as a 0/1 count is
  // min(a / (b + 1), 1).
  V gain = a.mul(a.mul(blocksPerSm(a, options, vectorsOf(more)), few), a.c(10));
  V keep = a.mul(a.mul(blocksPerSm(a, options, vectorsOf(few)), more), a.c(11));
  V better = a.min(a.div(gain, a.add(keep, one)), one);
  V sms = a.multiprocessorCount();
  V room = a.min(a.div(a.add(sms, one), a.add(more, one)), one);
  return a.choose(a.mul(better, room), few, more);
}

/// The launch for `rows` rows of `n` elements.
template <typename Sizes>
LaunchPlan<typename Sizes::Value>
planLaunch(Sizes &a, const LaunchOptions &options, const KernelShape &shape,
           typename Sizes::Value rows, typename Sizes::Value n) {
  using V = typename Sizes::Value;
  int64_t width = shape.width;
  LaunchPlan<V> plan;
  V ragged = a.min(a.sub(n, a.mul(a.div(n, a.c(width)), a.c(width))), a.c(1));
  plan.span = a.add(n, a.mul(ragged, a.c(width - 1)));
  // Threads: enough to hold a row, whole warps, at least 32; rows longer
  // than `threads` hold are split across blocks of split-threads with
  // split-vectors each (more blocks per SM hide the blocks' waits for each
  // other).
  plan.fit = a.max(
      a.mul(a.ceilDiv(plan.span, a.c(shape.vectors * width * 32)), a.c(32)),
      a.c(32));
  plan.split = a.min(a.div(plan.fit, a.c(options.threads + 1)), a.c(1));
  plan.blockThreads = a.choose(plan.split, plan.fit, a.c(options.splitThreads));
  // Short rows use fewer vectors per thread than the 32 threads hold; a
  // split row's tiles are evened out, so that its blocks all copy about as
  // much and none waits long for a full one. Counts stay at least 1 (both
  // choices are evaluated, also for N = 0).
  V one = a.c(1);
  plan.splitTiles = splitTileCount(a, options, shape, plan.span, one);
  plan.used = a.max(
      a.choose(plan.split,
               a.min(a.c(shape.vectors),
                     a.ceilDiv(plan.span, a.mul(plan.fit, a.c(width)))),
               a.ceilDiv(plan.span, a.mul(plan.splitTiles,
                                          a.c(options.splitThreads * width)))),
      one);
  plan.tileElements = a.mul(a.mul(plan.blockThreads, plan.used), a.c(width));
  plan.tiles = a.ceilDiv(plan.span, plan.tileElements);
  // At most one block per SM for a row, so all of a row's blocks can be
  // resident at once (they wait for each other).
  plan.splits = a.max(a.min(plan.tiles, a.multiprocessorCount()), one);
  plan.sliceTiles = a.ceilDiv(plan.tiles, plan.splits);
  if (shape.naps > 0) {
    // Named in turn: the order of the emitted ops must not depend on the
    // compiler's order of evaluating arguments.
    V perSm = blocksPerSm(a, options, plan.used);
    V sms = a.multiprocessorCount();
    plan.firstWave = a.mul(sms, perSm);
  }
  plan.blocks = a.mul(rows, plan.splits);
  // docs/Softmax.md has the layout: per row two counters, per block its
  // (max, sum).
  plan.workspaceWords = a.mul(a.c(2), a.add(rows, plan.blocks));
  return plan;
}

/// Bytes of a block's tile in dynamic shared memory.
template <typename Sizes>
typename Sizes::Value tileBytes(Sizes &a, const KernelShape &shape,
                                const LaunchPlan<typename Sizes::Value> &plan) {
  return a.mul(plan.tileElements, a.c(shape.elementBytes));
}

} // namespace mlir::attn::softmax

#endif // ATTNDIALECT_CONVERSION_SOFTMAXLAUNCHPLAN_H
