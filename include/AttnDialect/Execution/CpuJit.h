//===- CpuJit.h - attn functions compiled and run on the CPU ----*- C++ -*-===//
//
// Compiles a function of a module with attn-lower-to-cpu (after an optional
// transform-dialect script) and JIT-runs it with the MLIR ExecutionEngine on
// caller-owned buffers. Used by attn-run and the Python bindings.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_EXECUTION_CPUJIT_H
#define ATTNDIALECT_EXECUTION_CPUJIT_H

#include "AttnDialect/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace mlir {
class ExecutionEngine;
namespace attn {

class CpuKernel {
public:
  /// Compiles @`function` of `module` (the module is cloned, not changed).
  /// `transformFile`, when not empty, is a transform-dialect library whose
  /// @__transform_main runs first. Errors say which step failed; pipeline
  /// diagnostics go to the context's handler.
  static llvm::Expected<std::unique_ptr<CpuKernel>>
  compile(ModuleOp module, llvm::StringRef function,
          const CpuPipelineOptions &options,
          llvm::StringRef transformFile = "");
  ~CpuKernel();

  /// Runs the function on one strided memref descriptor per argument (the
  /// layout of `StridedMemRefType`); results are written in place into the
  /// `outs` buffers.
  llvm::Error invoke(llvm::ArrayRef<void *> descriptors);

  unsigned numArguments() const { return numArguments_; }

private:
  CpuKernel() = default;
  std::unique_ptr<ExecutionEngine> engine;
  std::string entry;
  unsigned numArguments_ = 0;
};

} // namespace attn
} // namespace mlir

#endif // ATTNDIALECT_EXECUTION_CPUJIT_H
