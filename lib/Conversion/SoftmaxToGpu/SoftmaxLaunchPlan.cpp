//===- SoftmaxLaunchPlan.cpp - how attn.softmax's kernel launches ---------===//

#include "AttnDialect/Conversion/SoftmaxLaunchPlan.h"

#include <algorithm>

using namespace mlir::attn::softmax;

std::optional<std::string>
mlir::attn::softmax::checkOptions(const LaunchOptions &options) {
  auto number = [](int64_t v) { return std::to_string(v); };
  for (int64_t count : {options.threads, options.splitThreads})
    if (count < 32 || count > 1024 || count % 32 != 0)
      return "threads and split-threads must be multiples of 32 in [32, "
             "1024], got " +
             number(count);
  // f32 tiles are the largest.
  if (options.elementsPerThread < 1 ||
      options.elementsPerThread * 4 * options.threads > kMostTileBytes)
    return "elements-per-thread must be at least 1 and a block's f32 tile "
           "(threads x elements-per-thread x 4 bytes) at most 163 KiB, got " +
           number(options.elementsPerThread) + " x " + number(options.threads);
  if (options.firstWaveStagger < 0 || options.firstWaveStagger > 100000)
    return "first-wave-stagger must be in [0, 100000] ns, got " +
           number(options.firstWaveStagger);
  if (options.sharedMemoryPerSm < 16 * 1024)
    return "shared-memory-per-sm must be at least 16 KiB, got " +
           number(options.sharedMemoryPerSm);
  if (options.splitVectors < 1 ||
      options.splitVectors * kVectorBytes * options.splitThreads >
          kMostTileBytes)
    return "split-vectors must be at least 1 and a split row's tile "
           "(split-threads x split-vectors x 16 bytes) at most 163 KiB, got " +
           number(options.splitVectors) + " x " + number(options.splitThreads);
  return std::nullopt;
}

std::optional<KernelShape>
mlir::attn::softmax::getKernelShape(const LaunchOptions &options,
                                    int64_t elementBytes) {
  KernelShape shape;
  shape.elementBytes = elementBytes;
  shape.width = kVectorBytes / elementBytes;
  if (options.elementsPerThread % shape.width != 0)
    return std::nullopt;
  shape.vectors = options.elementsPerThread / shape.width;
  shape.splitVectors = options.splitVectors;
  IntegerSizes sizes{/*sms=*/0};
  auto fitting = [&](int64_t v) { return blocksPerSm(sizes, options, v); };
  shape.denserVectors = options.splitVectors - 1;
  while (shape.denserVectors > 0 &&
         fitting(shape.denserVectors) <= fitting(options.splitVectors))
    --shape.denserVectors;
  shape.naps = 0;
  shape.napNs = 0;
  if (options.firstWaveStagger > 0) {
    shape.naps = std::max<int64_t>(options.firstWaveStagger / 1000, 1);
    shape.napNs = options.firstWaveStagger / shape.naps;
  }
  return shape;
}
