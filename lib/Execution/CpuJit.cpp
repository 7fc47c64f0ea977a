//===- CpuJit.cpp - attn functions compiled and run on the CPU ------------===//

#include "AttnDialect/Execution/CpuJit.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;
using namespace mlir::attn;

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

CpuKernel::~CpuKernel() = default;

llvm::Expected<std::unique_ptr<CpuKernel>>
CpuKernel::compile(ModuleOp module, llvm::StringRef function,
                   const CpuPipelineOptions &options,
                   llvm::StringRef transformFile) {
  auto func = module.lookupSymbol<func::FuncOp>(function);
  if (!func)
    return error("the module has no func.func @" + function);
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
  return kernel;
}

llvm::Error CpuKernel::invoke(llvm::ArrayRef<void *> descriptors) {
  if (descriptors.size() != numArguments_)
    return error("expected " + llvm::Twine(numArguments_) +
                 " buffers, one per argument, but got " +
                 llvm::Twine(descriptors.size()));
  // The C interface takes a pointer to each memref descriptor.
  llvm::SmallVector<void *> holders(descriptors.begin(), descriptors.end());
  llvm::SmallVector<void *> packed;
  for (void *&descriptor : holders)
    packed.push_back(&descriptor);
  if (llvm::Error err = engine->invokePacked(entry, packed))
    return error("running the kernel failed: " +
                 llvm::toString(std::move(err)));
  return llvm::Error::success();
}
