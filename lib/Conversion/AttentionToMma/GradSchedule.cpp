//===- GradSchedule.cpp - the backward kernels step loop ------------------===//
//
// Which streamed tiles a backward block visits and the loop that visits
// them: a line of the block mask's lists, or the dense (causal) range,
// with the next step's copies overlapping this step's products.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

GradBuilder::ListLine GradBuilder::readLine(Value h, Value limit) {
  Value line = listLine;
  // One op built per statement, for a compiler-independent order.
  auto dim = [&](Value buffer, int64_t d) -> Value {
    return memref::DimOp::create(b, loc, buffer, d);
  };
  Value one = c(1), zero = c(0);
  // A block mask of batch (head) extent 1 serves every batch (head).
  auto broadcast = [&](int64_t d, Value position) -> Value {
    Value extent = dim(k.counts, d);
    Value isOne =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, extent, one);
    return arith::SelectOp::create(b, loc, isOne, zero, position);
  };
  Value batch = broadcast(0, k.batch);
  Value head = broadcast(1, h);
  Value lines = dim(k.counts, 2);
  Value inLists = less(line, lines);
  Value row = arith::SelectOp::create(b, loc, inLists, line, zero);
  auto load = [this](Value buffer, ValueRange indices) -> Value {
    Value word = memref::LoadOp::create(b, loc, buffer, indices);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), word);
  };
  // Each list's count is clipped to its own index rows' width, and its
  // reads stay inside them.
  auto count = [&](Value counts, Value indices) -> Value {
    Value width = dim(indices, 3);
    Value given = load(counts, {batch, head, row});
    Value clipped = max(min(given, width), zero);
    return arith::SelectOp::create(b, loc, inLists, clipped, zero);
  };
  auto lastOf = [&](Value indices) -> Value {
    Value width = dim(indices, 3);
    return max(sub(width, one), zero);
  };
  // Entries are blocks; steps are tiles, `ratio` to a block.
  int64_t ratio = streamedBlock / streamedTile, tile = streamedTile,
          block = streamedBlock;
  Value full = count(k.fullCounts, k.fullIndices);
  Value partial = count(k.counts, k.indices);
  Value total = add(full, partial);
  Value lastFull = lastOf(k.fullIndices);
  Value lastPartial = lastOf(k.indices);
  ListLine listed;
  listed.full = ratio == 1 ? full : mul(full, c(ratio));
  listed.total = ratio == 1 ? total : mul(total, c(ratio));
  listed.start = [=](Value step) {
    Value e = ratio == 1 ? step : div(step, ratio);
    auto entry = [&](Value indices, Value position, Value last) {
      Value at = max(min(position, last), zero);
      return load(indices, {batch, head, row, at});
    };
    Value isFull = less(e, full);
    Value fullIndex = entry(k.fullIndices, e, lastFull);
    Value partialEntry = sub(e, full);
    Value partialIndex = entry(k.indices, partialEntry, lastPartial);
    Value index =
        arith::SelectOp::create(b, loc, isFull, fullIndex, partialIndex);
    Value pastEnd = arith::CeilDivUIOp::create(b, loc, limit, c(block));
    Value negative = less(index, zero);
    index = arith::SelectOp::create(b, loc, negative, pastEnd, index);
    Value first = mul(index, c(block));
    if (ratio == 1)
      return first;
    Value within = rem(step, ratio);
    return add(first, mul(within, c(tile)));
  };
  return listed;
}

Value GradBuilder::listedStepNeedsMasks(Value entry, Value full, Value cut,
                                        Value q0, Value kv0) {
  Value partial =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, entry, full);
  Value masked = arith::OrIOp::create(b, loc, partial, cut);
  if (!op.getCausal())
    return masked;
  Value crossing = less(q0, add(kv0, c(kvTile - 1)));
  return arith::OrIOp::create(b, loc, masked, crossing);
}

SmallVector<Value> GradBuilder::stepLoop(const Schedule &schedule,
                                         const CopyTile &copyTile,
                                         ValueRange inits, const Step &step) {
  auto copyStep = [&](Value j, Value buffer) {
    auto inLoop = scf::IfOp::create(b, loc, less(j, schedule.steps));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inLoop.thenBlock());
    copyTile(j, schedule.start(j), buffer);
  };
  copyStep(c(0), c(0));
  commitGroup();
  auto loop = scf::ForOp::create(b, loc, c(0), schedule.steps, c(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    Value buffer = stages == 2 ? rem(j, 2) : c(0);
    // Step j's tiles have landed, and no warp reads the other buffer.
    tilesLanded();
    if (stages == 2) {
      copyStep(add(j, c(1)), sub(c(1), buffer));
      commitGroup();
    }
    Value first = schedule.start(j);
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> results;
    if (schedule.active) {
      auto ifActive =
          scf::IfOp::create(b, loc, carried.getTypes(), schedule.active(j),
                            /*withElseRegion=*/true);
      OpBuilder::InsertionGuard branch(b);
      b.setInsertionPointToStart(ifActive.thenBlock());
      scf::YieldOp::create(
          b, loc,
          step(j, first, buffer, schedule.needsMasks(j, first), carried));
      b.setInsertionPointToStart(ifActive.elseBlock());
      scf::YieldOp::create(b, loc, carried);
      results.assign(ifActive.getResults().begin(),
                     ifActive.getResults().end());
    } else {
      results = step(j, first, buffer, schedule.needsMasks(j, first), carried);
    }
    if (stages == 1) {
      gpu::BarrierOp::create(b, loc);
      copyStep(add(j, c(1)), buffer);
      commitGroup();
    }
    scf::YieldOp::create(b, loc, results);
  }
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  // Every warp is past its last read before the buffers fill again.
  gpu::BarrierOp::create(b, loc);
  return SmallVector<Value>(loop.getResults());
}
