//===- MapForallToGpu.cpp - mapped scf.forall to gpu.launch ---------------===//

#include "AttnDialect/GPU/Passes.h"
#include "AttnDialect/Target/NVVM/TargetInfo.h"
#include "ForallMapping.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_MAPFORALLTOGPU
#include "AttnDialect/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// (ub - lb) ceildiv step, folded where possible.
OpFoldResult tripCount(OpBuilder &b, Location loc, OpFoldResult lb,
                       OpFoldResult ub, OpFoldResult step) {
  AffineExpr l, u, s;
  bindSymbols(b.getContext(), l, u, s);
  return affine::makeComposedFoldedAffineApply(b, loc, (u - l).ceilDiv(s),
                                               {lb, ub, step});
}

/// lb + id * step.
Value inductionValue(OpBuilder &b, Location loc, OpFoldResult lb, Value id,
                     OpFoldResult step) {
  AffineExpr l, i, s;
  bindSymbols(b.getContext(), l, i, s);
  return getValueOrCreateConstantIndexOp(
      b, loc,
      affine::makeComposedFoldedAffineApply(b, loc, l + i * s, {lb, id, step}));
}

/// Moves the body of `forall` (without its terminator) to before `point`,
/// with its induction variables replaced by `ivs`.
void inlineBody(RewriterBase &rewriter, scf::ForallOp forall,
                ArrayRef<Value> ivs, Operation *point) {
  Block *body = forall.getBody();
  rewriter.eraseOp(body->getTerminator());
  rewriter.inlineBlockBefore(body, point, ivs);
}

bool isWorkgroup(MemRefType type) {
  auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Workgroup;
}

/// Assigns byte offsets in shared memory to the workgroup allocs of `block`
/// and its nested regions, from `base`; returns the high-water mark. A
/// nested region's buffers die with it (nothing escapes a loop body on
/// buffers), so sibling regions, and the allocs that follow them, reuse its
/// bytes.
int64_t assignSharedOffsets(Block &block, int64_t base,
                            DenseMap<Operation *, int64_t> &offsets) {
  int64_t top = base, highWater = base;
  for (Operation &op : block) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op);
        alloc && isWorkgroup(alloc.getType())) {
      // Saturating arithmetic: absurd tile options must give a number above
      // the limit, not one that wrapped below it.
      MemRefType type = alloc.getType();
      int64_t offset = llvm::alignTo(top, 16);
      offsets[alloc] = offset;
      uint64_t bytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      for (int64_t size : type.getShape())
        bytes = llvm::SaturatingMultiply(
            bytes, static_cast<uint64_t>(std::max<int64_t>(size, 0)));
      uint64_t end = llvm::SaturatingAdd(static_cast<uint64_t>(offset), bytes);
      top = static_cast<int64_t>(
          std::min<uint64_t>(end, std::numeric_limits<int64_t>::max() / 2));
      highWater = std::max(highWater, top);
      continue;
    }
    for (Region &region : op.getRegions())
      for (Block &nested : region)
        highWater =
            std::max(highWater, assignSharedOffsets(nested, top, offsets));
  }
  return highWater;
}

struct MapForallToGpuPass : attn::impl::MapForallToGpuBase<MapForallToGpuPass> {
  using MapForallToGpuBase::MapForallToGpuBase;

