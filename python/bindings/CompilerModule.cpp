//===- CompilerModule.cpp - attn._compiler: build, compile, run on CPU ----===//
//
// The compiler side of the Python package (needs our libraries and MLIR):
// build attention and softmax IR from parameters, parse and print attn IR,
// run any named pipeline, get PTX, write kernel bundles, and JIT-run a
// function on the CPU on numpy arrays (no copies: the arrays are the
// kernel's buffers).
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Execution/CpuJit.h"
#include "AttnDialect/Execution/Variants.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/InitAll.h"
#include "AttnDialect/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace mlir;

namespace {

/// One context for the process, with every dialect, extension, translation
/// and pass that attn-opt has.
MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    attn::registerAllDialectsAndAttn(registry);
    attn::registerAllPassesAndAttn();
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

/// Collects the diagnostics of a scope, to raise them as one exception.
struct Diagnostics {
  Diagnostics()
      : handler(&context(), [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          os << diag.getLocation() << ": " << diag << "\n";
          for (Diagnostic &note : diag.getNotes())
            os << "  note: " << note << "\n";
          return success();
        }) {}
  std::string text;
  ScopedDiagnosticHandler handler;
};

/// Option values checked with the Python parameter's name (the pipeline
/// builders check them too, under their pipeline-option names).
void checkRange(const char *name, int64_t value, int64_t max) {
  if (value <= 0 || value > max)
    throw nb::value_error(
        ("attn: " + std::string(name) + "= must be a positive int up to " +
         std::to_string(max) + ", not " + std::to_string(value))
            .c_str());
}
void checkTile(const char *name, int64_t value) {
  checkRange(name, value, attn::kMaxTile);
}

/// Builds a pass manager with `build(pm, errorHandler)` and runs it on
/// `module`: option errors the builder reports are ValueErrors, failures on
/// the IR RuntimeErrors with the diagnostics.
template <typename Build>
void runBuilt(ModuleOp module, const std::string &what, Build build) {
  Diagnostics diags;
  PassManager pm(&context());
  std::string optionError;
  if (failed(build(static_cast<OpPassManager &>(pm),
                   [&](const llvm::Twine &message) {
                     optionError = message.str();
                     return failure();
                   })))
    throw nb::value_error(("attn: " + optionError).c_str());
  if (failed(pm.run(module)))
    throw std::runtime_error("attn: " + what + " failed:\n" + diags.text);
}

class Module {
public:
  explicit Module(OwningOpRef<ModuleOp> module) : module(std::move(module)) {}

  static Module parse(const std::string &text) {
    Diagnostics diags;
    auto module = parseSourceString<ModuleOp>(text, &context());
    if (!module)
      throw nb::value_error(
          ("attn: the IR does not parse or verify:\n" + diags.text).c_str());
    return Module(std::move(module));
  }

  std::string str() {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return text;
  }

  Module clone() { return Module(OwningOpRef<ModuleOp>(module->clone())); }

  void runPipeline(const std::string &pipeline) {
    Diagnostics diags;
    // Anchored on the module: "builtin.module(...)", or bare passes.
    std::string anchored =
        llvm::StringRef(pipeline).starts_with("builtin.module(")
            ? pipeline
            : "builtin.module(" + pipeline + ")";
    std::string parseError;
    llvm::raw_string_ostream errors(parseError);
    FailureOr<OpPassManager> parsed = parsePassPipeline(anchored, errors);
    if (failed(parsed))
      throw nb::value_error(
          ("attn: bad pipeline '" + pipeline + "': " + parseError + diags.text)
              .c_str());
    PassManager pm(&context());
    static_cast<OpPassManager &>(pm) = *parsed;
    if (failed(pm.run(*module)))
      throw std::runtime_error("attn: pipeline '" + pipeline + "' failed:\n" +
                               diags.text);
  }

