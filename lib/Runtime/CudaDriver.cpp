//===- CudaDriver.cpp - the CUDA Driver API through dlopen ----------------===//

#include "AttnRuntime/CudaDriver.h"

#include <algorithm>
#include <dlfcn.h>

using namespace attn_runtime;

// The few driver entry points used, declared here so that no CUDA header is
// needed to build (CUresult is an int, handles are pointers, CUdeviceptr is
// a 64-bit integer).
struct CudaDriver::Api {
  int (*cuInit)(unsigned);
  int (*cuDeviceGet)(int *, int);
  int (*cuDeviceGetAttribute)(int *, int, int);
  int (*cuDevicePrimaryCtxRetain)(void **, int);
  int (*cuCtxSetCurrent)(void *);
  int (*cuGetErrorName)(int, const char **);
  int (*cuModuleLoadDataEx)(void **, const void *, unsigned, int *, void **);
  int (*cuModuleGetFunction)(void **, void *, const char *);
  int (*cuFuncSetAttribute)(void *, int, int);
  int (*cuFuncGetAttribute)(int *, int, void *);
  int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned,
                        unsigned, unsigned, unsigned, void *, void **, void **);
  int (*cuCtxSynchronize)();
  int (*cuStreamCreate)(void **, unsigned);
  int (*cuStreamDestroy)(void *);
  int (*cuStreamSynchronize)(void *);
  int (*cuMemsetD8Async)(uint64_t, unsigned char, size_t, void *);
  int (*cuMemAlloc)(uint64_t *, size_t);
  int (*cuMemFree)(uint64_t);
  int (*cuMemcpyHtoD)(uint64_t, const void *, size_t);
  int (*cuMemcpyDtoH)(void *, uint64_t, size_t);
  int (*cuEventCreate)(void **, unsigned);
  int (*cuEventRecord)(void *, void *);
  int (*cuEventSynchronize)(void *);
  int (*cuEventElapsedTime)(float *, void *, void *);
  int (*cuEventDestroy)(void *);
  // Optional: drivers before CUDA 12 lack it.
  int (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *,
                                const uint64_t *, const unsigned *,
                                const unsigned *, int, int, int, int);
};

CudaDriver::~CudaDriver() {
  for (const auto &entry : streamBuffers)
    for (uint64_t buffer : {entry.second.workspace, entry.second.scratch})
      if (buffer)
        free(buffer);
  delete api;
  if (library)
    dlclose(library);
}

bool CudaDriver::check(int result, const char *what, std::string &error) {
  if (result == 0)
    return true;
  const char *name = nullptr;
  if (api && api->cuGetErrorName)
    api->cuGetErrorName(result, &name);
  error = std::string(what) +
          " failed: " + (name ? name : "CUDA error " + std::to_string(result));
  return false;
}

