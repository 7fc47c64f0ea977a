//===- Passes.h - attn ops to GPU kernels -----------------------*- C++ -*-===//

#ifndef ATTNDIALECT_CONVERSION_PASSES_H
#define ATTNDIALECT_CONVERSION_PASSES_H

#include "AttnDialect/Conversion/KernelStrategy.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {

#define GEN_PASS_DECL
#include "AttnDialect/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "AttnDialect/Conversion/Passes.h.inc"

} // namespace mlir::attn

#endif // ATTNDIALECT_CONVERSION_PASSES_H
