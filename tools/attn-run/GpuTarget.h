//===- GpuTarget.h - attn-run's --target=gpu --------------------*- C++ -*-===//
//
// Compiles a function with attn-lower-to-nvvm for the GPU the CUDA driver
// reports, writes its kernel bundle to a temporary directory, loads it with
// the runtime library and runs it on host buffers: the same runtime path
// attn-bundle-run takes with prebuilt bundles.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_ATTN_RUN_GPUTARGET_H
#define ATTN_TOOLS_ATTN_RUN_GPUTARGET_H

#include "AttnDialect/Conversion/KernelStrategy.h"
#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace attn_run {

struct GpuOptions {
  std::string chip; // empty: the chip of the GPU found
  // Tiles of 0 and strategy auto: the pipeline's defaults.
  int64_t qTile = 0, kvTile = 0, threads = 128;
  mlir::attn::KernelStrategy strategy = mlir::attn::KernelStrategy::Auto;
  int repeat = 0; // timed runs after the checked one; 0: time the checked run
  // Run the kernels a second time and fail unless every buffer gets the
  // same bits.
  bool checkRepeatable = false;
};

class GpuTarget {
public:
  /// Opens the driver and compiles @func of `module` for its GPU. Errors
  /// name what is missing: no driver or GPU, a pipeline failure (its
  /// diagnostics are printed), a bundle the runtime cannot read.
  static llvm::Expected<std::unique_ptr<GpuTarget>>
  create(mlir::ModuleOp module, mlir::func::FuncOp func,
         const GpuOptions &options);
  ~GpuTarget();

  /// Copies `buffers` (one per function argument) to the GPU, runs the
  /// function's kernels, copies every buffer back; returns the GPU time of
  /// the run in ms (the median of `repeat` more runs when asked for). With
  /// `checkRepeatable`, a second run must write the same bits.
  /// `onDevice`, when given, runs after the kernels while the arguments are
  /// still on the GPU (the GPU reference reads Q, K and V there).
  using DeviceCallback = std::function<bool(
      attn_runtime::CudaDriver &, const std::vector<attn_runtime::Argument> &,
      std::string &)>;
  llvm::Expected<double>
  run(std::vector<std::unique_ptr<attn_runtime::HostTensor>> &buffers,
      const DeviceCallback &onDevice = nullptr);

  const std::string &chip() const { return chip_; }
  double compileMs() const { return compileMs_; }

private:
  GpuTarget() = default;
  attn_runtime::CudaDriver driver;
  attn_runtime::Bundle bundle;
  const attn_runtime::Function *function = nullptr;
  std::vector<void *> kernels; // one per launch
  std::string chip_, directory;
  double compileMs_ = 0;
  int repeat = 0;
  bool checkRepeatable = false;
};

} // namespace attn_run

#endif // ATTN_TOOLS_ATTN_RUN_GPUTARGET_H
