//===- CudaDriver.h - the CUDA Driver API, loaded at run time ---*- C++ -*-===//
//
// libcuda.so.1 is opened with dlopen, so the runtime builds (and its CPU-side
// tests run) on machines without a CUDA driver; there every call fails with
// a message that says so.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_CUDADRIVER_H
#define ATTNRUNTIME_CUDADRIVER_H

#include "AttnRuntime/Bundle.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attn_runtime {

/// One kernel launch with its sizes and parameters evaluated for concrete
/// arguments.
struct PreparedLaunch {
  void *kernel = nullptr;
  int64_t grid[3] = {}, block[3] = {}, sharedBytes = 0;
  std::vector<Param> params;
};

class CudaDriver {
public:
  CudaDriver() = default;
  ~CudaDriver();
  CudaDriver(const CudaDriver &) = delete;
  CudaDriver &operator=(const CudaDriver &) = delete;

  /// Opens libcuda.so.1, initializes it and makes device 0's primary context
  /// current. False with `error` when there is no driver or no GPU.
  bool open(std::string &error);

  /// The chip to compile for the current device: "sm_80", or "sm_90a" on
  /// Hopper, whose wgmma only the architecture-specific target has.
  std::string chip() const { return chip_; }
  /// The current device's streaming multiprocessors.
  int64_t smCount() const { return smCount_; }
  /// The workspace's address (0 before the first launch that needs one) and
  /// bytes; it moves when it grows.
  uint64_t workspace() const { return workspace_; }
  int64_t workspaceBytes() const { return workspaceBytes_; }
  /// The same for the scratch buffer.
  uint64_t scratch() const { return scratch_; }
  int64_t scratchBytes() const { return scratchBytes_; }

  /// Loads a PTX or cubin image; a PTX that the driver cannot JIT (for
  /// instance, built for a newer architecture) fails with the JIT log.
  bool loadModule(const Binary &binary, void *&module, std::string &error);
  bool getFunction(void *module, const std::string &name, void *&function,
                   std::string &error);
  /// Lets `function` use `bytes` of dynamic shared memory per block (opting
  /// in above the default 48 KiB); false with `error` when the GPU has less.
  bool reserveSharedMemory(void *function, int64_t bytes, std::string &error);
  bool launch(void *function, const int64_t grid[3], const int64_t block[3],
              int64_t sharedBytes, const std::vector<Param> &params,
              std::string &error);

  /// Loads the kernel of `launch` from its binary in `bundle`.
  bool loadKernel(const Bundle &bundle, const Launch &launch, void *&kernel,
                  std::string &error);
  /// Grows the workspace (see attn.workspace) to at least `bytes`, zeroed.
  /// Kernels leave it zeroed, so it is cleared only when it grows; launches
  /// through one driver share it and must run one after another (they do:
  /// all go to the default stream).
  bool reserveWorkspace(int64_t bytes, std::string &error);
  /// Grows the scratch buffer (see attn.workspace) to at least `bytes`,
  /// not cleared: what it holds is undefined when a function starts.
  bool reserveScratch(int64_t bytes, std::string &error);
  /// Encodes a TMA tensor map (cuTensorMapEncodeTiled) into `map`, 128
  /// bytes: rows swizzled by their size (32, 64 or 128 bytes), zeros
  /// outside the argument.
  bool encodeTensorMap(const TensorMapRequest &request, unsigned char *map,
                       std::string &error);
  /// Evaluates `launch` for `args` (grid, block, shared memory, workspace,
  /// parameters) and reserves its shared memory for `kernel` and its
  /// workspace and scratch buffer. A prepared launch holds their
  /// addresses: prepare again after another launch grew one.
  bool prepare(const Launch &launch, void *kernel,
               const std::vector<Argument> &args, PreparedLaunch &prepared,
               std::string &error);
  /// Prepares every launch of `function` for `args` (`kernels[i]` is the
  /// kernel of launch i), after checking the argument shapes against its
  /// contract (Function::checkArguments): kernels do not check bounds, so a
  /// mismatch must stop here. Reserves the largest workspace and scratch
  /// buffer first, so that all of them hold the same ones.
  bool prepare(const Function &function, const std::vector<void *> &kernels,
               const std::vector<Argument> &args,
               std::vector<PreparedLaunch> &prepared, std::string &error);
  bool launch(const PreparedLaunch &prepared, std::string &error) {
    return launch(prepared.kernel, prepared.grid, prepared.block,
                  prepared.sharedBytes, prepared.params, error);
  }
  bool synchronize(std::string &error);

  /// Milliseconds `run` takes on the GPU, by CUDA events around it.
  bool timeMs(const std::function<bool(std::string &)> &run, float &ms,
              std::string &error);

  bool allocate(size_t bytes, uint64_t &address, std::string &error);
  bool free(uint64_t address);
  bool copyToDevice(uint64_t address, const void *host, size_t bytes,
                    std::string &error);
  bool copyToHost(void *host, uint64_t address, size_t bytes,
                  std::string &error);

private:
  bool check(int result, const char *what, std::string &error);
  /// Grows the buffer at `address` of `size` bytes to at least `bytes`,
  /// zeroed when `zero`.
  bool grow(uint64_t &address, int64_t &size, int64_t bytes, bool zero,
            const char *what, std::string &error);

  void *library = nullptr;
  void *context = nullptr;
  int maxSharedBytes = 48 * 1024;
  int smCount_ = 0;
  uint64_t workspace_ = 0;
  int64_t workspaceBytes_ = 0;
  uint64_t scratch_ = 0;
  int64_t scratchBytes_ = 0;
  std::string chip_;
  struct Api;
  Api *api = nullptr;
};

} // namespace attn_runtime

#endif // ATTNRUNTIME_CUDADRIVER_H
