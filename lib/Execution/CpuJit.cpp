//===- CpuJit.cpp - attn functions compiled and run on the CPU ------------===//

#include "AttnDialect/Execution/CpuJit.h"
#include "AttnDialect/Transforms/Passes.h"
#include "AttnDialect/Transforms/ShapeContract.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;
using namespace mlir::attn;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {
/// The first failed region check of the current call (kernels run on the
/// calling thread).
struct RegionErrorRecord {
  bool set = false;
  int64_t error = 0, region = 0, argument = 0, dim = 0, index = 0, size = 0;
};
thread_local RegionErrorRecord regionError;

/// attnReportRegionError, which bounds-checked kernels call.
extern "C" void reportRegionError(int64_t error, int64_t region,
                                  int64_t argument, int64_t dim, int64_t index,
                                  int64_t size) {
  if (!regionError.set)
    regionError = {true, error, region, argument, dim, index, size};
}

std::string describeRegionError(const RegionErrorRecord &record,
                                const attn_runtime::ShapeContract &contract) {
  std::string region = record.region == 0 ? "score_mod" : "mask_mod";
  switch (record.error) {
  case 1: {
    std::string tensor = record.argument >= 0
                             ? contract.argName(record.argument)
                             : std::string("a captured constant tensor");
    return region + " reads " + tensor + " at index " +
           std::to_string(record.index) + " of dim " +
           std::to_string(record.dim) + ", whose size is " +
           std::to_string(record.size);
  }
  case 2:
    return region + " divides " + std::to_string(record.index) + " by zero";
  default:
    return region + " divides " + std::to_string(record.index) +
           " by -1, which overflows";
  }
}

int64_t bytesOf(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  Type element = shaped ? shaped.getElementType() : type;
  if (element.isIndex())
    return 8;
  return std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
}
} // namespace

CpuKernel::~CpuKernel() = default;

llvm::Expected<std::unique_ptr<CpuKernel>>
CpuKernel::compile(ModuleOp module, llvm::StringRef function,
                   const CpuPipelineOptions &options,
                   llvm::StringRef transformFile) {
  auto func = module.lookupSymbol<func::FuncOp>(function);
  if (!func)
    return error("the module has no func.func @" + function);
  // The C interface takes one memref descriptor per argument and returns
  // nothing: a scalar argument or result would need another calling
  // convention.
  auto text = [](Type type) {
    std::string printed;
    llvm::raw_string_ostream(printed) << type;
    return printed;
  };
  for (Type type : func.getArgumentTypes())
    if (!isa<RankedTensorType, MemRefType>(type))
      return error("@" + function + " takes " + text(type) +
                   "; compiled functions take only ranked tensors");
  for (Type type : func.getResultTypes())
    if (!isa<RankedTensorType, MemRefType>(type))
      return error("@" + function + " returns " + text(type) +
                   "; compiled functions return only the tensors their attn "
                   "ops write in place");
  OwningOpRef<ModuleOp> compiled = module.clone();
  // Upstream drops results that are just the outs buffers only from private
  // functions; then the C interface takes the buffers and returns nothing.
  compiled->lookupSymbol<func::FuncOp>(function).setPrivate();

  PassManager pm(module.getContext());
  if (!transformFile.empty()) {
    if (!llvm::sys::fs::exists(transformFile))
      return error("no transform file '" + transformFile + "'");
    if (failed(parsePassPipeline(
            ("transform-preload-library{transform-library-paths=" +
             transformFile + "},transform-interpreter")
                .str(),
            pm)))
      return error("cannot build the transform interpreter");
  }
  std::string pipelineError;
  if (failed(buildCpuPipeline(pm, options, [&](const llvm::Twine &msg) {
        pipelineError = msg.str();
        return failure();
      })))
    return error(pipelineError);
  if (failed(pm.run(*compiled)))
    return error("compilation failed (see the diagnostics above)");

  std::unique_ptr<CpuKernel> kernel(new CpuKernel());
  kernel->entry = ("_mlir_ciface_" + function).str();
  auto llvmFunc = compiled->lookupSymbol<LLVM::LLVMFuncOp>(kernel->entry);
  if (!llvmFunc)
    return error("the compiled module has no C interface for @" + function);
  kernel->numArguments_ = func.getNumArguments();
  if (llvmFunc.getNumArguments() != func.getNumArguments())
    return error("@" + function +
                 " must return only the results of its attn op (written in "
                 "place into its outs)");

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(3, 0, nullptr);
  engineOptions.transformer = transformer;
  // JIT-compiled code calls memrefCopy and friends from MLIR's C runner
  // utils.
  llvm::StringRef sharedLibs[] = {ATTN_C_RUNNER_UTILS};
  engineOptions.sharedLibPaths = sharedLibs;
  auto engine = ExecutionEngine::create(*compiled, engineOptions);
  if (!engine)
    return error("JIT compilation failed: " +
                 llvm::toString(engine.takeError()));
  kernel->engine = std::move(*engine);
  // llvm-request-c-wrappers marks the declaration too, so calls may go to
  // its C-interface name; with only scalar arguments both are the same.
  kernel->engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    for (std::string name : {kRegionErrorFunction.str(),
                             "_mlir_ciface_" + kRegionErrorFunction.str()})
      symbols[interner(name)] = {
          llvm::orc::ExecutorAddr::fromPtr(&reportRegionError),
          llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  // The pipeline's first pass computed it on the clone and refused it there.
  FailureOr<attn_runtime::ShapeContract> contract = computeShapeContract(func);
  if (failed(contract))
    return error("the function's shapes cannot be checked (see the "
                 "diagnostics above)");
  kernel->contract = std::move(*contract);
  for (Type type : func.getArgumentTypes())
    kernel->elementBytes.push_back(bytesOf(type));
  return kernel;
}

std::string CpuKernel::checkArguments(
    const std::vector<std::vector<int64_t>> &shapes) const {
  return contract.check(shapes, elementBytes);
}

llvm::Error CpuKernel::invoke(llvm::ArrayRef<void *> descriptors) {
  if (descriptors.size() != numArguments_)
    return error("expected " + llvm::Twine(numArguments_) +
                 " buffers, one per argument, but got " +
                 llvm::Twine(descriptors.size()));
  // Each descriptor is {allocated, aligned, offset, sizes[rank],
  // strides[rank]}: its sizes are checked before anything runs.
  std::vector<std::vector<int64_t>> shapes;
  for (auto [descriptor, dims] : llvm::zip(descriptors, contract.argDims)) {
    const int64_t *words = static_cast<const int64_t *>(descriptor);
    shapes.emplace_back(words + 3, words + 3 + dims.size());
  }
  std::string mismatch = checkArguments(shapes);
  if (!mismatch.empty())
    return error(mismatch);
  // The C interface takes a pointer to each memref descriptor.
  llvm::SmallVector<void *> holders(descriptors.begin(), descriptors.end());
  llvm::SmallVector<void *> packed;
  for (void *&descriptor : holders)
    packed.push_back(&descriptor);
  regionError = {};
  if (llvm::Error err = engine->invokePacked(entry, packed))
    return error("running the kernel failed: " +
                 llvm::toString(std::move(err)));
  if (regionError.set)
    return error(describeRegionError(regionError, contract));
  return llvm::Error::success();
}
