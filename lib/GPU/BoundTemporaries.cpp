//===- BoundTemporaries.cpp - static sizes for kernel temporaries ---------===//
//
// Kernels cannot allocate: every buffer a block or a thread uses must have a
// size known when the kernel is compiled. Tiles clipped at the edge of a
// dynamic problem (the last kv-tile, say) have dynamic sizes with static
// bounds; this pass sizes their storage by the bound and works on a slice of
// it. A block's temporaries are placed in workgroup (shared) memory.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/GPU/Passes.h"
#include "ForallMapping.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace mlir::attn {
#define GEN_PASS_DEF_BOUNDTEMPORARIES
#include "AttnDialect/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct BoundTemporariesPass
    : attn::impl::BoundTemporariesBase<BoundTemporariesPass> {
  void runOnOperation() override {
    SmallVector<tensor::EmptyOp> empties;
    getOperation()->walk([&](tensor::EmptyOp empty) {
      if (isInsideForallMappedTo<gpu::GPUThreadMappingAttr>(empty)
              ? !empty.getType().hasStaticShape()
              : isInsideForallMappedTo<gpu::GPUBlockMappingAttr>(empty))
        empties.push_back(empty);
    });

    IRRewriter rewriter(&getContext());
    // CSE merges identical tensor.empty ops; bufferization then gives all
    // but one of their users a fresh buffer of the dynamic size. One empty
    // per use keeps every buffer bounded.
    for (tensor::EmptyOp empty : llvm::to_vector(empties)) {
      for (OpOperand &use :
           llvm::make_early_inc_range(llvm::drop_begin(empty->getUses()))) {
        rewriter.setInsertionPoint(empty);
        auto copy = cast<tensor::EmptyOp>(rewriter.clone(*empty));
        rewriter.modifyOpInPlace(use.getOwner(),
                                 [&] { use.set(copy.getResult()); });
        empties.push_back(copy);
      }
    }

    for (tensor::EmptyOp empty : empties) {
      RankedTensorType type = empty.getType();
      SmallVector<int64_t> bounds;
      for (int64_t dim = 0; dim < type.getRank(); ++dim) {
        if (!type.isDynamicDim(dim)) {
          bounds.push_back(type.getDimSize(dim));
          continue;
        }
        FailureOr<int64_t> bound =
            ValueBoundsConstraintSet::computeConstantBound(
                presburger::BoundType::UB,
                ValueBoundsConstraintSet::Variable(empty.getResult(), dim),
                /*stopCondition=*/nullptr, /*closedUB=*/true);
        if (failed(bound)) {
          empty.emitOpError()
              << "is a temporary of a GPU kernel whose dim " << dim
              << " has no constant upper bound; kernels cannot allocate";
          return signalPassFailure();
        }
        bounds.push_back(*bound);
      }
      rewriter.setInsertionPoint(empty);
      Value storage;
      if (isInsideForallMappedTo<gpu::GPUThreadMappingAttr>(empty)) {
        storage = tensor::EmptyOp::create(rewriter, empty.getLoc(), bounds,
                                          type.getElementType());
      } else {
        auto alloc = bufferization::AllocTensorOp::create(
            rewriter, empty.getLoc(),
            RankedTensorType::get(bounds, type.getElementType()), ValueRange());
        alloc.setMemorySpaceAttr(gpu::AddressSpaceAttr::get(
            &getContext(), gpu::AddressSpace::Workgroup));
        storage = alloc;
      }
      if (type.hasStaticShape()) {
        rewriter.replaceOp(empty, storage);
        continue;
      }
      SmallVector<OpFoldResult> offsets(type.getRank(),
                                        rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> strides(type.getRank(),
                                        rewriter.getIndexAttr(1));
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          empty, type, storage, offsets, empty.getMixedSizes(), strides);
    }
  }
};

} // namespace