  /// The PTX (or other assembly) of every gpu.binary object, by binary name.
  nb::dict ptx() {
    nb::dict out;
    module->walk([&](gpu::BinaryOp binary) {
      for (Attribute object : binary.getObjects()) {
        auto obj = cast<gpu::ObjectAttr>(object);
        if (obj.getFormat() == gpu::CompilationTarget::Assembly)
          out[nb::str(binary.getName().str().c_str())] =
              nb::str(obj.getObject().getValue().str().c_str());
      }
    });
    if (out.size() == 0)
      throw nb::value_error("attn: the module holds no PTX: run "
                            "attn-lower-to-nvvm{chip=... format=isa} first "
                            "(module.lower_to_nvvm(chip))");
    return out;
  }

  /// attn-lower-to-nvvm with typed options: nothing is parsed from text.
  void lowerToNvvm(const std::string &chip, int64_t qTile, int64_t kvTile,
                   int64_t threads, const std::string &format,
                   const std::string &until, bool boundsChecks,
                   const std::string &strategy) {
    if (chip.empty())
      throw nb::value_error("attn: chip= is required, e.g. 'sm_90'");
    // 0: the pipeline chooses tiles that fit the chip.
    if (qTile != 0)
      checkTile("q_tile", qTile);
    if (kvTile != 0)
      checkTile("kv_tile", kvTile);
    checkRange("threads", threads, 1024);
    attn::NvvmPipelineOptions options;
    options.chip = chip;
    options.qTile = qTile;
    options.kvTile = kvTile;
    options.threads = threads;
    options.format = format;
    options.until = until;
    options.boundsChecks = boundsChecks;
    std::optional<attn::KernelStrategy> kind =
        attn::parseKernelStrategy(strategy);
    if (!kind)
      throw nb::value_error(("attn: unknown strategy '" + strategy +
                             "' (expected auto, simt, mma-sync, wgmma or "
                             "wgmma-ws)")
                                .c_str());
    options.strategy = *kind;
    runBuilt(*module, "attn-lower-to-nvvm",
             [&](OpPassManager &pm, auto errorHandler) {
               return attn::buildNvvmPipeline(pm, options, errorHandler);
             });
  }

  /// attn-lower-to-cpu with typed options.
  void lowerToCpu(int64_t qTile, int64_t kvTile, int64_t rowTile,
                  const std::string &until, bool boundsChecks) {
    checkTile("q_tile", qTile);
    checkTile("kv_tile", kvTile);
    checkTile("row_tile", rowTile);
    attn::CpuPipelineOptions options;
    options.qTile = qTile;
    options.kvTile = kvTile;
    options.rowTile = rowTile;
    options.until = until;
    options.boundsChecks = boundsChecks;
    runBuilt(*module, "attn-lower-to-cpu",
             [&](OpPassManager &pm, auto errorHandler) {
               return attn::buildCpuPipeline(pm, options, errorHandler);
             });
  }

  /// attn-write-kernel-bundle, its prefix passed as an option value (never
  /// pasted into a pipeline string). Refuses a module that holds no
  /// gpu.binary launched from a host function: it would write an empty
  /// bundle.
  void writeBundle(const std::string &prefix) {
    bool hasBinary = false, hasLaunch = false;
    module->walk([&](gpu::BinaryOp) { hasBinary = true; });
    module->walk([&](gpu::LaunchFuncOp) { hasLaunch = true; });
    if (!hasBinary || !hasLaunch)
      throw nb::value_error(
          "attn: the module holds no GPU kernels to write (no gpu.binary "
          "launched from a host function): run attn-lower-to-nvvm{chip=...} "
          "first (module.lower_to_nvvm(chip))");
    attn::WriteKernelBundleOptions options;
    options.prefix = prefix;
    runBuilt(*module, "attn-write-kernel-bundle", [&](OpPassManager &pm, auto) {
      pm.addPass(attn::createWriteKernelBundle(options));
      return success();
    });
  }

  std::vector<std::string> functions() {
    std::vector<std::string> names;
    for (auto func : module->getOps<func::FuncOp>())
      names.push_back(func.getName().str());
    return names;
  }