bool CudaDriver::open(std::string &error) {
  library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    error = "no CUDA driver: cannot load libcuda.so.1 (" +
            std::string(dlerror()) + ")";
    return false;
  }
  api = new Api();
  bool found = true;
  auto load = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(library, name));
    if (!fn) {
      error = std::string("libcuda.so.1 lacks ") + name;
      found = false;
    }
  };
  load(api->cuInit, "cuInit");
  load(api->cuDeviceGet, "cuDeviceGet");
  load(api->cuDeviceGetAttribute, "cuDeviceGetAttribute");
  load(api->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  load(api->cuCtxSetCurrent, "cuCtxSetCurrent");
  load(api->cuGetErrorName, "cuGetErrorName");
  load(api->cuModuleLoadDataEx, "cuModuleLoadDataEx");
  load(api->cuModuleGetFunction, "cuModuleGetFunction");
  load(api->cuFuncSetAttribute, "cuFuncSetAttribute");
  load(api->cuFuncGetAttribute, "cuFuncGetAttribute");
  load(api->cuLaunchKernel, "cuLaunchKernel");
  load(api->cuCtxSynchronize, "cuCtxSynchronize");
  load(api->cuMemAlloc, "cuMemAlloc_v2");
  load(api->cuMemFree, "cuMemFree_v2");
  load(api->cuStreamCreate, "cuStreamCreate");
  load(api->cuStreamDestroy, "cuStreamDestroy_v2");
  load(api->cuStreamSynchronize, "cuStreamSynchronize");
  load(api->cuMemsetD8Async, "cuMemsetD8Async");
  load(api->cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  load(api->cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  load(api->cuEventCreate, "cuEventCreate");
  load(api->cuEventRecord, "cuEventRecord");
  load(api->cuEventSynchronize, "cuEventSynchronize");
  load(api->cuEventElapsedTime, "cuEventElapsedTime");
  load(api->cuEventDestroy, "cuEventDestroy_v2");
  if (!found)
    return false;
  api->cuTensorMapEncodeTiled =
      reinterpret_cast<decltype(api->cuTensorMapEncodeTiled)>(
          dlsym(library, "cuTensorMapEncodeTiled"));

  int device = 0, major = 0, minor = 0;
  if (!check(api->cuInit(0), "cuInit (is there a GPU?)", error) ||
      !check(api->cuDeviceGet(&device, 0), "cuDeviceGet", error) ||
      // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR = 75/76
      !check(api->cuDeviceGetAttribute(&major, 75, device),
             "cuDeviceGetAttribute", error) ||
      !check(api->cuDeviceGetAttribute(&minor, 76, device),
             "cuDeviceGetAttribute", error) ||
      // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
      !check(api->cuDeviceGetAttribute(&maxSharedBytes, 97, device),
             "cuDeviceGetAttribute", error) ||
      // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
      !check(api->cuDeviceGetAttribute(&smCount_, 16, device),
             "cuDeviceGetAttribute", error) ||
      !check(api->cuDevicePrimaryCtxRetain(&context, device),
             "cuDevicePrimaryCtxRetain", error) ||
      !check(api->cuCtxSetCurrent(context), "cuCtxSetCurrent", error))
    return false;
  chip_ = "sm_" + std::to_string(major * 10 + minor);
  // Hopper's wgmma is an architecture-specific feature: compile for it.
  if (major == 9 && minor == 0)
    chip_ += "a";
  return true;
}

bool CudaDriver::loadModule(const Binary &binary, void *&module,
                            std::string &error) {
  // PTX must be NUL-terminated for the JIT.
  if (!bind(error))
    return false;
  std::string image = binary.image;
  if (binary.format == "ptx")
    image.push_back('\0');
  std::vector<char> log(1 << 16, '\0');
  // CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
  int options[] = {5, 6};
  void *values[] = {log.data(), reinterpret_cast<void *>(log.size())};
  int result =
      api->cuModuleLoadDataEx(&module, image.data(), 2, options, values);
  if (result == 0)
    return true;
  check(result, "cuModuleLoadDataEx", error);
  error += " loading '" + binary.name + "' (built for " + binary.target +
           ", this GPU is " + chip_ + ")";
  if (log[0])
    error += ": " + std::string(log.data());
  return false;
}

bool CudaDriver::getFunction(void *module, const std::string &name,
                             void *&function, std::string &error) {
  return check(api->cuModuleGetFunction(&function, module, name.c_str()),
               ("cuModuleGetFunction(" + name + ")").c_str(), error);
}

bool CudaDriver::reserveSharedMemory(void *function, int64_t bytes,
                                     std::string &error) {
  // The kernel's static shared memory (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  // = 1, e.g. gpu.all_reduce's buffers) comes on top of the dynamic bytes.
  int staticBytes = 0;
  if (!check(api->cuFuncGetAttribute(&staticBytes, 1, function),
             "cuFuncGetAttribute(SHARED_SIZE_BYTES)", error))
    return false;
  if (bytes < 0) {
    error = "the kernel asks for " + std::to_string(bytes) +
            " bytes of dynamic shared memory";
    return false;
  }
  // Compared without adding, which could overflow for a huge `bytes`.
  if (bytes > maxSharedBytes - staticBytes) {
    error = "the kernel needs " +
            (staticBytes ? std::to_string(staticBytes) + " + " : "") +
            std::to_string(bytes) +
            " bytes of shared memory per block; this GPU (" + chip_ +
            ") gives at most " + std::to_string(maxSharedBytes) +
            " (compile with smaller tiles)";
    return false;
  }
  // Above 48 KiB in all a kernel must opt in:
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8.
  if (staticBytes + bytes <= 48 * 1024)
    return true;
  return check(api->cuFuncSetAttribute(function, 8, static_cast<int>(bytes)),
               "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", error);
}

bool CudaDriver::launch(void *function, const int64_t grid[3],
                        const int64_t block[3], int64_t sharedBytes,
                        const std::vector<Param> &params, std::string &error,
                        void *stream) {
  // cuLaunchKernel takes unsigned sizes: larger ones must not wrap around.
  if (sharedBytes < 0 || sharedBytes > 0x7fffffff) {
    error = "invalid launch: " + std::to_string(sharedBytes) +
            " bytes of dynamic shared memory";
    return false;
  }
  for (int d = 0; d < 3; ++d)
    if (grid[d] < 0 || block[d] <= 0 || grid[d] > 0x7fffffff ||
        block[d] > 0x7fffffff) {
      error = "invalid launch size: grid dim " + std::to_string(d) + " = " +
              std::to_string(grid[d]) +
              ", block dim = " + std::to_string(block[d]);
      return false;
    }
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return true; // an empty problem: nothing to launch
  std::vector<void *> pointers;
  pointers.reserve(params.size());
  for (const Param &p : params)
    pointers.push_back(
        p.kind == Param::Kind::F32 ? const_cast<float *>(&p.f32)
        : p.kind == Param::Kind::Pointer
            ? static_cast<void *>(const_cast<uint64_t *>(&p.pointer))
        : p.kind == Param::Kind::TensorMap
            ? static_cast<void *>(const_cast<unsigned char *>(p.tensorMap))
            : static_cast<void *>(const_cast<int64_t *>(&p.i64)));
  return check(
      api->cuLaunchKernel(
          function, static_cast<unsigned>(grid[0]),
          static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2]),
          static_cast<unsigned>(block[0]), static_cast<unsigned>(block[1]),
          static_cast<unsigned>(block[2]), static_cast<unsigned>(sharedBytes),
          stream, pointers.data(), nullptr),
      "cuLaunchKernel", error);
}

