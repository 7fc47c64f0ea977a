//===- Computes.h - what a compiled function computes -----------*- C++ -*-===//
//
// attn-record-shape-contract records, next to the shape contract, what each
// attn op of a function computes (op, dtype, head dims, scale, causal, the
// mask and score mod regions by name and digest) while the ops still exist;
// attn-write-kernel-bundle copies it into the bundle, where runners read it
// instead of being told again (attn-bundle-run's reference).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_COMPUTES_H
#define ATTNDIALECT_TRANSFORMS_COMPUTES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::attn {

/// The function attribute: an array of one dictionary per attn op.
constexpr llvm::StringLiteral kComputesAttrName = "attn.computes";

/// Built-in region names on attn.attention (attn-run's --mask and
/// --score-mod, Python's mask= and score_mod=, e.g. "sliding-window:32"),
/// set by the code that builds the regions; a region written by hand has
/// none and is known by its digest only.
constexpr llvm::StringLiteral kMaskModNameAttrName = "attn.mask_mod_name";
constexpr llvm::StringLiteral kScoreModNameAttrName = "attn.score_mod_name";

/// What the attn ops of `func` compute, or null when it has none.
ArrayAttr computesAttr(func::FuncOp func);

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_COMPUTES_H
