//===- Passes.h - dialect-level attn passes ---------------------*- C++ -*-===//

#ifndef ATTNDIALECT_TRANSFORMS_PASSES_H
#define ATTNDIALECT_TRANSFORMS_PASSES_H

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

/// The host function that attn-decompose-attention's bounds checks call on
/// the CPU: (error, region, argument, dim, index, size), all i64; error 1 is
/// a read out of bounds (region 0 is score_mod, 1 mask_mod), 2 a division
/// by zero and 3 a signed division that overflows (index is the dividend,
/// size the divisor). The CPU runner defines it.
constexpr llvm::StringLiteral kRegionErrorFunction = "attnReportRegionError";

#define GEN_PASS_DECL
#include "AttnDialect/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "AttnDialect/Transforms/Passes.h.inc"

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_PASSES_H