  OwningOpRef<ModuleOp> module;
};

/// An element type as the Python side names it.
std::string typeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64) || type.isIndex())
    return "i64";
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// The DLPack dtype numpy arrays must have for an element type; bf16 arrays
/// are passed as their bits (uint16), as numpy has no bfloat16.
bool matches(const std::string &type, nb::dlpack::dtype dtype) {
  using nb::dlpack::dtype_code;
  auto is = [&](dtype_code code, int bits) {
    return dtype.code == static_cast<uint8_t>(code) && dtype.bits == bits &&
           dtype.lanes == 1;
  };
  if (type == "f32")
    return is(dtype_code::Float, 32);
  if (type == "f16")
    return is(dtype_code::Float, 16);
  if (type == "bf16")
    return is(dtype_code::Bfloat, 16) || is(dtype_code::UInt, 16);
  if (type == "i32")
    return is(dtype_code::Int, 32);
  if (type == "i64")
    return is(dtype_code::Int, 64);
  return false;
}

/// Which arguments of `func` receive its results: the inits of the
/// destination-style ops whose results are returned. False when some result
/// does not trace back to an argument (then none is known to be an input).
bool outputArguments(func::FuncOp func, std::vector<bool> &outputs) {
  outputs.assign(func.getNumArguments(), false);
  if (func.isExternal())
    return false;
  Block *entry = &func.getBody().front();
  bool known = true;
  func.walk([&](func::ReturnOp ret) {
    for (Value value : ret.getOperands()) {
      while (true) {
        auto arg = dyn_cast<BlockArgument>(value);
        if (arg && arg.getOwner() == entry) {
          outputs[arg.getArgNumber()] = true;
          break;
        }
        auto result = dyn_cast<OpResult>(value);
        Operation *op = result ? result.getOwner() : nullptr;
        if (auto dps = dyn_cast_or_null<DestinationStyleOpInterface>(op)) {
          value = dps.getTiedOpOperand(result)->get();
        } else if (auto castOp = dyn_cast_or_null<tensor::CastOp>(op)) {
          value = castOp.getSource();
        } else {
          known = false;
          break;
        }
      }
    }
  });
  return known;
}

/// A numpy array passed to a kernel, and whether it may be written.
struct Array {
  nb::ndarray<nb::ro, nb::device::cpu> array;
  bool writable = false;
};

