//===- RuntimeModule.cpp - attn._runtime: run kernel bundles --------------===//
//
// The runtime side of the Python package: needs only the runtime library
// (no MLIR, no CUDA toolkit), so it builds on the GPU machine. Loads a kernel
// bundle with the runtime's reader, says what it holds (arguments, what it
// computes, launches) and launches a function's kernels on device buffers
// given by address and shape; attn/runtime.py turns numpy arrays and GPU
// tensors (__cuda_array_interface__, or PyTorch's data_ptr) into those.
//
//===----------------------------------------------------------------------===//

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/GpuReference.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <mutex>
#include <sstream>

namespace nb = nanobind;
using namespace attn_runtime;

namespace {

/// The CUDA driver of the process (device 0), opened on first use.
CudaDriver &driver() {
  static std::unique_ptr<CudaDriver> instance;
  if (!instance) {
    auto opened = std::make_unique<CudaDriver>();
    std::string error;
    if (!opened->open(error))
      throw std::runtime_error("attn: " + error);
    instance = std::move(opened);
  }
  return *instance;
}

[[noreturn]] void raise(const std::string &error) {
  throw std::runtime_error("attn: " + error);
}

/// Runs `call` on the process's driver without the GIL: a driver call can
/// wait for another thread's, and that thread (compute-sanitizer's hooks
/// inside PyTorch's calls, say) may be waiting for the GIL.
template <typename Call> auto withoutGil(Call call) {
  CudaDriver &cuda = driver();
  nb::gil_scoped_release release;
  return call(cuda);
}

using Buffers = std::vector<std::pair<uint64_t, std::vector<int64_t>>>;

std::string operandText(const Operand &operand,
                        const std::vector<ArgumentType> &args) {
  switch (operand.kind) {
  case Operand::Kind::Buffer:
    return "buffer(" + args[operand.arg].name + ")";
  case Operand::Kind::TensorMap: {
    std::string box;
    for (int64_t size : operand.box)
      box += (box.empty() ? "" : "x") + std::to_string(size);
    return "tensor_map(" + args[operand.arg].name + ", " + box + ")";
  }
  case Operand::Kind::Workspace:
    return "workspace";
  case Operand::Kind::Scratch:
    return "scratch";
  case Operand::Kind::F32: {
    std::ostringstream text;
    text << "f32(" << operand.f32 << ")";
    return text.str();
  }
  case Operand::Kind::Int:
    return operand.value.str(&args);
  }
  return "?";
}

nb::dict regionDict(const Computation::Region &region) {
  nb::dict out;
  out["name"] = region.name.empty() ? nb::object(nb::none())
                                    : nb::object(nb::str(region.name.c_str()));
  out["digest"] = region.digest;
  return out;
}

/// A function's launches evaluated for one set of buffers on one stream:
/// launching them again costs no checks and no evaluation (for timing).
/// Python keeps its bundle alive while it lives.
class PreparedLaunches {
public:
  PreparedLaunches(const Function &function, std::vector<void *> kernels,
                   std::vector<Argument> args, uint64_t stream) {
    std::string error;
    withoutGil([&](CudaDriver &cuda) {
      if (!cuda.prepare(function, kernels, args, call, error,
                        reinterpret_cast<void *>(stream)))
        raise(error);
    });
  }

  /// Queues the launches on the stream without waiting for them.
  void launch() {
    std::string error;
    withoutGil([&](CudaDriver &cuda) {
      if (!cuda.launch(call, error))
        raise(error);
    });
  }

private:
  PreparedCall call;
};

class LoadedBundle {
public:
  explicit LoadedBundle(const std::string &path) {
    std::string error;
    if (!Bundle::load(path, bundle, error))
      throw nb::value_error(("attn: " + error).c_str());
  }

  std::vector<std::string> functions() const {
    std::vector<std::string> names;
    for (const Function &f : bundle.functions)
      names.push_back(f.name);
    return names;
  }

  /// (name, shape with -1 for dynamic sizes, dtype) of each argument.
  std::vector<std::tuple<std::string, std::vector<int64_t>, std::string>>
  args(const std::string &name) const {
    std::vector<std::tuple<std::string, std::vector<int64_t>, std::string>> out;
    for (const ArgumentType &arg : function(name).args)
      out.emplace_back(arg.name, arg.shape, arg.dtype);
    return out;
  }

