//===- Passes.h - NVVM fix-ups ----------------------------------*- C++ -*-===//

#ifndef ATTNDIALECT_TARGET_NVVM_PASSES_H
#define ATTNDIALECT_TARGET_NVVM_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {

/// The mark attn-min-blocks-per-sm turns into a kernel's nvvm.minctasm.
constexpr llvm::StringLiteral kMinBlocksPerSmAttrName =
    "attn.min_blocks_per_sm";

#define GEN_PASS_DECL
#include "AttnDialect/Target/NVVM/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "AttnDialect/Target/NVVM/Passes.h.inc"

} // namespace mlir::attn

#endif // ATTNDIALECT_TARGET_NVVM_PASSES_H