bool CudaDriver::loadKernel(const Bundle &bundle, const Launch &launch,
                            void *&kernel, std::string &error) {
  const Binary *binary = bundle.binary(launch.module);
  if (!binary) {
    error = "the bundle has no binary '" + launch.module + "'";
    return false;
  }
  void *module;
  return loadModule(*binary, module, error) &&
         getFunction(module, launch.kernel, kernel, error);
}

bool CudaDriver::bind(std::string &error) {
  return check(api->cuCtxSetCurrent(context), "cuCtxSetCurrent", error);
}

StreamBuffers CudaDriver::buffers(void *stream) {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = streamBuffers.find(stream);
  return found == streamBuffers.end() ? StreamBuffers() : found->second;
}

bool CudaDriver::grow(void *stream, uint64_t &address, int64_t &size,
                      int64_t bytes, bool zero, const char *what,
                      std::string &error) {
  if (bytes <= size)
    return true;
  // Kernels queued on the stream may use the old buffer; no other stream
  // uses it.
  if (address && (!synchronize(stream, error) || !free(address))) {
    error = std::string("cannot free the old ") + what + ": " + error;
    return false;
  }
  address = 0;
  size = 0;
  if (!allocate(bytes, address, error) ||
      (zero && !check(api->cuMemsetD8Async(address, 0, bytes, stream),
                      "cuMemsetD8Async", error))) {
    error = std::string("cannot allocate a ") + what + " of " +
            std::to_string(bytes) + " bytes: " + error;
    return false;
  }
  size = bytes;
  return true;
}

