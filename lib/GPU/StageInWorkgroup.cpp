//===- StageInWorkgroup.cpp - a block's global tiles in shared memory -----===//
//
// Inside the GPU grid, the block's threads work on whole tiles together: a
// tile of Q, K or V that linalg ops read from global memory is copied once
// into workgroup memory (by all threads, after thread distribution) and read
// from there by every thread that needs it. Rows of the staged tile are
// padded by one 4-byte word when they are a multiple of 128 bytes long, so
// that threads reading down a column hit different shared-memory banks.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/GPU/Passes.h"
#include "ForallMapping.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace mlir::attn {
#define GEN_PASS_DEF_STAGEINWORKGROUP
#include "AttnDialect/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

bool isWorkgroup(MemRefType type) {
  auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Workgroup;
}

/// Whether every use of `value` is a read by a linalg op (an input operand).
bool onlyReadByLinalg(Value value) {
  return !value.use_empty() &&
         llvm::all_of(value.getUses(), [](OpOperand &use) {
           auto linalgOp = dyn_cast<linalg::LinalgOp>(use.getOwner());
           return linalgOp && linalgOp.isDpsInput(&use);
         });
}

struct StageInWorkgroupPass
    : attn::impl::StageInWorkgroupBase<StageInWorkgroupPass> {
  void runOnOperation() override {
    SmallVector<memref::SubViewOp> tiles;
    getOperation()->walk([&](memref::SubViewOp subview) {
      if (isInsideForallMappedTo<gpu::GPUBlockMappingAttr>(subview) &&
          !isInsideForallMappedTo<gpu::GPUThreadMappingAttr>(subview) &&
          !isWorkgroup(subview.getType()) && onlyReadByLinalg(subview))
        tiles.push_back(subview);
    });
    IRRewriter rewriter(&getContext());
    for (memref::SubViewOp tile : tiles)
      if (failed(stage(rewriter, tile)))
        return signalPassFailure();
  }

  LogicalResult stage(RewriterBase &rewriter, memref::SubViewOp tile) {
    Location loc = tile.getLoc();
    MemRefType type = tile.getType();
    rewriter.setInsertionPointAfter(tile);
    SmallVector<OpFoldResult> sizes =
        memref::getMixedSizes(rewriter, loc, tile.getResult());

    // Storage of the tile's constant bounds, the last dim padded.
    SmallVector<int64_t> bounds;
    for (int64_t dim = 0; dim < type.getRank(); ++dim) {
      if (!type.isDynamicDim(dim)) {
        bounds.push_back(type.getDimSize(dim));
        continue;
      }
      FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
          presburger::BoundType::UB,
          ValueBoundsConstraintSet::Variable(tile.getResult(), dim),
          /*stopCondition=*/nullptr, /*closedUB=*/true);
      if (failed(bound))
        return tile.emitOpError()
               << "is a tile read by a GPU block whose dim " << dim
               << " has no constant upper bound; it cannot be staged in "
                  "shared memory";
      bounds.push_back(*bound);
    }
    int64_t elementBytes = type.getElementTypeBitWidth() / 8;
    SmallVector<int64_t> storageShape = bounds;
    if (type.getRank() >= 2 && elementBytes > 0 && elementBytes <= 4 &&
        (bounds.back() * elementBytes) % 128 == 0)
      storageShape.back() += 4 / elementBytes;
    Attribute workgroup =
        gpu::AddressSpaceAttr::get(&getContext(), gpu::AddressSpace::Workgroup);
    auto storageType = MemRefType::get(storageShape, type.getElementType(),
                                       MemRefLayoutAttrInterface(), workgroup);
    Value storage = memref::AllocOp::create(rewriter, loc, storageType);
    SmallVector<OpFoldResult> zeros(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> ones(type.getRank(), rewriter.getIndexAttr(1));
    Value staged =
        memref::SubViewOp::create(rewriter, loc, storage, zeros, sizes, ones);
    auto copy = linalg::CopyOp::create(rewriter, loc, tile.getResult(), staged);
    rewriter.replaceUsesWithIf(tile.getResult(), staged, [&](OpOperand &use) {
      return use.getOwner() != copy;
    });
    return success();
  }
};

} // namespace
