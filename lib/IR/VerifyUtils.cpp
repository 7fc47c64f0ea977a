//===- VerifyUtils.cpp - checks the attn ops' verifiers share -------------===//

#include "VerifyUtils.h"
#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace mlir::attn::detail {

/// Element types that attention and softmax read and write.
bool isSupportedFloat(Type type) {
  return type.isF16() || type.isBF16() || type.isF32();
}

LogicalResult verifyRank(Operation *op, StringRef name, RankedTensorType type,
                         int64_t rank, StringRef layout) {
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << "expected " << name << " to have rank " << rank
                           << " (" << layout << "), but got " << type;
}

/// Checks that dim `bi` of `b` equals dim `ai` of `a` where both are static.
LogicalResult verifySameDim(Operation *op, StringRef what, StringRef aName,
                            RankedTensorType a, unsigned ai, StringRef bName,
                            RankedTensorType b, unsigned bi) {
  int64_t x = a.getDimSize(ai), y = b.getDimSize(bi);
  if (ShapedType::isDynamic(x) || ShapedType::isDynamic(y) || x == y)
    return success();
  return op->emitOpError() << "expected " << bName << " dim " << bi << " ("
                           << what << ") to equal " << aName << " dim " << ai
                           << " (" << x << "), but got " << y;
}

/// A logsumexp output: rank 3 (`layout`) and f32.
LogicalResult verifyLogsumexp(Operation *op, RankedTensorType lse,
                              StringRef layout) {
  if (failed(verifyRank(op, "logsumexp", lse, 3, layout)))
    return failure();
  if (!lse.getElementType().isF32())
    return op->emitOpError()
           << "expected logsumexp element type to be f32, but got "
           << lse.getElementType();
  return success();
}

/// Destination-style results: one per output, of the output's type.
LogicalResult verifyResultsMatchOutputs(Operation *op, ValueRange results,
                                        ValueRange outputs) {
  if (results.size() != outputs.size())
    return op->emitOpError()
           << "expected one result per output (" << outputs.size()
           << "), but got " << results.size();
  for (auto [i, result, init] : llvm::enumerate(results, outputs))
    if (result.getType() != init.getType())
      return op->emitOpError()
             << "expected result #" << i << " type to equal output #" << i
             << " type " << init.getType() << ", but got " << result.getType();
  return success();
}

/// Head dimensions are static (they size registers and shared memory) and in
/// the range tensor-core kernels handle.
LogicalResult verifyHeadDim(Operation *op, StringRef name,
                            RankedTensorType type) {
  int64_t dim = type.getDimSize(3);
  if (ShapedType::isDynamic(dim))
    return op->emitOpError() << "expected a static head dim (dim 3) in " << name
                             << ", but got " << type;
  if (dim < 16 || dim > 256 || dim % 8 != 0)
    return op->emitOpError()
           << "expected the head dim of " << name
           << " to be a multiple of 8 from 16 to 256, but got " << dim;
  return success();
}

LogicalResult verifyScale(Operation *op, float scale) {
  if (std::isfinite(scale) && scale > 0.0f)
    return success();
  return op->emitOpError()
         << "expected scale to be a finite positive number, but got " << scale;
}

LogicalResult verifyGroupedHeads(Operation *op, RankedTensorType q,
                                 RankedTensorType k) {
  int64_t hq = q.getDimSize(1), hkv = k.getDimSize(1);
  if (ShapedType::isDynamic(hq) || ShapedType::isDynamic(hkv) ||
      (hkv != 0 && hq % hkv == 0))
    return success();
  return op->emitOpError() << "expected query heads (" << hq
                           << ") to be a multiple of key/value heads (" << hkv
                           << ")";
}

std::string typeListString(TypeRange types) {
  std::string str;
  llvm::raw_string_ostream os(str);
  os << "(";
  llvm::interleaveComma(types, os);
  os << ")";
  return str;
}

/// A scalar type every lowering of a region can compute in, or a ranked
/// tensor of one (a table captured from the function's arguments).
bool isRegionComputableType(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    type = tensor.getElementType();
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.getWidth() <= 64;
  return isa<IndexType, Float16Type, BFloat16Type, Float32Type, Float64Type>(
      type);
}

/// Checks a score_mod/mask_mod region: its block arguments, its yield, the
/// types it computes with and that it has no side effects. `what` names the
/// arguments for the message.
LogicalResult verifyModRegion(Operation *op, Region &region, StringRef name,
                              ArrayRef<Type> argTypes, Type yieldType,
                              StringRef what) {
  Block &block = region.front();
  if (block.getArgumentTypes() != TypeRange(argTypes))
    return op->emitOpError()
           << "expected " << name << " to take " << typeListString(argTypes)
           << " " << what << ", but it takes "
           << typeListString(block.getArgumentTypes());

  auto yield =
      dyn_cast_or_null<YieldOp>(block.empty() ? nullptr : &block.back());
  if (!yield)
    return op->emitOpError()
           << "expected " << name << " to end with 'attn.yield'";
  if (yield.getValues().getTypes() != TypeRange(yieldType))
    return yield.emitOpError() << "expected " << name << " to yield one "
                               << yieldType << ", but it yields "
                               << typeListString(yield.getValues().getTypes());

  // Tiled lowerings evaluate the region per element, in any order and any
  // number of times (once per block of a block mask too): only pure
  // computations give one answer.
  for (Operation &nested : block.without_terminator()) {
    if (!isMemoryEffectFree(&nested))
      return nested.emitOpError()
             << "has side effects, but " << name << " of '" << op->getName()
             << "' must be free of side effects";
  }

  // Every lowering computes regions in scalars the CPU and the GPU both
  // have; an f8 or vector value would pass here and fail inside LLVM.
  WalkResult types = region.walk([&](Operation *nested) {
    // Kernels read tables from the function's arguments; a tensor made
    // inside the region would have to live in every kernel's memory.
    for (Type type : nested->getResultTypes())
      if (isa<ShapedType>(type)) {
        nested->emitOpError()
            << "makes a " << type << " inside " << name << " of '"
            << op->getName()
            << "'; a region reads tensors only from the function's "
               "arguments (pass the table as one)";
        return WalkResult::interrupt();
      }
    for (ValueRange values :
         {ValueRange(nested->getOperands()), ValueRange(nested->getResults())})
      for (Value value : values)
        if (!isRegionComputableType(value.getType())) {
          nested->emitOpError()
              << "computes with " << value.getType() << ", but " << name
              << " of '" << op->getName()
              << "' may use only index, i1 to i64, f16, bf16, f32 and f64 "
                 "values and ranked tensors of them";
          return WalkResult::interrupt();
        }
    return WalkResult::advance();
  });
  return failure(types.wasInterrupted());
}

} // namespace mlir::attn::detail