bool CudaDriver::encodeTensorMap(const TensorMapRequest &request,
                                 unsigned char *map, std::string &error) {
  if (!api->cuTensorMapEncodeTiled) {
    error = "libcuda.so.1 lacks cuTensorMapEncodeTiled (TMA needs a CUDA 12 "
            "driver or newer)";
    return false;
  }
  size_t rank = request.shape.size();
  int64_t bytes = dtypeBytes(request.dtype);
  if (rank == 0 || rank > 5 || request.box.size() != rank || bytes == 0) {
    error = "a tensor map takes 1 to 5 dims of f16, bf16 or f32";
    return false;
  }
  if (request.address % 16) {
    error = "the argument's address is not a multiple of 16 bytes";
    return false;
  }
  // The driver counts dims innermost first, and strides in bytes for all
  // but the innermost.
  uint64_t dims[5], strides[4];
  unsigned box[5], elementStrides[5];
  int64_t stride = bytes;
  for (size_t i = 0; i < rank; ++i) {
    size_t dim = rank - 1 - i;
    if (i > 0) {
      if (stride % 16) {
        error = "dim " + std::to_string(dim) + " of the argument steps by " +
                std::to_string(stride) +
                " bytes, which is not a multiple of 16";
        return false;
      }
      strides[i - 1] = stride;
    }
    if (__builtin_mul_overflow(stride, request.shape[dim], &stride)) {
      error = "the argument's size overflows int64";
      return false;
    }
    dims[i] = request.shape[dim];
    box[i] = request.box[dim];
    elementStrides[i] = 1;
  }
  // CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6, _FLOAT32 = 7, _BFLOAT16 = 9;
  // INTERLEAVE_NONE = 0, SWIZZLE_32B / 64B / 128B = 1 / 2 / 3 (by the box's
  // row bytes), L2_PROMOTION_L2_256B = 3, FLOAT_OOB_FILL_NONE = 0 (zeros).
  int type = request.dtype == "f16" ? 6 : request.dtype == "bf16" ? 9 : 7;
  int64_t rowBytes = box[0] * bytes;
  if (rowBytes != 32 && rowBytes != 64 && rowBytes != 128) {
    error = "a tensor map's box rows must be 32, 64 or 128 bytes (its "
            "swizzle), not " +
            std::to_string(rowBytes);
    return false;
  }
  int swizzle = rowBytes == 32 ? 1 : rowBytes == 64 ? 2 : 3;
  alignas(64) unsigned char encoded[128];
  if (!check(api->cuTensorMapEncodeTiled(
                 encoded, type, static_cast<unsigned>(rank),
                 reinterpret_cast<void *>(request.address), dims, strides, box,
                 elementStrides, 0, swizzle, 3, 0),
             "cuTensorMapEncodeTiled", error))
    return false;
  std::copy(encoded, encoded + 128, map);
  return true;
}

bool CudaDriver::prepareLaunch(const Launch &launch, void *kernel,
                               const std::vector<Argument> &args,
                               const StreamBuffers &buffers,
                               PreparedLaunch &prepared, std::string &error) {
  prepared.kernel = kernel;
  Environment environment;
  environment.smCount = smCount_;
  environment.encodeTensorMap = [this](const TensorMapRequest &request,
                                       unsigned char *map, std::string &why) {
    return encodeTensorMap(request, map, why);
  };
  environment.workspace = buffers.workspace;
  environment.workspaceBytes = buffers.workspaceBytes;
  environment.scratch = buffers.scratch;
  environment.scratchBytes = buffers.scratchBytes;
  for (int d = 0; d < 3; ++d)
    if (!evaluateIndex(launch.grid[d], args, prepared.grid[d], error,
                       &environment) ||
        !evaluateIndex(launch.block[d], args, prepared.block[d], error,
                       &environment))
      return false;
  return evaluateIndex(launch.sharedMemoryBytes, args, prepared.sharedBytes,
                       error, &environment) &&
         reserveSharedMemory(kernel, prepared.sharedBytes, error) &&
         launch.params(args, prepared.params, error, &environment);
}

bool CudaDriver::prepareLocked(PreparedCall &call, std::string &error) {
  const Function &function = *call.function;
  Environment environment;
  environment.smCount = smCount_;
  int64_t workspaceBytes = 0, scratchBytes = 0;
  for (const Launch &launch : function.launches) {
    int64_t workspace = 0, scratch = 0;
    if (!evaluateIndex(launch.workspaceBytes, call.args, workspace, error,
                       &environment) ||
        !evaluateIndex(launch.scratchBytes, call.args, scratch, error,
                       &environment))
      return false;
    workspaceBytes = std::max(workspaceBytes, workspace);
    scratchBytes = std::max(scratchBytes, scratch);
  }
  StreamBuffers &buffers = streamBuffers[call.stream];
  if (!grow(call.stream, buffers.workspace, buffers.workspaceBytes,
            workspaceBytes, /*zero=*/true, "workspace", error) ||
      !grow(call.stream, buffers.scratch, buffers.scratchBytes, scratchBytes,
            /*zero=*/false, "scratch buffer", error))
    return false;
  call.buffers = buffers;
  call.launches.assign(call.kernels.size(), PreparedLaunch());
  for (size_t i = 0; i < call.kernels.size(); ++i)
    if (!prepareLaunch(function.launches[i], call.kernels[i], call.args,
                       buffers, call.launches[i], error))
      return false;
  return true;
}