  /// What each attn op of the function computes, as dictionaries.
  nb::list computes(const std::string &name) const {
    nb::list out;
    for (const Computation &c : function(name).computes) {
      nb::dict d;
      d["op"] = c.op;
      d["dtype"] = c.dtype;
      if (c.op != "softmax") {
        d["head_dim"] = c.headDim;
        d["value_head_dim"] = c.valueHeadDim;
        d["scale"] = c.scale;
        d["causal"] = c.causal;
        if (c.op == "attention") {
          d["logsumexp"] = c.logsumexp;
          d["block_mask"] = c.blockMask;
        }
        d["mask_mod"] = c.maskMod.present ? nb::object(regionDict(c.maskMod))
                                          : nb::object(nb::none());
        d["score_mod"] = c.scoreMod.present ? nb::object(regionDict(c.scoreMod))
                                            : nb::object(nb::none());
      }
      out.append(d);
    }
    return out;
  }

  /// Each launch with its expressions as text ("ceildiv(dim(q, 2), 64)").
  nb::list launches(const std::string &name) const {
    const Function &f = function(name);
    nb::list out;
    for (const Launch &l : f.launches) {
      nb::dict d;
      d["module"] = l.module;
      d["kernel"] = l.kernel;
      std::vector<std::string> grid, block, operands;
      for (int i = 0; i < 3; ++i) {
        grid.push_back(l.grid[i].str(&f.args));
        block.push_back(l.block[i].str(&f.args));
      }
      for (const Operand &operand : l.operands)
        operands.push_back(operandText(operand, f.args));
      d["grid"] = grid;
      d["block"] = block;
      d["shared_memory_bytes"] = l.sharedMemoryBytes.str(&f.args);
      d["workspace_bytes"] = l.workspaceBytes.str(&f.args);
      d["scratch_bytes"] = l.scratchBytes.str(&f.args);
      d["operands"] = operands;
      out.append(d);
    }
    return out;
  }

  /// Why `shapes` (one per argument) do not fit @name's shape contract, or
  /// "" when they do.
  std::string checkArguments(const std::string &name,
                             const std::vector<std::vector<int64_t>> &shapes) {
    return function(name).checkArguments(shapes);
  }

  /// Launches every kernel of @name, in order, on device buffers given as
  /// (address, shape) pairs, one per argument, on `stream` (a CUstream; 0
  /// is the legacy default stream); waits for them. Shapes that break the
  /// function's contract raise ValueError before any GPU work.
  void launch(const std::string &name, const Buffers &buffers,
              uint64_t stream) {
    PreparedLaunches call = prepare(name, buffers, stream);
    call.launch();
    std::string error;
    withoutGil([&](CudaDriver &cuda) {
      if (!cuda.synchronize(reinterpret_cast<void *>(stream), error))
        raise(error);
    });
  }

  /// The launches of @name evaluated for `buffers` on `stream`, checked as
  /// launch does.
  PreparedLaunches prepare(const std::string &name, const Buffers &buffers,
                           uint64_t stream) {
    const Function &f = function(name);
    if (buffers.size() != f.args.size())
      throw nb::type_error(("attn: @" + f.name + " takes " +
                            std::to_string(f.args.size()) + " buffers, got " +
                            std::to_string(buffers.size()))
                               .c_str());
    std::vector<Argument> args(buffers.size());
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < buffers.size(); ++i) {
      args[i].address = buffers[i].first;
      args[i].shape = buffers[i].second;
      shapes.push_back(buffers[i].second);
    }
    std::string error = f.checkArguments(shapes);
    if (!error.empty())
      throw nb::value_error(("attn: " + error).c_str());
    std::vector<void *> fKernels;
    withoutGil([&](CudaDriver &cuda) {
      std::lock_guard<std::mutex> lock(loading);
      if (kernels.empty())
        for (const Function &fn : bundle.functions)
          for (const Launch &l : fn.launches)
            if (!cuda.loadKernel(bundle, l, kernels[&l], error)) {
              // The next call loads them all again.
              kernels.clear();
              raise(error);
            }
      for (const Launch &l : f.launches)
        fKernels.push_back(kernels[&l]);
    });
    // The driver checks the shapes again: prepare is the runtime's one way
    // in.
    return PreparedLaunches(f, std::move(fKernels), std::move(args), stream);
  }

private:
  const Function &function(const std::string &name) const {
    const Function *f =
        name.empty()
            ? (bundle.functions.empty() ? nullptr : &bundle.functions.front())
            : bundle.function(name);
    if (!f)
      throw nb::value_error(
          ("attn: the bundle has no function '" + name + "'").c_str());
    return *f;
  }

