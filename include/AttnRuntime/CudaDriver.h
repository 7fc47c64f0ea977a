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
#include <map>
#include <mutex>
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

/// The workspace and scratch buffer of one stream (see attn.workspace).
struct StreamBuffers {
  uint64_t workspace = 0;
  int64_t workspaceBytes = 0;
  uint64_t scratch = 0;
  int64_t scratchBytes = 0;
  bool operator==(const StreamBuffers &other) const {
    return workspace == other.workspace && scratch == other.scratch &&
           workspaceBytes == other.workspaceBytes &&
           scratchBytes == other.scratchBytes;
  }
  bool operator!=(const StreamBuffers &other) const {
    return !(*this == other);
  }
};

/// A function's launches evaluated for one set of arguments on one stream:
/// launching it again costs no checks and no evaluation. It holds the
/// stream's buffers it was prepared with, and is prepared again when a
/// later call on the stream grew them.
struct PreparedCall {
  const Function *function = nullptr;
  std::vector<void *> kernels;
  std::vector<Argument> args;
  /// A CUstream; null is the legacy default stream.
  void *stream = nullptr;
  StreamBuffers buffers;
  std::vector<PreparedLaunch> launches;
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
  /// The workspace and scratch buffer of `stream` (zeros before the first
  /// launch on it that needed one); they move when they grow.
  StreamBuffers buffers(void *stream = nullptr);

  /// Loads a PTX or cubin image; a PTX that the driver cannot JIT (for
  /// instance, built for a newer architecture) fails with the JIT log.
  bool loadModule(const Binary &binary, void *&module, std::string &error);
  bool getFunction(void *module, const std::string &name, void *&function,
                   std::string &error);
  /// Lets `function` use `bytes` of dynamic shared memory per block (opting
  /// in above the default 48 KiB); false with `error` when the GPU has less.
  bool reserveSharedMemory(void *function, int64_t bytes, std::string &error);
  /// Queues one kernel on `stream` (null: the legacy default stream).
  bool launch(void *function, const int64_t grid[3], const int64_t block[3],
              int64_t sharedBytes, const std::vector<Param> &params,
              std::string &error, void *stream = nullptr);

  /// Loads the kernel of `launch` from its binary in `bundle`.
  bool loadKernel(const Bundle &bundle, const Launch &launch, void *&kernel,
                  std::string &error);
  /// Encodes a TMA tensor map (cuTensorMapEncodeTiled) into `map`, 128
  /// bytes: rows swizzled by their size (32, 64 or 128 bytes), zeros
  /// outside the argument.
  bool encodeTensorMap(const TensorMapRequest &request, unsigned char *map,
                       std::string &error);
  /// Prepares every launch of `function` for `args` on `stream`
  /// (`kernels[i]` is the kernel of launch i), after checking the argument
  /// shapes against its contract (Function::checkArguments): kernels do
  /// not check bounds, so a mismatch must stop here. Grows the stream's
  /// workspace and scratch buffer to the largest any launch needs.
  bool prepare(const Function &function, const std::vector<void *> &kernels,
               const std::vector<Argument> &args, PreparedCall &call,
               std::string &error, void *stream = nullptr);
  /// Queues the launches of `call` on its stream without waiting for them,
  /// preparing them again first when the stream's buffers moved.
  ///
  /// Calls from several threads are safe. Each stream has its own
  /// workspace and scratch buffer, so calls on different streams run
  /// concurrently; calls on one stream run in its order, and kernels leave
  /// the workspace zeroed for the next. A buffer grows only after its
  /// stream's queued kernels have finished with it.
  bool launch(PreparedCall &call, std::string &error);
  /// Waits for everything queued in the context.
  bool synchronize(std::string &error);
  /// Waits for what is queued on `stream`.
  bool synchronize(void *stream, std::string &error);
  /// A stream that does not synchronize with the legacy default stream.
  bool createStream(void *&stream, std::string &error);
  void destroyStream(void *stream);

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
  /// Makes the context current on the calling thread (another thread may
  /// be the caller).
  bool bind(std::string &error);
  /// Grows the buffer at `address` of `size` bytes to at least `bytes`,
  /// zeroed when `zero`, after `stream` has finished with the old one.
  /// The caller holds `mutex`.
  bool grow(void *stream, uint64_t &address, int64_t &size, int64_t bytes,
            bool zero, const char *what, std::string &error);
  /// Prepares `call` for its stream's buffers, grown as it needs; the
  /// caller holds `mutex`.
  bool prepareLocked(PreparedCall &call, std::string &error);
  bool prepareLaunch(const Launch &launch, void *kernel,
                     const std::vector<Argument> &args,
                     const StreamBuffers &buffers, PreparedLaunch &prepared,
                     std::string &error);

  void *library = nullptr;
  void *context = nullptr;
  int maxSharedBytes = 48 * 1024;
  int smCount_ = 0;
  /// Guards `streamBuffers` and what launches read from it.
  std::mutex mutex;
  std::map<void *, StreamBuffers> streamBuffers;
  std::string chip_;
  struct Api;
  Api *api = nullptr;
};

} // namespace attn_runtime

#endif // ATTNRUNTIME_CUDADRIVER_H
