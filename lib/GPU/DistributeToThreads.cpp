//===- DistributeToThreads.cpp - a block's parallel loops over threads ----===//
//
// Inside a gpu.launch, every outermost scf.parallel (a linalg op on a tile
// the whole block works on, after convert-linalg-to-parallel-loops) becomes
// one loop over its linearized iteration space that the block's threads
// stride through: thread t runs iterations t, t + blockDim, ... Consecutive
// threads get consecutive innermost indices, so their accesses to a row of
// a tile are contiguous. A gpu.barrier after each loop publishes what it
// wrote to the next one, which may read any of it.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace mlir::attn {
#define GEN_PASS_DEF_DISTRIBUTETOTHREADS
#include "AttnDialect/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct DistributeToThreadsPass
    : attn::impl::DistributeToThreadsBase<DistributeToThreadsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    WalkResult result = getOperation()->walk([&](gpu::LaunchOp launch) {
      if (launch.getBlockSizeY() != nullptr &&
          !(matchPattern(launch.getBlockSizeY(), m_One()) &&
            matchPattern(launch.getBlockSizeZ(), m_One()))) {
        launch.emitOpError() << "distributes loops over one-dimensional "
                                "blocks only";
        return WalkResult::interrupt();
      }
      SmallVector<scf::ParallelOp> loops;
      launch.getBody().walk([&](scf::ParallelOp loop) {
        if (!loop->getParentOfType<scf::ParallelOp>())
          loops.push_back(loop);
      });
      for (scf::ParallelOp loop : loops)
        if (failed(distribute(rewriter, launch, loop)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  LogicalResult distribute(RewriterBase &rewriter, gpu::LaunchOp launch,
                           scf::ParallelOp loop) {
    if (loop.getNumResults() != 0)
      return loop.emitOpError()
             << "has results; only loops on buffers are distributed";
    Location loc = loop.getLoc();
    rewriter.setInsertionPoint(loop);

    // Trip counts, and the strides of the linearized space: an inner dim
    // whose trip count is dynamic (a tile clipped at the problem's edge) is
    // laid out by its constant bound, so that delinearizing divides by
    // constants (shifts); iterations past the real trip count are skipped.
    SmallVector<Value> trips, extents;
    Value total = arith::ConstantIndexOp::create(rewriter, loc, 1);
    for (auto [dim, lb, ub, step] : llvm::enumerate(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      Value count;
      if (matchPattern(lb, m_Zero()) && matchPattern(step, m_One())) {
        count = ub;
      } else {
        Value span = arith::SubIOp::create(rewriter, loc, ub, lb);
        Value stepMinusOne = arith::SubIOp::create(
            rewriter, loc, step,
            arith::ConstantIndexOp::create(rewriter, loc, 1));
        count = arith::DivUIOp::create(
            rewriter, loc,
            arith::AddIOp::create(rewriter, loc, span, stepMinusOne), step);
      }
      Value extent = count;
      if (dim > 0 && !matchPattern(count, m_Constant())) {
        FailureOr<int64_t> bound =
            ValueBoundsConstraintSet::computeConstantBound(
                presburger::BoundType::UB,
                ValueBoundsConstraintSet::Variable(count),
                /*stopCondition=*/nullptr, /*closedUB=*/true);
        if (succeeded(bound))
          extent = arith::ConstantIndexOp::create(rewriter, loc, *bound);
      }
      trips.push_back(count);
      extents.push_back(extent);
      total = arith::MulIOp::create(rewriter, loc, total, extent);
    }

    auto strided = scf::ForOp::create(rewriter, loc, launch.getThreadIds().x,
                                      total, launch.getBlockSizeX());
    rewriter.setInsertionPointToStart(strided.getBody());
    // Delinearize, innermost dim fastest.
    SmallVector<Value> indices(trips.size());
    Value rest = strided.getInductionVar();
    for (int64_t dim = static_cast<int64_t>(trips.size()) - 1; dim >= 0;
         --dim) {
      indices[dim] =
          dim == 0 ? rest
                   : arith::RemUIOp::create(rewriter, loc, rest, extents[dim])
                         .getResult();
      if (dim > 0)
        rest = arith::DivUIOp::create(rewriter, loc, rest, extents[dim]);
    }
    Value inside;
    for (auto [index, trip, extent] : llvm::zip(indices, trips, extents)) {
      if (trip == extent)
        continue;
      Value inRange = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, index, trip);
      inside = inside ? arith::AndIOp::create(rewriter, loc, inside, inRange)
                            .getResult()
                      : inRange;
    }
    Operation *bodyEnd = strided.getBody()->getTerminator();
    if (inside) {
      auto guard = scf::IfOp::create(rewriter, loc, inside,
                                     /*withElseRegion=*/false);
      bodyEnd = guard.thenBlock()->getTerminator();
      rewriter.setInsertionPoint(bodyEnd);
    }
    SmallVector<Value> ivs;
    for (auto [dim, index] : llvm::enumerate(indices))
      ivs.push_back(rewriter.createOrFold<arith::AddIOp>(
          loc, loop.getLowerBound()[dim],
          rewriter.createOrFold<arith::MulIOp>(loc, index,
                                               loop.getStep()[dim])));
    Block *body = loop.getBody();
    rewriter.eraseOp(body->getTerminator());
    rewriter.inlineBlockBefore(body, bodyEnd, ivs);
    rewriter.setInsertionPointAfter(strided);
    gpu::BarrierOp::create(rewriter, loc);
    rewriter.eraseOp(loop);
    return success();
  }
};

} // namespace
