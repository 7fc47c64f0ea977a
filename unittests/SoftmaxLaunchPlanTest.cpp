//===- SoftmaxLaunchPlanTest.cpp - attn.softmax's launch by the numbers ---===//
//
// The launch plan evaluated for known sizes: the same expressions that
// attn-softmax-to-gpu emits as index arithmetic (lit pins those), here
// with the numbers they give on an H100 (132 SMs) and smaller chips.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Conversion/SoftmaxLaunchPlan.h"
#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/Target/NVVM/TargetInfo.h"

#include "gtest/gtest.h"

using namespace mlir::attn;
using namespace mlir::attn::softmax;

namespace {

constexpr int64_t kF32 = 4, kF16 = 2;
constexpr int64_t kH100Sms = 132;

int64_t sharedMemoryPerSm(const char *chip) {
  const nvvm::TargetInfo *target = nvvm::lookupTarget(chip);
  EXPECT_NE(target, nullptr) << chip;
  return target ? target->sharedMemoryPerSm : 0;
}

LaunchOptions optionsFor(const char *chip) {
  LaunchOptions options;
  options.sharedMemoryPerSm = sharedMemoryPerSm(chip);
  return options;
}

KernelShape shapeOf(const LaunchOptions &options, int64_t elementBytes) {
  std::optional<KernelShape> shape = getKernelShape(options, elementBytes);
  EXPECT_TRUE(shape.has_value());
  return shape.value_or(KernelShape{});
}

struct Launch {
  KernelShape shape;
  LaunchPlan<int64_t> plan;
  int64_t tileBytes;
};

Launch plan(int64_t rows, int64_t n, int64_t elementBytes,
            const LaunchOptions &options = LaunchOptions(),
            int64_t sms = kH100Sms) {
  IntegerSizes sizes{sms};
  KernelShape shape = shapeOf(options, elementBytes);
  LaunchPlan<int64_t> launch = planLaunch(sizes, options, shape, rows, n);
  return {shape, launch, softmax::tileBytes(sizes, shape, launch)};
}

TEST(SoftmaxLaunchPlanTest, DefaultsAreThePassDefaults) {
  SoftmaxToGpuOptions pass;
  LaunchOptions plan;
  EXPECT_EQ(plan.threads, pass.threads);
  EXPECT_EQ(plan.splitThreads, pass.splitThreads);
  EXPECT_EQ(plan.elementsPerThread, pass.elementsPerThread);
  EXPECT_EQ(plan.splitVectors, pass.splitVectors);
  EXPECT_EQ(plan.sharedMemoryPerSm, pass.sharedMemoryPerSm);
  EXPECT_EQ(plan.firstWaveStagger, pass.firstWaveStagger);
  EXPECT_EQ(plan.sharedMemoryPerSm, sharedMemoryPerSm("sm_90"));
}

TEST(SoftmaxLaunchPlanTest, KernelShapeByElementType) {
  KernelShape f32 = shapeOf(LaunchOptions(), kF32);
  EXPECT_EQ(f32.width, 4);
  EXPECT_EQ(f32.vectors, 16);
  KernelShape f16 = shapeOf(LaunchOptions(), kF16);
  EXPECT_EQ(f16.width, 8);
  EXPECT_EQ(f16.vectors, 8);
  // Split rows take 16 vectors of any type; the first wave naps 4 x 1 us.
  EXPECT_EQ(f16.splitVectors, 16);
  EXPECT_EQ(f16.naps, 4);
  EXPECT_EQ(f16.napNs, 1000);
}

TEST(SoftmaxLaunchPlanTest, ElementsPerThreadInWholeVectors) {
  LaunchOptions options;
  options.elementsPerThread = 12;
  EXPECT_FALSE(getKernelShape(options, kF16).has_value());
  std::optional<KernelShape> f32 = getKernelShape(options, kF32);
  ASSERT_TRUE(f32.has_value());
  EXPECT_EQ(f32->vectors, 3);
}

TEST(SoftmaxLaunchPlanTest, DenserTilesBySharedMemoryPerSm) {
  // Three 16-vector split blocks fit 228 KiB, four of 13; one fits 100
  // KiB, two of 12; two fit 164 KiB, three of 13.
  EXPECT_EQ(shapeOf(optionsFor("sm_90"), kF16).denserVectors, 13);
  EXPECT_EQ(shapeOf(optionsFor("sm_86"), kF16).denserVectors, 12);
  EXPECT_EQ(shapeOf(optionsFor("sm_80"), kF16).denserVectors, 13);
  LaunchOptions options = optionsFor("sm_90");
  IntegerSizes sizes{kH100Sms};
  EXPECT_EQ(blocksPerSm(sizes, options, 16), 3);
  EXPECT_EQ(blocksPerSm(sizes, options, 13), 4);
  // With one vector per thread, no fewer vectors fit more blocks.
  options.splitVectors = 1;
  EXPECT_EQ(shapeOf(options, kF16).denserVectors, 0);
}

TEST(SoftmaxLaunchPlanTest, ShortRowsAreOneBlockEach) {
  Launch f32 = plan(/*rows=*/65536, /*n=*/1024, kF32);
  EXPECT_EQ(f32.plan.span, 1024);
  EXPECT_EQ(f32.plan.split, 0);
  EXPECT_EQ(f32.plan.blockThreads, 32);
  EXPECT_EQ(f32.plan.used, 8);
  EXPECT_EQ(f32.plan.tileElements, 1024);
  EXPECT_EQ(f32.plan.tiles, 1);
  EXPECT_EQ(f32.plan.splits, 1);
  EXPECT_EQ(f32.plan.blocks, 65536);
  EXPECT_EQ(f32.tileBytes, 4096);
  // Two counters per row and two words per block, used or not.
  EXPECT_EQ(f32.plan.workspaceWords, 2 * (65536 + 65536));
}

TEST(SoftmaxLaunchPlanTest, F16AgainstF32) {
  // Twice the elements per vector, half the vectors: the same tile of 4096
  // elements, half the bytes.
  Launch f32 = plan(16384, 4096, kF32);
  Launch f16 = plan(16384, 4096, kF16);
  EXPECT_EQ(f32.plan.blockThreads, 64);
  EXPECT_EQ(f16.plan.blockThreads, 64);
  EXPECT_EQ(f32.plan.used, 16);
  EXPECT_EQ(f16.plan.used, 8);
  EXPECT_EQ(f32.plan.tileElements, 4096);
  EXPECT_EQ(f16.plan.tileElements, 4096);
  EXPECT_EQ(f32.tileBytes, 16384);
  EXPECT_EQ(f16.tileBytes, 8192);
}

TEST(SoftmaxLaunchPlanTest, RaggedRowsSpanAVectorMore) {
  // A row may start anywhere in a vector: width - 1 more elements.
  Launch f16 = plan(67108, 1001, kF16);
  EXPECT_EQ(f16.plan.span, 1008);
  EXPECT_EQ(f16.plan.blockThreads, 32);
  EXPECT_EQ(f16.plan.used, 4);
  EXPECT_EQ(f16.plan.tileElements, 1024);
  EXPECT_EQ(f16.plan.split, 0);
  EXPECT_EQ(plan(1, 1000, kF32).plan.span, 1000);
  EXPECT_EQ(plan(1, 1001, kF32).plan.span, 1004);
}

TEST(SoftmaxLaunchPlanTest, LongestRowInOneBlock) {
  // 512 threads x 64 elements; one element more splits the row.
  for (int64_t bytes : {kF32, kF16}) {
    Launch whole = plan(8, 32768, bytes);
    EXPECT_EQ(whole.plan.split, 0);
    EXPECT_EQ(whole.plan.blockThreads, 512);
    EXPECT_EQ(whole.plan.tileElements, 32768);
    EXPECT_EQ(whole.plan.blocks, 8);
    EXPECT_EQ(whole.tileBytes, 32768 * bytes);
    Launch split = plan(8, 32769, bytes);
    EXPECT_EQ(split.plan.split, 1);
    EXPECT_EQ(split.plan.blockThreads, 256);
  }
}

TEST(SoftmaxLaunchPlanTest, LongRowsSplitAcrossBlocks) {
  // f32 N = 32769: three tiles of 11 vectors (evened out), one block each.
  Launch f32 = plan(4, 32769, kF32);
  EXPECT_EQ(f32.plan.span, 32772);
  EXPECT_EQ(f32.plan.splitTiles, 3);
  EXPECT_EQ(f32.plan.used, 11);
  EXPECT_EQ(f32.plan.tileElements, 11264);
  EXPECT_EQ(f32.plan.tiles, 3);
  EXPECT_EQ(f32.plan.splits, 3);
  EXPECT_EQ(f32.plan.sliceTiles, 1);
  EXPECT_EQ(f32.plan.blocks, 12);
  EXPECT_EQ(f32.tileBytes, 45056);
  EXPECT_EQ(f32.plan.workspaceWords, 2 * (4 + 12));
  // The first wave: 4 blocks of 11 vectors per SM.
  ASSERT_TRUE(f32.plan.firstWave.has_value());
  EXPECT_EQ(*f32.plan.firstWave, kH100Sms * 4);
  // f32 N = 2^20: 64 tiles of 16 vectors (13 would hold too few more).
  Launch mega = plan(64, 1 << 20, kF32);
  EXPECT_EQ(mega.plan.used, 16);
  EXPECT_EQ(mega.plan.splits, 64);
  EXPECT_EQ(mega.plan.sliceTiles, 1);
  EXPECT_EQ(mega.tileBytes, 64 * 1024);
}

TEST(SoftmaxLaunchPlanTest, DenserTilesWhereAnSmHoldsMoreRows) {
  // f16 N = 229379 on sm_90: 9 tiles of 13 vectors (4 blocks per SM), not
  // 8 of 15 (3 per SM).
  Launch sm90 = plan(292, 229379, kF16, optionsFor("sm_90"));
  EXPECT_EQ(sm90.plan.splitTiles, 9);
  EXPECT_EQ(sm90.plan.used, 13);
  EXPECT_EQ(sm90.plan.splits, 9);
  EXPECT_EQ(sm90.tileBytes, 256 * 13 * 16);
  // sm_86 (100 KiB per SM, 82 SMs): 10 tiles of 12 (2 blocks per SM), not
  // 8 of 15 (1 per SM).
  Launch sm86 = plan(292, 229379, kF16, optionsFor("sm_86"), /*sms=*/82);
  EXPECT_EQ(sm86.plan.splitTiles, 10);
  EXPECT_EQ(sm86.plan.used, 12);
  EXPECT_EQ(sm86.plan.splits, 10);
  EXPECT_EQ(sm86.tileBytes, 256 * 12 * 16);
  ASSERT_TRUE(sm86.plan.firstWave.has_value());
  EXPECT_EQ(*sm86.plan.firstWave, 82 * 2);
  // Not past one tile per SM: with 8 SMs the 9 denser tiles are refused.
  Launch few = plan(292, 229379, kF16, optionsFor("sm_90"), /*sms=*/8);
  EXPECT_EQ(few.plan.splitTiles, 8);
  EXPECT_EQ(few.plan.used, 15);
  EXPECT_EQ(few.plan.splits, 8);
  EXPECT_EQ(few.plan.sliceTiles, 1);
}

TEST(SoftmaxLaunchPlanTest, RowsLongerThanOneTilePerSmSweepSlices) {
  // f32 N = 2^24: 1024 tiles over 132 blocks, 8 tiles per block.
  Launch f32 = plan(2, 1 << 24, kF32);
  EXPECT_EQ(f32.plan.used, 16);
  EXPECT_EQ(f32.plan.tiles, 1024);
  EXPECT_EQ(f32.plan.splits, kH100Sms);
  EXPECT_EQ(f32.plan.sliceTiles, 8);
  EXPECT_EQ(f32.plan.blocks, 2 * kH100Sms);
  // A smaller GPU splits N = 2^20 over its 16 SMs, 4 tiles each.
  Launch small = plan(64, 1 << 20, kF32, LaunchOptions(), /*sms=*/16);
  EXPECT_EQ(small.plan.splits, 16);
  EXPECT_EQ(small.plan.sliceTiles, 4);
}

TEST(SoftmaxLaunchPlanTest, OneElementRows) {
  Launch f32 = plan(3, 1, kF32);
  EXPECT_EQ(f32.plan.span, 4);
  EXPECT_EQ(f32.plan.split, 0);
  EXPECT_EQ(f32.plan.blockThreads, 32);
  EXPECT_EQ(f32.plan.used, 1);
  EXPECT_EQ(f32.plan.tileElements, 128);
  EXPECT_EQ(f32.plan.blocks, 3);
  EXPECT_EQ(f32.tileBytes, 512);
}

TEST(SoftmaxLaunchPlanTest, EmptyRowsAndNoRows) {
  // N = 0: every count stays at least 1 (no launch expression divides by
  // zero), a block per row that reads and writes nothing.
  Launch empty = plan(5, 0, kF16);
  EXPECT_EQ(empty.plan.span, 0);
  EXPECT_EQ(empty.plan.split, 0);
  EXPECT_EQ(empty.plan.blockThreads, 32);
  EXPECT_EQ(empty.plan.used, 1);
  EXPECT_EQ(empty.plan.splitTiles, 1);
  EXPECT_EQ(empty.plan.splits, 1);
  EXPECT_EQ(empty.plan.blocks, 5);
  EXPECT_EQ(empty.tileBytes, 32 * 8 * 2);
  // No rows launch no blocks and take no workspace.
  Launch none = plan(0, 1 << 20, kF32);
  EXPECT_EQ(none.plan.blocks, 0);
  EXPECT_EQ(none.plan.workspaceWords, 0);
}

TEST(SoftmaxLaunchPlanTest, NoStaggerNoFirstWave) {
  LaunchOptions options;
  options.firstWaveStagger = 0;
  Launch launch = plan(64, 1 << 20, kF32, options);
  EXPECT_EQ(launch.shape.naps, 0);
  EXPECT_FALSE(launch.plan.firstWave.has_value());
  // A step under 1 us is one nap.
  options.firstWaveStagger = 500;
  KernelShape shape = shapeOf(options, kF32);
  EXPECT_EQ(shape.naps, 1);
  EXPECT_EQ(shape.napNs, 500);
}

TEST(SoftmaxLaunchPlanTest, CheckOptions) {
  EXPECT_FALSE(checkOptions(LaunchOptions()).has_value());
  LaunchOptions options;
  options.threads = 48;
  EXPECT_EQ(checkOptions(options).value_or(""),
            "threads and split-threads must be multiples of 32 in [32, 1024], "
            "got 48");
  options = LaunchOptions();
  options.elementsPerThread = 1024;
  EXPECT_EQ(checkOptions(options).value_or(""),
            "elements-per-thread must be at least 1 and a block's f32 tile "
            "(threads x elements-per-thread x 4 bytes) at most 163 KiB, got "
            "1024 x 512");
  options = LaunchOptions();
  options.splitVectors = 64;
  EXPECT_EQ(checkOptions(options).value_or(""),
            "split-vectors must be at least 1 and a split row's tile "
            "(split-threads x split-vectors x 16 bytes) at most 163 KiB, got "
            "64 x 256");
  options = LaunchOptions();
  options.sharedMemoryPerSm = 1000;
  EXPECT_TRUE(checkOptions(options).has_value());
  options = LaunchOptions();
  options.firstWaveStagger = -1;
  EXPECT_TRUE(checkOptions(options).has_value());
}

} // namespace
