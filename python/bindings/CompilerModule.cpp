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
#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/Pipelines/Pipelines.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
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
    registry.insert<attn::AttnDialect>();
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registerAllToLLVMIRTranslations(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    registerAllPasses();
    attn::registerAttnPasses();
    attn::registerAttnPipelines();
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
                            "attn-lower-to-nvvm{chip=... format=isa} first");
    return out;
  }

  void writeBundle(const std::string &prefix) {
    runPipeline("attn-write-kernel-bundle{prefix=" + prefix + "}");
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

class CpuKernel {
public:
  static CpuKernel compile(Module &module, const std::string &function,
                           int64_t qTile, int64_t kvTile, int64_t rowTile) {
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
    Diagnostics diags;
    attn::CpuPipelineOptions options;
    options.qTile = qTile;
    options.kvTile = kvTile;
    options.rowTile = rowTile;
    auto compiled = attn::CpuKernel::compile(*module.module, name, options);
    if (!compiled)
      throw std::runtime_error("attn: " + llvm::toString(compiled.takeError()) +
                               "\n" + diags.text);
    kernel.kernel = std::shared_ptr<attn::CpuKernel>(std::move(*compiled));
    return kernel;
  }

  /// Runs on numpy arrays, one per argument, in place.
  void call(std::vector<nb::ndarray<nb::device::cpu>> arrays) {
    if (arrays.size() != argTypes.size())
      throw nb::type_error(("attn: @" + name + " takes " +
                            std::to_string(argTypes.size()) + " arrays, got " +
                            std::to_string(arrays.size()))
                               .c_str());
    // Strided memref descriptors: allocated, aligned, offset, sizes,
    // strides (64-bit words).
    std::vector<std::vector<int64_t>> descriptors;
    for (size_t i = 0; i < arrays.size(); ++i) {
      nb::ndarray<nb::device::cpu> &a = arrays[i];
      const std::vector<int64_t> &shape = argShapes[i];
      std::string where =
          "attn: argument " + std::to_string(i) + " of @" + name + ": ";
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
      int64_t stride = 1;
      std::vector<int64_t> sizes(shape.size()), strides(shape.size());
      for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
        sizes[d] = a.shape(d);
        if (shape[d] >= 0 && shape[d] != sizes[d])
          throw nb::value_error((where + "dim " + std::to_string(d) +
                                 " must be " + std::to_string(shape[d]) +
                                 ", got " + std::to_string(sizes[d]))
                                    .c_str());
        if (sizes[d] > 1 && a.stride(d) != stride)
          throw nb::value_error(
              (where + "the array must be C-contiguous").c_str());
        strides[d] = stride;
        stride *= sizes[d];
      }
      std::vector<int64_t> descriptor = {reinterpret_cast<int64_t>(a.data()),
                                         reinterpret_cast<int64_t>(a.data()),
                                         0};
      descriptor.insert(descriptor.end(), sizes.begin(), sizes.end());
      descriptor.insert(descriptor.end(), strides.begin(), strides.end());
      descriptors.push_back(std::move(descriptor));
    }
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
      .def("write_bundle", &Module::writeBundle, nb::arg("prefix"),
           "Writes <prefix>bundle.json and the kernels (after "
           "attn-lower-to-nvvm).")
      .def_prop_ro("functions", &Module::functions);

  m.def(
      "attention_source",
      [](const std::string &dtype, int64_t headDim, int64_t valueDim,
         bool causal, bool lse, const std::string &mask,
         const std::string &scoreMod, double scale, int64_t batch,
         int64_t queryHeads, int64_t kvHeads, int64_t queryLen, int64_t kvLen) {
        attn::VariantSpec spec;
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
        auto text = attn::variantSource(spec);
        if (!text)
          throw nb::value_error(
              ("attn: " + llvm::toString(text.takeError())).c_str());
        return *text;
      },
      nb::arg("dtype"), nb::arg("head_dim"), nb::arg("value_dim"),
      nb::arg("causal"), nb::arg("lse"), nb::arg("mask"), nb::arg("score_mod"),
      nb::arg("scale"), nb::arg("batch"), nb::arg("query_heads"),
      nb::arg("kv_heads"), nb::arg("query_len"), nb::arg("kv_len"));
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
                  nb::arg("kv_tile") = 64, nb::arg("row_tile") = 4096)
      .def(
          "__call__",
          [](CpuKernel &kernel, nb::args args) {
            std::vector<nb::ndarray<nb::device::cpu>> arrays;
            for (size_t i = 0; i < args.size(); ++i) {
              nb::ndarray<nb::device::cpu> array;
              if (!nb::try_cast(args[i], array))
                throw nb::type_error(("attn: argument " + std::to_string(i) +
                                      " of @" + kernel.name +
                                      ": expected a numpy array on the CPU")
                                         .c_str());
              arrays.push_back(array);
            }
            kernel.call(std::move(arrays));
          },
          "Runs the function on one C-contiguous numpy array per argument; "
          "outputs are written in place.")
      .def_ro("name", &CpuKernel::name)
      .def_ro("arg_types", &CpuKernel::argTypes)
      .def_ro("arg_shapes", &CpuKernel::argShapes);
}