bool CudaDriver::prepare(const Function &function,
                         const std::vector<void *> &kernels,
                         const std::vector<Argument> &args, PreparedCall &call,
                         std::string &error, void *stream) {
  if (kernels.size() != function.launches.size()) {
    error = "@" + function.name + " has " +
            std::to_string(function.launches.size()) + " launches, but " +
            std::to_string(kernels.size()) + " kernels were given";
    return false;
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const Argument &arg : args)
    shapes.push_back(arg.shape);
  error = function.checkArguments(shapes);
  if (!error.empty())
    return false;
  call.function = &function;
  call.kernels = kernels;
  call.args = args;
  call.stream = stream;
  std::lock_guard<std::mutex> lock(mutex);
  return bind(error) && prepareLocked(call, error);
}

bool CudaDriver::launch(PreparedCall &call, std::string &error) {
  if (!call.function) {
    error = "the call was not prepared";
    return false;
  }
  // Held until every launch is queued, so that no other call grows (and
  // frees) the buffers these launches were given before they are queued.
  std::lock_guard<std::mutex> lock(mutex);
  if (!bind(error))
    return false;
  if (streamBuffers[call.stream] != call.buffers && !prepareLocked(call, error))
    return false;
  for (const PreparedLaunch &p : call.launches)
    if (!launch(p.kernel, p.grid, p.block, p.sharedBytes, p.params, error,
                call.stream))
      return false;
  return true;
}

bool CudaDriver::synchronize(void *stream, std::string &error) {
  return bind(error) &&
         check(api->cuStreamSynchronize(stream), "cuStreamSynchronize", error);
}

bool CudaDriver::createStream(void *&stream, std::string &error) {
  // CU_STREAM_NON_BLOCKING = 1
  return bind(error) &&
         check(api->cuStreamCreate(&stream, 1), "cuStreamCreate", error);
}

void CudaDriver::destroyStream(void *stream) {
  std::string error;
  if (!bind(error))
    return;
  {
    // Its buffers go with it, once its kernels are done with them.
    std::lock_guard<std::mutex> lock(mutex);
    auto found = streamBuffers.find(stream);
    if (found != streamBuffers.end()) {
      api->cuStreamSynchronize(stream);
      for (uint64_t buffer : {found->second.workspace, found->second.scratch})
        if (buffer)
          free(buffer);
      streamBuffers.erase(found);
    }
  }
  api->cuStreamDestroy(stream);
}

bool CudaDriver::synchronize(std::string &error) {
  return bind(error) &&
         check(api->cuCtxSynchronize(), "cuCtxSynchronize", error);
}

bool CudaDriver::allocate(size_t bytes, uint64_t &address, std::string &error) {
  return bind(error) &&
         check(api->cuMemAlloc(&address, bytes ? bytes : 1),
               ("cuMemAlloc(" + std::to_string(bytes) + " bytes)").c_str(),
               error);
}

bool CudaDriver::free(uint64_t address) {
  std::string error;
  return api && bind(error) && api->cuMemFree(address) == 0;
}

bool CudaDriver::copyToDevice(uint64_t address, const void *host, size_t bytes,
                              std::string &error) {
  return bind(error) &&
         check(api->cuMemcpyHtoD(address, host, bytes), "cuMemcpyHtoD", error);
}

bool CudaDriver::copyToHost(void *host, uint64_t address, size_t bytes,
                            std::string &error) {
  return bind(error) &&
         check(api->cuMemcpyDtoH(host, address, bytes), "cuMemcpyDtoH", error);
}

bool CudaDriver::timeMs(const std::function<bool(std::string &)> &run,
                        float &ms, std::string &error) {
  void *start = nullptr, *stop = nullptr;
  bool ok = bind(error) &&
            check(api->cuEventCreate(&start, 0), "cuEventCreate", error) &&
            check(api->cuEventCreate(&stop, 0), "cuEventCreate", error) &&
            check(api->cuEventRecord(start, nullptr), "cuEventRecord", error) &&
            run(error) &&
            check(api->cuEventRecord(stop, nullptr), "cuEventRecord", error) &&
            check(api->cuEventSynchronize(stop), "cuEventSynchronize", error) &&
            check(api->cuEventElapsedTime(&ms, start, stop),
                  "cuEventElapsedTime", error);
  if (start)
    api->cuEventDestroy(start);
  if (stop)
    api->cuEventDestroy(stop);
  return ok;
}