  void runOnOperation() override {
    SmallVector<scf::ForallOp> grids;
    getOperation()->walk([&](scf::ForallOp forall) {
      if (isMappedTo<gpu::GPUBlockMappingAttr>(forall) &&
          !forall->getParentOfType<gpu::LaunchOp>())
        grids.push_back(forall);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForallOp grid : grids)
      if (failed(mapGrid(rewriter, grid)))
        return signalPassFailure();
    if (allowHostLinalg)
      return;
    WalkResult leftover = getOperation()->walk([](linalg::LinalgOp op) {
      if (op->getParentOfType<gpu::LaunchOp>())
        return WalkResult::advance();
      op->emitOpError() << "is outside every GPU grid: attn-lower-to-nvvm "
                           "maps only attn.attention, attn.softmax and "
                           "elementwise linalg ops to the GPU so far";
      return WalkResult::interrupt();
    });
    if (leftover.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult mapGrid(RewriterBase &rewriter, scf::ForallOp grid) {
    Location loc = grid.getLoc();
    if (grid.getNumResults() != 0)
      return grid.emitOpError()
             << "must be bufferized before it is mapped to a GPU grid";

    // Block size: the largest trip count any thread loop can have.
    SmallVector<scf::ForallOp> threadLoops;
    grid.getBody()->walk([&](scf::ForallOp forall) {
      if (isMappedTo<gpu::GPUThreadMappingAttr>(forall))
        threadLoops.push_back(forall);
    });
    int64_t blockThreads = threadLoops.empty() ? threads.getValue() : 1;
    if (blockThreads <= 0 || blockThreads > nvvm::kMaxThreadsPerBlock)
      return grid.emitOpError() << "needs 1 to " << nvvm::kMaxThreadsPerBlock
                                << " threads per block, not " << blockThreads;
    rewriter.setInsertionPoint(grid);
    for (scf::ForallOp loop : threadLoops) {
      if (loop.getRank() != 1 ||
          cast<gpu::GPUThreadMappingAttr>((*loop.getMapping())[0])
                  .getMappingId() != static_cast<int64_t>(gpu::MappingId::DimX))
        return loop.emitOpError()
               << "only one-dimensional #gpu.thread<x> loops are mapped";
      FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
          presburger::BoundType::UB,
          ValueBoundsConstraintSet::Variable(
              AffineMap::get(
                  0, 3,
                  (getAffineSymbolExpr(1, loop.getContext()) -
                   getAffineSymbolExpr(0, loop.getContext()))
                      .ceilDiv(getAffineSymbolExpr(2, loop.getContext()))),
              ArrayRef<ValueBoundsConstraintSet::Variable>{
                  loop.getMixedLowerBound()[0], loop.getMixedUpperBound()[0],
                  loop.getMixedStep()[0]}),
          /*stopCondition=*/nullptr, /*closedUB=*/true);
      if (failed(bound))
        return loop.emitOpError()
               << "has a trip count with no constant upper bound; it cannot "
                  "size a GPU thread block";
      blockThreads = std::max(blockThreads, *bound);
    }
    if (blockThreads > nvvm::kMaxThreadsPerBlock)
      return grid.emitOpError()
             << "needs " << blockThreads << " threads per block; the limit is "
             << nvvm::kMaxThreadsPerBlock;

    // Shared memory: every workgroup buffer of the grid, with a static
    // shape, at its offset.
    DenseMap<Operation *, int64_t> sharedOffsets;
    int64_t sharedBytes =
        assignSharedOffsets(*grid.getBody(), 0, sharedOffsets);
    for (auto [op, offset] : sharedOffsets) {
      auto alloc = cast<memref::AllocOp>(op);
      if (!alloc.getType().hasStaticShape() ||
          !alloc.getType().getLayout().isIdentity())
        return alloc.emitOpError()
               << "is a shared-memory buffer without a static shape and "
                  "identity layout; kernels cannot allocate";
    }
    if (sharedBytes > sharedMemoryPerBlock)
      return grid.emitOpError()
             << "needs " << sharedBytes
             << " bytes of shared memory per block; the target has "
             << static_cast<int64_t>(sharedMemoryPerBlock)
             << " (use smaller tiles)";

    // Grid: one block per iteration, loops on the dims their mapping names.
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value gridSize[3] = {one, one, one};
    SmallVector<unsigned> dimOf;
    for (auto [i, attr] : llvm::enumerate(*grid.getMapping())) {
      auto id = static_cast<unsigned>(
          cast<gpu::GPUBlockMappingAttr>(attr).getMappingId());
      if (id > 2)
        return grid.emitOpError() << "maps a loop past gpu block dim z";
      dimOf.push_back(id);
      gridSize[id] = getValueOrCreateConstantIndexOp(
          rewriter, loc,
          tripCount(rewriter, loc, grid.getMixedLowerBound()[i],
                    grid.getMixedUpperBound()[i], grid.getMixedStep()[i]));
    }
    Value blockSize =
        arith::ConstantIndexOp::create(rewriter, loc, blockThreads);
    Value sharedSize =
        sharedBytes == 0
            ? Value()
            : arith::ConstantOp::create(rewriter, loc,
                                        rewriter.getI32IntegerAttr(sharedBytes))
                  .getResult();
    auto launch =
        gpu::LaunchOp::create(rewriter, loc, gridSize[0], gridSize[1],
                              gridSize[2], blockSize, one, one, sharedSize);
    rewriter.setInsertionPointToStart(&launch.getBody().front());
    if (sharedBytes > 0) {
      auto bytesType = MemRefType::get(
          {ShapedType::kDynamic}, rewriter.getI8Type(),
          MemRefLayoutAttrInterface(),
          gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                     gpu::AddressSpace::Workgroup));
      Value shared =
          gpu::DynamicSharedMemoryOp::create(rewriter, loc, bytesType);
      for (auto [op, offset] : sharedOffsets) {
        auto alloc = cast<memref::AllocOp>(op);
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPoint(alloc);
        Value byteOffset =
            arith::ConstantIndexOp::create(rewriter, alloc.getLoc(), offset);
        rewriter.replaceOpWithNewOp<memref::ViewOp>(
            alloc, alloc.getType(), shared, byteOffset, ValueRange());
      }
    }
    gpu::KernelDim3 blockIds = launch.getBlockIds();
    Value blockId[3] = {blockIds.x, blockIds.y, blockIds.z};
    SmallVector<Value> ivs;
    for (auto [i, dim] : llvm::enumerate(dimOf))
      ivs.push_back(inductionValue(rewriter, loc, grid.getMixedLowerBound()[i],
                                   blockId[dim], grid.getMixedStep()[i]));
    auto terminator = gpu::TerminatorOp::create(rewriter, loc);
    inlineBody(rewriter, grid, ivs, terminator);
    rewriter.eraseOp(grid);

    // Thread loops: guarded by the thread id.
    Value threadId = launch.getThreadIds().x;
    for (scf::ForallOp loop : threadLoops) {
      if (loop.getNumResults() != 0)
        return loop.emitOpError()
               << "must be bufferized before it is mapped to GPU threads";
      rewriter.setInsertionPoint(loop);
      Value trips = getValueOrCreateConstantIndexOp(
          rewriter, loop.getLoc(),
          tripCount(rewriter, loop.getLoc(), loop.getMixedLowerBound()[0],
                    loop.getMixedUpperBound()[0], loop.getMixedStep()[0]));
      Value active = arith::CmpIOp::create(
          rewriter, loop.getLoc(), arith::CmpIPredicate::ult, threadId, trips);
      auto guard = scf::IfOp::create(rewriter, loop.getLoc(), active,
                                     /*withElseRegion=*/false);
      rewriter.setInsertionPointToStart(guard.thenBlock());
      Value iv =
          inductionValue(rewriter, loop.getLoc(), loop.getMixedLowerBound()[0],
                         threadId, loop.getMixedStep()[0]);
      inlineBody(rewriter, loop, {iv}, guard.thenBlock()->getTerminator());
      rewriter.eraseOp(loop);
    }
    return success();
  }
};

} // namespace