class CpuKernel {
public:
  static CpuKernel compile(Module &module, const std::string &function,
                           int64_t qTile, int64_t kvTile, int64_t rowTile,
                           bool boundsChecks) {
    checkTile("q_tile", qTile);
    checkTile("kv_tile", kvTile);
    checkTile("row_tile", rowTile);
    std::string name = function;
    if (name.empty()) {
      std::vector<std::string> names = module.functions();
      if (names.empty())
        throw nb::value_error("attn: the module has no function");
      name = names.front();
    }
    auto func = module.module->lookupSymbol<func::FuncOp>(name);
    if (!func)
      throw nb::value_error(
          ("attn: the module has no function @" + name).c_str());
    CpuKernel kernel;
    kernel.name = name;
    for (Type type : func.getArgumentTypes()) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor)
        throw nb::value_error(("attn: @" + name +
                               " takes an argument that is not a ranked "
                               "tensor")
                                  .c_str());
      kernel.argTypes.push_back(typeName(tensor.getElementType()));
      kernel.argShapes.emplace_back(tensor.getShape().begin(),
                                    tensor.getShape().end());
    }
    kernel.outputsKnown = outputArguments(func, kernel.outputs);
    Diagnostics diags;
    attn::CpuPipelineOptions options;
    options.qTile = qTile;
    options.kvTile = kvTile;
    options.rowTile = rowTile;
    options.boundsChecks = boundsChecks;
    auto compiled = attn::CpuKernel::compile(*module.module, name, options);
    if (!compiled)
      throw std::runtime_error("attn: " + llvm::toString(compiled.takeError()) +
                               (diags.text.empty() ? "" : "\n" + diags.text));
    kernel.kernel = std::shared_ptr<attn::CpuKernel>(std::move(*compiled));
    // Names as users know them ("q", "out", ...; "argument N" for captures),
    // from the shape contract the compiler derived.
    for (size_t i = 0; i < kernel.argTypes.size(); ++i)
      kernel.argNames.push_back(kernel.kernel->shapeContract().argName(i));
    return kernel;
  }

  /// "out (argument 3) of @attention", or "argument 5 of @attention".
  std::string describe(size_t i) const {
    std::string number = "argument " + std::to_string(i);
    return (argNames[i] == number ? number
                                  : argNames[i] + " (" + number + ")") +
           " of @" + name;
  }

  /// Runs on numpy arrays, one per argument, in place. Every check (types,
  /// ranks, static sizes, layouts, writable outputs, the sizes' agreement)
  /// happens before the kernel runs; with nothing to compute (every output
  /// empty) it does not run.
  void call(std::vector<Array> arrays) {
    if (arrays.size() != argTypes.size())
      throw nb::type_error(("attn: @" + name + " takes " +
                            std::to_string(argTypes.size()) + " arrays, got " +
                            std::to_string(arrays.size()))
                               .c_str());
    // Strided memref descriptors: allocated, aligned, offset, sizes,
    // strides (64-bit words).
    std::vector<std::vector<int64_t>> descriptors;
    std::vector<std::vector<int64_t>> shapes;
    bool anyOutput = false, outputsEmpty = true;
    for (size_t i = 0; i < arrays.size(); ++i) {
      nb::ndarray<nb::ro, nb::device::cpu> &a = arrays[i].array;
      const std::vector<int64_t> &shape = argShapes[i];
      std::string where = "attn: " + describe(i) + ": ";
      if (!matches(argTypes[i], a.dtype()))
        throw nb::type_error(
            (where + "expected " + argTypes[i] +
             (argTypes[i] == "bf16" ? " (as uint16 bits)" : "") + " elements")
                .c_str());
      if (a.ndim() != shape.size())
        throw nb::value_error((where + "expected rank " +
                               std::to_string(shape.size()) + ", got " +
                               std::to_string(a.ndim()))
                                  .c_str());
      // An empty array has no layout to check (numpy gives it zero
      // strides).
      bool empty = a.size() == 0;
      int64_t stride = 1;
      std::vector<int64_t> sizes(shape.size()), strides(shape.size());
      for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
        sizes[d] = a.shape(d);
        if (shape[d] >= 0 && shape[d] != sizes[d])
          throw nb::value_error((where + "dim " + std::to_string(d) +
                                 " must be " + std::to_string(shape[d]) +
                                 ", got " + std::to_string(sizes[d]))
                                    .c_str());
        if (!empty && sizes[d] > 1 && a.stride(d) != stride)
          throw nb::value_error(
              (where + "the array must be C-contiguous").c_str());
        strides[d] = stride;
        stride *= sizes[d];
      }
      bool output = !outputsKnown || outputs[i];
      if (output && !arrays[i].writable)
        throw nb::value_error((where + "the array is read-only, but the "
                                       "kernel writes its results into it")
                                  .c_str());
      if (outputs[i]) {
        anyOutput = true;
        outputsEmpty &= empty;
      }
      shapes.push_back(sizes);
      auto data = reinterpret_cast<int64_t>(a.data());
      std::vector<int64_t> descriptor = {data, data, 0};
      descriptor.insert(descriptor.end(), sizes.begin(), sizes.end());
      descriptor.insert(descriptor.end(), strides.begin(), strides.end());
      descriptors.push_back(std::move(descriptor));
    }
    // The sizes' agreement (the shape contract the compiler derives): a
    // mismatch would read or write out of bounds.
    std::string mismatch = kernel->checkArguments(shapes);
    if (!mismatch.empty())
      throw nb::value_error(("attn: " + mismatch).c_str());
    if (outputsKnown && anyOutput && outputsEmpty)
      return;
    std::vector<void *> pointers;
    for (std::vector<int64_t> &descriptor : descriptors)
      pointers.push_back(descriptor.data());
    llvm::Error error = llvm::Error::success();
    {
      nb::gil_scoped_release release;
      error = kernel->invoke(pointers);
    }
    if (error)
      throw std::runtime_error("attn: " + llvm::toString(std::move(error)));
  }

  std::string name;
  std::vector<std::string> argTypes;
  std::vector<std::vector<int64_t>> argShapes;
  std::vector<std::string> argNames;
  /// Which arguments receive results; when !outputsKnown every argument is
  /// treated as one (must be writable).
  std::vector<bool> outputs;
  bool outputsKnown = true;
  std::shared_ptr<attn::CpuKernel> kernel;
};

} // namespace

