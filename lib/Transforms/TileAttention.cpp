//===- TileAttention.cpp - grid of attention tiles ------------------------===//
//
// Tiles attn.attention through its TilingInterface with upstream's
// scf::tileUsingSCF: one scf.forall over (batch, query head, q-tile), whose
// body is an attn.attention on one q-tile of one head. This is the grid of a
// FlashAttention kernel; attn-decompose-attention then builds each tile's kv
// loop.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

namespace mlir::attn {
#define GEN_PASS_DEF_TILEATTENTION
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct TileAttentionPass : attn::impl::TileAttentionBase<TileAttentionPass> {
  using TileAttentionBase::TileAttentionBase;

  void runOnOperation() override {
    if (qTile <= 0 || kvTile < 0 || threadRows < 0 || threadRows > qTile) {
      getOperation()->emitError()
          << "attn-tile-attention: need q-tile > 0, kv-tile >= 0 and 0 <= "
             "thread-rows <= q-tile, got q-tile="
          << static_cast<int64_t>(qTile)
          << " kv-tile=" << static_cast<int64_t>(kvTile)
          << " thread-rows=" << static_cast<int64_t>(threadRows);
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    Builder b(ctx);

    // Tiles are attention ops too: collect the originals first.
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) {
      if (op.getOffsets().empty())
        ops.push_back(op);
    });
    IRRewriter rewriter(ctx);
    for (AttentionOp op : ops) {
      int64_t opQTile = qTile, opKvTile = kvTile;
      // On the GPU, the op's kernel (attn-choose-kernel's) sets the tiles.
      if (KernelAttr kernel = op.getKernelAttr(); kernel && gpuMapping) {
        if (kernel.isTensorCore()) {
          op.emitOpError() << "has a " << stringifyKernelKind(kernel.getKind())
                           << " kernel, which attn-attention-to-mma builds; "
                              "this pass tiles simt ones";
          return signalPassFailure();
        }
        opQTile = kernel.getQTile();
        opKvTile = kernel.getKvTile();
      }
      // A tile reads the kv-block lists of one q-block: q-tiles divide it.
      if (Value blockMask = op.getBlockMask())
        opQTile = std::gcd(
            opQTile, static_cast<int64_t>(
                         cast<BlockMaskType>(blockMask.getType()).getQBlock()));
      if (threadRows > opQTile) {
        op.emitOpError() << "has q-tile " << opQTile
                         << ", fewer rows than thread-rows";
        return signalPassFailure();
      }
      scf::SCFTilingOptions options;
      // (b, h, m) tiled by (1, 1, q-tile); Dv untiled (0).
      options.setTileSizes({b.getIndexAttr(1), b.getIndexAttr(1),
                            b.getIndexAttr(opQTile), b.getIndexAttr(0)});
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      if (gpuMapping)
        options.setMapping(
            {gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimZ),
             gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimY),
             gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)});
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled)) {
        op.emitOpError() << "could not be tiled into (1, 1, " << opQTile
                         << ") tiles";
        return signalPassFailure();
      }
      rewriter.replaceOp(op, tiled->replacements);
      auto tile = cast<AttentionOp>(tiled->tiledOps.back());
      if (opKvTile > 0)
        tile.setKernelAttr(
            KernelAttr::get(ctx, KernelKind::simt, opQTile, opKvTile));
      if (threadRows == 0)
        continue;

      // One thread per `threadRows` rows of the tile.
      scf::SCFTilingOptions threadOptions;
      threadOptions.setTileSizes({b.getIndexAttr(0), b.getIndexAttr(0),
                                  b.getIndexAttr(threadRows),
                                  b.getIndexAttr(0)});
      threadOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      threadOptions.setMapping(
          {gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)});
      rewriter.setInsertionPoint(tile);
      FailureOr<scf::SCFTilingResult> perThread = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(tile.getOperation()), threadOptions);
      if (failed(perThread)) {
        tile->emitOpError() << "could not be split into rows per thread";
        return signalPassFailure();
      }
      rewriter.replaceOp(tile, perThread->replacements);
    }
  }
};

} // namespace
