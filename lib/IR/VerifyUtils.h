//===- VerifyUtils.h - checks the attn ops' verifiers share -----*- C++ -*-===//
//
// Verifiers name the operand at fault and what was expected against what was
// found, so that a user reading one diagnostic can fix the IR.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_LIB_IR_VERIFYUTILS_H
#define ATTNDIALECT_LIB_IR_VERIFYUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::attn::detail {

/// Element types that attention and softmax read and write.
bool isSupportedFloat(Type type);
/// `type` has rank `rank`; `layout` names its dims for the message.
LogicalResult verifyRank(Operation *op, StringRef name, RankedTensorType type,
                         int64_t rank, StringRef layout);
/// Dim `bi` of `b` equals dim `ai` of `a` where both are static.
LogicalResult verifySameDim(Operation *op, StringRef what, StringRef aName,
                            RankedTensorType a, unsigned ai, StringRef bName,
                            RankedTensorType b, unsigned bi);
/// A logsumexp: rank 3 (`layout`) and f32.
LogicalResult verifyLogsumexp(Operation *op, RankedTensorType lse,
                              StringRef layout);
/// Destination-style results: one per output, of the output's type.
LogicalResult verifyResultsMatchOutputs(Operation *op, ValueRange results,
                                        ValueRange outputs);
/// A static head dim (dim 3), a multiple of 8 from 16 to 256.
LogicalResult verifyHeadDim(Operation *op, StringRef name,
                            RankedTensorType type);
/// A finite positive scale.
LogicalResult verifyScale(Operation *op, float scale);
/// Query heads (dim 1 of `q`) a multiple of key/value heads (of `k`) where
/// both are static.
LogicalResult verifyGroupedHeads(Operation *op, RankedTensorType q,
                                 RankedTensorType k);
/// "(t0, t1, ...)".
std::string typeListString(TypeRange types);
/// A score_mod/mask_mod region: its block arguments (`argTypes`, named by
/// `what`), its yield, the types it computes with, no side effects.
LogicalResult verifyModRegion(Operation *op, Region &region, StringRef name,
                              ArrayRef<Type> argTypes, Type yieldType,
                              StringRef what);

} // namespace mlir::attn::detail

#endif // ATTNDIALECT_LIB_IR_VERIFYUTILS_H
