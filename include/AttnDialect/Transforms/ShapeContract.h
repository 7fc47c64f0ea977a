//===- ShapeContract.h - ties between argument sizes of attn functions ----===//
//
// The compiler's side of attn_runtime::ShapeContract: which dynamic sizes of
// a function's arguments its attn ops tie together (Q/K/V/out/lse batch,
// heads, lengths; GQA divisibility; captured tensors indexed by a position;
// block masks built for the attention that uses them).
// The runtime checks actual shapes against it before every launch.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_SHAPECONTRACT_H
#define ATTNDIALECT_TRANSFORMS_SHAPECONTRACT_H

#include "AttnRuntime/ShapeCheck.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::attn {

/// The function attribute attn-record-shape-contract attaches.
constexpr llvm::StringLiteral kShapeContractAttrName = "attn.shape_contract";

/// The contract of `func`'s arguments from the attn ops that read and write
/// them directly (operands that are block arguments of `func`), and from
/// the block masks its attention ops use: a mask's batch and heads are 1 or
/// the attention's, its lengths (or rows) cover the attention's. Fails,
/// with an error at the op, where fixed sizes disagree or a size is neither
/// fixed nor an argument's dim, so that no check could hold it.
FailureOr<attn_runtime::ShapeContract> computeShapeContract(func::FuncOp func);

/// The contract as a dictionary attribute, and back (argDims come from the
/// function's argument types, not the attribute). Failure when the
/// attribute is malformed for `func`.
DictionaryAttr shapeContractToAttr(MLIRContext *context,
                                   const attn_runtime::ShapeContract &contract);
FailureOr<attn_runtime::ShapeContract>
shapeContractFromAttr(func::FuncOp func, DictionaryAttr attr);

/// The static sizes of `func`'s arguments (-1 for dynamic ones), or failure
/// naming the first argument that is not a ranked tensor or memref.
FailureOr<std::vector<std::vector<int64_t>>> argumentDims(func::FuncOp func);

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_SHAPECONTRACT_H