NB_MODULE(_compiler, m) {
  m.doc() = "attn compiler: build, print, lower and JIT-run attn IR";

  nb::class_<Module>(m, "Module")
      .def_static("parse", &Module::parse, nb::arg("text"),
                  "Parses and verifies MLIR text holding attn ops.")
      .def("__str__", &Module::str)
      .def("clone", &Module::clone)
      .def("run_pipeline", &Module::runPipeline, nb::arg("pipeline"),
           "Runs a pass pipeline, e.g. 'attn-lower-to-nvvm{chip=sm_90}', on "
           "the module in place.")
      .def("ptx", &Module::ptx,
           "The PTX of every gpu.binary, by name (after attn-lower-to-nvvm).")
      .def("lower_to_nvvm", &Module::lowerToNvvm, nb::arg("chip"),
           nb::arg("q_tile") = 0, nb::arg("kv_tile") = 0,
           nb::arg("threads") = 128, nb::arg("format") = "isa",
           nb::arg("until") = "binary", nb::arg("bounds_checks") = false,
           nb::arg("strategy") = "auto",
           "Runs attn-lower-to-nvvm on the module in place, its options "
           "given as values (chip e.g. 'sm_90'; q_tile and kv_tile 0: chosen "
           "to fit the chip; format 'isa' or 'bin'; until "
           "'choose', 'tile', 'decompose', 'bufferize', 'gpu', 'nvvm' or "
           "'binary'; "
           "strategy 'auto' (per op, the fastest kernel the chip has that "
           "serves it), 'simt', 'mma-sync', 'wgmma' or 'wgmma-ws').")
      .def("lower_to_cpu", &Module::lowerToCpu, nb::arg("q_tile") = 64,
           nb::arg("kv_tile") = 64, nb::arg("row_tile") = 4096,
           nb::arg("until") = "llvm", nb::arg("bounds_checks") = true,
           "Runs attn-lower-to-cpu on the module in place (until 'tile', "
           "'decompose', 'bufferize', 'loops' or 'llvm').")
      .def("write_bundle", &Module::writeBundle, nb::arg("prefix"),
           "Writes <prefix>bundle.json and the kernels (after "
           "attn-lower-to-nvvm); raises ValueError on a module that was "
           "not lowered.")
      .def_prop_ro("functions", &Module::functions);

  m.def(
      "attention_source",
      [](const std::string &dtype, int64_t headDim, int64_t valueDim,
         bool causal, bool lse, const std::string &mask,
         const std::string &scoreMod, double scale, int64_t batch,
         int64_t queryHeads, int64_t kvHeads, int64_t queryLen, int64_t kvLen,
         int64_t givenBlockMask, bool backward, bool captureGrads,
         const std::string &traceMask, const std::string &traceScore,
         const std::string &traceCaptures,
         const std::vector<std::pair<std::string, std::string>> &traceWrt) {
        attn::VariantSpec spec;
        spec.traceMaskBody = traceMask;
        spec.traceScoreBody = traceScore;
        spec.traceCaptures = traceCaptures;
        spec.traceWrt = traceWrt;
        spec.dtype = dtype;
        spec.headDim = headDim;
        spec.valueDim = valueDim;
        spec.causal = causal;
        spec.logsumexp = lse;
        spec.mask = mask;
        spec.scoreMod = scoreMod;
        spec.scale = scale;
        spec.batch = batch;
        spec.queryHeads = queryHeads;
        spec.kvHeads = kvHeads;
        spec.queryLen = queryLen;
        spec.kvLen = kvLen;
        spec.givenBlockMask = givenBlockMask;
        spec.backward = backward;
        spec.captureGrads = captureGrads;
        auto text = attn::variantSource(spec);
        if (!text)
          throw nb::value_error(
              ("attn: " + llvm::toString(text.takeError())).c_str());
        return *text;
      },
      nb::arg("dtype"), nb::arg("head_dim"), nb::arg("value_dim"),
      nb::arg("causal"), nb::arg("lse"), nb::arg("mask"), nb::arg("score_mod"),
      nb::arg("scale"), nb::arg("batch"), nb::arg("query_heads"),
      nb::arg("kv_heads"), nb::arg("query_len"), nb::arg("kv_len"),
      nb::arg("given_block_mask"), nb::arg("backward") = false,
      nb::arg("capture_grads") = false, nb::arg("trace_mask") = "",
      nb::arg("trace_score") = "", nb::arg("trace_captures") = "",
      nb::arg("trace_wrt") =
          std::vector<std::pair<std::string, std::string>>());
  m.def(
      "block_mask_source",
      [](const std::string &mask, int64_t batch, int64_t heads,
         int64_t queryLen, int64_t kvLen, int64_t qBlock, int64_t kvBlock) {
        attn::VariantSpec spec;
        spec.mask = mask;
        spec.batch = batch;
        spec.queryHeads = heads;
        spec.queryLen = queryLen;
        spec.kvLen = kvLen;
        auto text = attn::blockMaskSource(spec, qBlock, kvBlock);
        if (!text)
          throw nb::value_error(
              ("attn: " + llvm::toString(text.takeError())).c_str());
        return *text;
      },
      nb::arg("mask"), nb::arg("batch"), nb::arg("heads"), nb::arg("query_len"),
      nb::arg("kv_len"), nb::arg("q_block"), nb::arg("kv_block"));
  m.def(
      "softmax_source",
      [](const std::string &dtype) {
        auto text = attn::softmaxSource(dtype);
        if (!text)
          throw nb::value_error(
              ("attn: " + llvm::toString(text.takeError())).c_str());
        return *text;
      },
      nb::arg("dtype"));

  nb::class_<CpuKernel>(m, "CpuKernel")
      .def_static("compile", &CpuKernel::compile, nb::arg("module"),
                  nb::arg("function") = "", nb::arg("q_tile") = 64,
                  nb::arg("kv_tile") = 64, nb::arg("row_tile") = 4096,
                  nb::arg("bounds_checks") = true)
      .def(
          "__call__",
          [](CpuKernel &kernel, nb::args args) {
            std::vector<Array> arrays;
            for (size_t i = 0; i < args.size(); ++i) {
              // Writable arrays first; read-only ones (fine for inputs) as
              // such, so that an output among them is refused by name.
              nb::ndarray<nb::device::cpu> writable;
              nb::ndarray<nb::ro, nb::device::cpu> readOnly;
              if (nb::try_cast(args[i], writable))
                arrays.push_back(
                    {nb::ndarray<nb::ro, nb::device::cpu>(writable), true});
              else if (nb::try_cast(args[i], readOnly))
                arrays.push_back({readOnly, false});
              else
                throw nb::type_error(("attn: " +
                                      (i < kernel.argNames.size()
                                           ? kernel.describe(i)
                                           : "argument " + std::to_string(i) +
                                                 " of @" + kernel.name) +
                                      ": expected a numpy array on the CPU")
                                         .c_str());
            }
            kernel.call(std::move(arrays));
          },
          "Runs the function on one C-contiguous numpy array per argument; "
          "outputs are written in place (they must be writable; inputs may "
          "be read-only).")
      .def_ro("name", &CpuKernel::name)
      .def_ro("arg_types", &CpuKernel::argTypes)
      .def_ro("arg_shapes", &CpuKernel::argShapes)
      .def_ro("arg_names", &CpuKernel::argNames);
  m.attr("_max_tile") = attn::kMaxTile;
}