  Bundle bundle;
  /// Loaded on the first call; `loading` guards them, as calls from
  /// several threads run without the GIL.
  std::map<const Launch *, void *> kernels;
  std::mutex loading;
};

} // namespace

NB_MODULE(_runtime, m) {
  m.doc() = "attn runtime: load kernel bundles and launch them (CUDA driver)";

  m.def(
      "chip", [] { return driver().chip(); },
      "The GPU's chip, e.g. 'sm_90'; raises when there is no driver or "
      "GPU.");
  m.def("has_gpu_reference", &hasGpuReference);
  m.def("malloc", [](size_t bytes) {
    uint64_t address;
    std::string error;
    withoutGil([&](CudaDriver &cuda) {
      if (!cuda.allocate(bytes, address, error))
        raise("cannot allocate " + std::to_string(bytes) +
              " bytes on the GPU: " + error);
    });
    return address;
  });
  m.def("free", [](uint64_t address) {
    withoutGil([&](CudaDriver &cuda) { cuda.free(address); });
  });
  m.def("copy_to_device", [](uint64_t address, nb::bytes data) {
    std::string error;
    const char *bytes = data.c_str();
    size_t size = data.size();
    withoutGil([&](CudaDriver &cuda) {
      if (!cuda.copyToDevice(address, bytes, size, error))
        raise(error);
    });
  });
  m.def("copy_to_host", [](uint64_t address, size_t bytes) {
    std::string data(bytes, '\0');
    std::string error;
    withoutGil([&](CudaDriver &cuda) {
      if (!cuda.copyToHost(data.data(), address, bytes, error))
        raise(error);
    });
    return nb::bytes(data.data(), data.size());
  });
  m.def(
      "synchronize",
      [](uint64_t stream) {
        std::string error;
        withoutGil([&](CudaDriver &cuda) {
          if (!cuda.synchronize(reinterpret_cast<void *>(stream), error))
            raise(error);
        });
      },
      nb::arg("stream") = 0, "Waits for what is queued on `stream`.");
  m.def(
      "create_stream",
      [] {
        void *stream = nullptr;
        std::string error;
        withoutGil([&](CudaDriver &cuda) {
          if (!cuda.createStream(stream, error))
            raise(error);
        });
        return reinterpret_cast<uint64_t>(stream);
      },
      "A new CUstream (non-blocking) as an int.");
  m.def(
      "destroy_stream",
      [](uint64_t stream) {
        withoutGil([&](CudaDriver &cuda) {
          cuda.destroyStream(reinterpret_cast<void *>(stream));
        });
      },
      nb::arg("stream"),
      "Destroys a stream of create_stream, and its workspace.");
  m.def(
      "workspace",
      [](uint64_t stream) {
        StreamBuffers buffers = withoutGil([&](CudaDriver &cuda) {
          return cuda.buffers(reinterpret_cast<void *>(stream));
        });
        return std::make_pair(buffers.workspace, buffers.workspaceBytes);
      },
      nb::arg("stream") = 0,
      "(address, bytes) of the zeroed workspace that kernels on `stream` "
      "share (0, 0 before one needed it).");

  nb::class_<PreparedLaunches>(m, "PreparedCall")
      .def("launch", &PreparedLaunches::launch,
           "Queues the launches without waiting for them.");

  nb::class_<LoadedBundle>(m, "Bundle")
      .def(nb::init<const std::string &>(), nb::arg("path"))
      .def_prop_ro("functions", &LoadedBundle::functions)
      .def("args", &LoadedBundle::args, nb::arg("function") = "")
      .def("computes", &LoadedBundle::computes, nb::arg("function") = "")
      .def("launches", &LoadedBundle::launches, nb::arg("function") = "")
      .def("check_arguments", &LoadedBundle::checkArguments,
           nb::arg("function"), nb::arg("shapes"))
      .def("launch", &LoadedBundle::launch, nb::arg("function"),
           nb::arg("buffers"), nb::arg("stream") = 0)
      .def("prepare", &LoadedBundle::prepare, nb::arg("function"),
           nb::arg("buffers"), nb::arg("stream") = 0, nb::keep_alive<0, 1>());
}
