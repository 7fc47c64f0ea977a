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
#include "AttnRuntime/ShapeCheck.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

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
  /// `outs` buffers. The sizes in the descriptors are checked against the
  /// function's shape contract first; with bounds checks compiled in, a
  /// region's bad read or division is an error after the call.
  llvm::Error invoke(llvm::ArrayRef<void *> descriptors);

  /// Empty when `shapes` (one per argument) satisfy the function's shape
  /// contract, else a message naming both arguments and both sizes.
  std::string
  checkArguments(const std::vector<std::vector<int64_t>> &shapes) const;

  unsigned numArguments() const { return numArguments_; }
  const attn_runtime::ShapeContract &shapeContract() const { return contract; }

private:
  CpuKernel() = default;
  std::unique_ptr<ExecutionEngine> engine;
  std::string entry;
  unsigned numArguments_ = 0;
  attn_runtime::ShapeContract contract;
  std::vector<int64_t> elementBytes;
};

} // namespace attn
} // namespace mlir

#endif // ATTNDIALECT_EXECUTION_CPUJIT_H
