//===- BlockLists.cpp - the tensor-core kernel's block-mask schedule ------===//
//
// A block walks the kv-blocks its q-block's lists name: the full ones,
// then the partial ones (with the masks), each cut into kv-tiles. Partial
// blocks last, so that their dearer softmax runs while the step before's
// P V does, as the causal attribute's diagonal tiles do; only a row's
// first step has no P V to hide behind.
//
//===----------------------------------------------------------------------===//

#include "BlockBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

BlockBuilder::ListSteps BlockBuilder::readLists() {
  const BlockMaskLists &lists = k.lists;
  auto dim = [&](Value buffer, int64_t d) {
    return memref::DimOp::create(b, loc, buffer, d).getResult();
  };
  // A block mask of batch (head) extent 1 serves every batch (head).
  auto broadcast = [&](int64_t d, Value position) -> Value {
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        dim(lists.counts, d), c(1));
    return arith::SelectOp::create(b, loc, isOne, c(0), position);
  };
  ListSteps steps;
  steps.batch = broadcast(0, batchW);
  steps.head = broadcast(1, headW);
  // The block's rows lie in one q-block (the pass makes q-tiles divide
  // it); one past the lists' extent has no blocks, and counts are clipped
  // to the index rows, so no read is out of bounds.
  Value qb = div(add(offQ, q0), lists.qBlock);
  Value inLists = less(qb, dim(lists.counts, 2));
  steps.row = arith::SelectOp::create(b, loc, inLists, qb, c(0));
  Value kvBlocks = dim(lists.indices, 3);
  steps.lastIndex = max(sub(kvBlocks, c(1)), c(0));
  auto count = [&](Value counts) -> Value {
    Value read = arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(b, loc, counts,
                               ValueRange{steps.batch, steps.head, steps.row}));
    Value clipped = max(min(read, kvBlocks), c(0));
    return arith::SelectOp::create(b, loc, inLists, clipped, c(0));
  };
  int64_t tilesPerBlock = lists.kvBlock / k.tiles.kvTile;
  Value partial = count(lists.counts);
  Value full = lists.fullCounts ? count(lists.fullCounts) : c(0);
  steps.fullSteps = mul(full, c(tilesPerBlock));
  steps.steps = mul(add(partial, full), c(tilesPerBlock));
  return steps;
}

Value BlockBuilder::listStart(const ListSteps &steps, Value j) {
  const BlockMaskLists &lists = k.lists;
  int64_t tilesPerBlock = lists.kvBlock / k.tiles.kvTile;
  auto read = [&](Value indices, Value position) -> Value {
    Value at = max(min(position, steps.lastIndex), c(0));
    return arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(
            b, loc, indices,
            ValueRange{steps.batch, steps.head, steps.row, at}));
  };
  Value entry = div(j, tilesPerBlock);
  Value block;
  if (lists.fullIndices) {
    Value full = div(steps.fullSteps, tilesPerBlock);
    Value partialBlock = read(lists.indices, sub(entry, full));
    Value fullBlock = read(lists.fullIndices, entry);
    block = arith::SelectOp::create(b, loc, less(j, steps.fullSteps), fullBlock,
                                    partialBlock);
  } else {
    block = read(lists.indices, entry);
  }
  // A negative index (the lists are the caller's data) would copy from
  // before K and V: it becomes the first block past N, which copies
  // nothing and whose keys the masks drop, as the CPU kernel skips it.
  Value pastEnd = arith::CeilDivUIOp::create(b, loc, n, c(lists.kvBlock));
  block = arith::SelectOp::create(b, loc, less(block, c(0)), pastEnd, block);
  return add(mul(block, c(lists.kvBlock)),
             mul(rem(j, tilesPerBlock), c(k.tiles.kvTile)));
}

Value BlockBuilder::listNeedsMasks(const ListSteps &steps, Value j, Value kv0) {
  Value kvTileEnd = add(kv0, c(k.tiles.kvTile));
  Value masked = arith::OrIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, j,
                            steps.fullSteps),
      less(n, kvTileEnd));
  if (op.getCausal()) {
    // Below the diagonal for every row when kv0 + kv-tile - 1 <= q0.
    Value cut = less(add(offQ, q0), sub(kvTileEnd, c(1)));
    masked = arith::OrIOp::create(b, loc, masked, cut);
  }
  return masked;
}
