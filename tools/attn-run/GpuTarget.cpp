//===- GpuTarget.cpp - attn-run's --target=gpu ----------------------------===//

#include "GpuTarget.h"

#include "AttnDialect/Pipelines/Pipelines.h"
#include "AttnDialect/Target/KernelBundle/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cstring>

using namespace mlir;
using namespace attn_run;
using namespace attn_runtime;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::unique_ptr<GpuTarget>>
GpuTarget::create(ModuleOp module, func::FuncOp func,
                  const GpuOptions &options) {
  std::unique_ptr<GpuTarget> target(new GpuTarget());
  target->repeat = options.repeat;
  target->checkRepeatable = options.checkRepeatable;
  std::string message;
  if (!target->driver.open(message))
    return error("--target=gpu: " + message);
  target->chip_ = options.chip.empty() ? target->driver.chip() : options.chip;

  auto start = std::chrono::steady_clock::now();
  llvm::SmallString<128> directory;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("attn-run", directory))
    return error("cannot make a directory for the kernel bundle: " +
                 ec.message());
  target->directory = directory.str().str();

  OwningOpRef<ModuleOp> compiled = module.clone();
  PassManager pm(module.getContext());
  attn::NvvmPipelineOptions pipeline;
  pipeline.chip = target->chip_;
  pipeline.qTile = options.qTile;
  pipeline.kvTile = options.kvTile;
  pipeline.threads = options.threads;
  pipeline.strategy = options.strategy;
  std::string pipelineError;
  if (failed(attn::buildNvvmPipeline(pm, pipeline, [&](const llvm::Twine &msg) {
        pipelineError = msg.str();
        return failure();
      })))
    return error(pipelineError);
  attn::WriteKernelBundleOptions bundleOptions;
  bundleOptions.prefix = target->directory + "/";
  pm.addPass(attn::createWriteKernelBundle(bundleOptions));
  if (failed(pm.run(*compiled)))
    return error("compilation for " + target->chip_ +
                 " failed (see the diagnostics above)");
  target->compileMs_ = std::chrono::duration<double, std::milli>(
                           std::chrono::steady_clock::now() - start)
                           .count();

  if (!Bundle::load(target->directory + "/bundle.json", target->bundle,
                    message))
    return error(message);
  target->function = target->bundle.function(func.getName().str());
  if (!target->function)
    return error("the kernel bundle has no function @" + func.getName());
  for (const Launch &launch : target->function->launches) {
    void *kernel;
    if (!target->driver.loadKernel(target->bundle, launch, kernel, message))
      return error(message);
    target->kernels.push_back(kernel);
  }
  return target;
}

GpuTarget::~GpuTarget() {
  if (!directory.empty())
    (void)llvm::sys::fs::remove_directories(directory);
}

llvm::Expected<double>
GpuTarget::run(std::vector<std::unique_ptr<HostTensor>> &buffers,
               const DeviceCallback &onDevice) {
  std::string message;
  std::vector<Argument> args(buffers.size());
  auto release = [&] {
    for (Argument &arg : args)
      if (arg.address)
        driver.free(arg.address);
  };
  auto failWith = [&](const std::string &what) -> llvm::Error {
    release();
    return error(what);
  };
  for (auto [arg, buffer] : llvm::zip_equal(args, buffers)) {
    size_t bytes = buffer->numElements() * elementBytes(buffer->kind());
    arg.shape = buffer->shape();
    if (!driver.allocate(bytes, arg.address, message))
      return failWith("cannot allocate " + std::to_string(bytes) +
                      " bytes on the GPU: " + message);
    if (!driver.copyToDevice(arg.address, buffer->data(), bytes, message))
      return failWith(message);
  }

  // Every launch of the function, in order, with its sizes evaluated for
  // these arguments.
  PreparedCall call;
  if (!driver.prepare(*function, kernels, args, call, message))
    return failWith(message);
  auto runAll = [&](std::string &err) { return driver.launch(call, err); };

  float checkedMs = 0;
  if (!driver.timeMs(runAll, checkedMs, message) ||
      !driver.synchronize(message))
    return failWith(message);
  for (auto [arg, buffer] : llvm::zip_equal(args, buffers))
    if (!driver.copyToHost(buffer->data(), arg.address,
                           buffer->numElements() * elementBytes(buffer->kind()),
                           message))
      return failWith(message);

  // A second run must give the same bits in every buffer: the backward
  // promises deterministic gradients (every sum in a fixed order).
  if (checkRepeatable) {
    if (!runAll(message) || !driver.synchronize(message))
      return failWith(message);
    std::vector<char> again;
    for (auto [i, arg, buffer] : llvm::enumerate(args, buffers)) {
      size_t bytes = buffer->numElements() * elementBytes(buffer->kind());
      again.resize(bytes);
      if (!driver.copyToHost(again.data(), arg.address, bytes, message))
        return failWith(message);
      if (bytes && std::memcmp(again.data(), buffer->data(), bytes) != 0)
        return failWith("a second run of the kernels wrote other bits into "
                        "argument " +
                        std::to_string(i) + ": the results are not repeatable");
    }
  }
  if (onDevice && !onDevice(driver, args, message))
    return failWith(message);

  double ms = checkedMs;
  if (repeat > 0) {
    std::vector<float> times;
    for (int i = 0; i < repeat; ++i) {
      float t;
      if (!driver.timeMs(runAll, t, message))
        return failWith(message);
      times.push_back(t);
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2,
                     times.end());
    ms = times[times.size() / 2];
  }
  release();
  return ms;
}
