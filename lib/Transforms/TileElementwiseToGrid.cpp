//===- TileElementwiseToGrid.cpp - elementwise linalg ops to a GPU grid ---===//
//
// A GPU function runs nothing on the host: an elementwise linalg op between
// attention ops (a block mask's lists copied into a result, a fill) gets a
// grid of its own, tiled with upstream's scf::tileUsingSCF like the
// attention grid.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_TILEELEMENTWISETOGRID
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct TileElementwiseToGridPass
    : attn::impl::TileElementwiseToGridBase<TileElementwiseToGridPass> {
  using TileElementwiseToGridBase::TileElementwiseToGridBase;

  void runOnOperation() override {
    if (rowTile <= 0) {
      getOperation()->emitError()
          << "attn-tile-elementwise-to-grid: row-tile must be positive, got "
          << static_cast<int64_t>(rowTile);
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.getNumLoops() > 0 &&
          op.getNumLoops() == op.getNumParallelLoops() &&
          !op->getParentOfType<scf::ForallOp>())
        ops.push_back(op);
    });
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    IRRewriter rewriter(ctx);
    const gpu::MappingId ids[] = {gpu::MappingId::DimX, gpu::MappingId::DimY,
                                  gpu::MappingId::DimZ};
    for (linalg::LinalgOp op : ops) {
      // Innermost dim by row-tile, the two above it by 1, the rest whole;
      // the innermost tiled dim on x.
      int64_t loops = op.getNumLoops();
      SmallVector<OpFoldResult> sizes(loops, b.getIndexAttr(0));
      SmallVector<Attribute> mapping;
      for (int64_t i = 0; i < std::min<int64_t>(loops, 3); ++i) {
        sizes[loops - 1 - i] = b.getIndexAttr(i == 0 ? rowTile : 1);
        mapping.insert(mapping.begin(),
                       gpu::GPUBlockMappingAttr::get(ctx, ids[i]));
      }
      scf::SCFTilingOptions options;
      options.setTileSizes(sizes);
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      options.setMapping(mapping);
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled)) {
        op->emitOpError() << "could not be tiled into a grid of GPU blocks";
        return signalPassFailure();
      }
      rewriter.replaceOp(op, tiled->replacements);
    }
  }
};

} // namespace
