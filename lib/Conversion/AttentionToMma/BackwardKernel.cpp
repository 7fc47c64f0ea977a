//===- BackwardKernel.cpp - attn.attention_grad on tensor cores -----------===//
//
// The two kernels as steps of GradBuilder's parts: the dQ kernel (Delta,
// then dS K over the keys its lists or the causal range leave) and the
// dK/dV kernel (P^T dO and dS^T Q over every query head of its kv head).
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

#include <optional>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

/// Whether the block mask's q side lists the same blocks for every head:
/// one derived from a mask_mod that ignores h, or one given for a single
/// head.
static bool listsIgnoreHeads(AttentionGradOp op) {
  Value blockMask = op.getBlockMask();
  if (!blockMask)
    return op.getMaskMod().front().getArgument(1).use_empty();
  if (auto create = blockMask.getDefiningOp<CreateBlockMaskOp>())
    return matchPattern(create.getHeads(), m_One());
  auto make = blockMask.getDefiningOp<MakeBlockMaskOp>();
  return make && make.getQNumBlocks() &&
         cast<RankedTensorType>(make.getQNumBlocks().getType()).getDimSize(1) ==
             1;
}

void GradBuilder::buildQueryGrad() {
  setUp(qTile);
  addsCaptures = !op.getWrt().empty();
  Value h = k.head;
  Value kvHead = arith::DivUIOp::create(b, loc, h, group);
  Value q0 = mul(k.block, c(qTile));
  Schedule schedule;
  if (k.counts) {
    listLine = qBlock == qTile ? k.block : div(k.block, qBlock / qTile);
    streamedTile = kvTile;
    streamedBlock = kvBlock;
    ListLine listed = readLine(h, n);
    schedule.steps = listed.total;
    schedule.start = listed.start;
    schedule.needsMasks = [=](Value j, Value kv0) {
      return listedStepNeedsMasks(j, listed.full, less(n, add(kv0, c(kvTile))),
                                  q0, kv0);
    };
  } else {
    // Causal rows see keys up to their own position.
    Value kvEnd = n;
    if (op.getCausal())
      kvEnd = min(min(add(q0, c(qTile)), m), n);
    schedule.steps = arith::CeilDivUIOp::create(b, loc, kvEnd, c(kvTile));
    // Steps before `fullSteps` need no masks: keys inside N, below every
    // row's diagonal. (Rows past M are computed and never stored.) A
    // mask_mod without its block lists applies on every step.
    Value fullSteps = div(n, kvTile);
    if (op.getCausal())
      fullSteps = min(fullSteps, div(add(q0, c(1)), kvTile));
    schedule.start = [=](Value j) { return mul(j, c(kvTile)); };
    schedule.needsMasks = [=](Value j, Value) -> Value {
      if (op.hasMaskMod())
        return arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, j,
                                   fullSteps);
    };
  }
  copyRows(k.query, k.batch, h, q0, m, qTile, d, k.ownFirst, {});
  copyRows(k.gradOutput, k.batch, h, q0, m, qTile, dv, k.ownSecond, {});
  commitGroup();
  storeDelta(q0, h);
  // Q and dO have landed, and every thread's Delta is in shared memory.
  tilesLanded();
  SmallVector<Fragment> queryFragments = keptFragments(k.ownFirst, d);
  SmallVector<Fragment> gradFragments = keptFragments(k.ownSecond, dv);
  std::array<Value, 2> rows, lses, deltas;
  for (int64_t r = 0; r < 2; ++r) {
    Value local = add(add(warpRow, g), c(8 * r));
    rows[r] = add(q0, local);
    lses[r] = memref::LoadOp::create(
        b, loc, k.lse,
        ValueRange{k.batch, h, min(rows[r], max(sub(m, c(1)), c(0)))});
    deltas[r] = memref::LoadOp::create(b, loc, k.deltaStage, local);
  }

  int64_t chunks = firstWidth / kChunk;
  auto copyTile = [&](Value, Value kv0, Value buffer) {
    copyRows(k.key, k.batch, kvHead, kv0, n, kvTile, d, k.streamedFirst,
             {buffer});
    copyRows(k.value, k.batch, kvHead, kv0, n, kvTile, dv, k.streamedSecond,
             {buffer});
  };
  auto step = [&](Value, Value kv0, Value buffer, Value needsMasks,
                  ValueRange carried) {
    BandTile acc = tilesOf(carried, 1, chunks)[0];
    SmallVector<BandTile> products =
        rowProducts({{k.ownFirst, queryFragments, k.streamedFirst, d},
                     {k.ownSecond, gradFragments, k.streamedSecond, dv}},
                    buffer, kvTile);
    // P while dP's wgmmas run.
    BandTile s = landed(products[0], 1);
    auto readyDp = [&] { return landed(products[1], 0); };
    SmallVector<Fragment> ds =
        gradients(s, readyDp, h, needsMasks, /*withProbs=*/false,
                  [&](int64_t chunk, int64_t e) {
                    Value kv = add(kv0, add(t2, c(kChunk * chunk + e % 2)));
                    return std::array<Value, 4>{rows[e / 2], lses[e / 2],
                                                deltas[e / 2], kv};
                  })
            .second;
    accumulate({{ds, k.streamedFirst, acc, firstColumn}}, buffer);
    return flattenTiles({acc});
  };
  SmallVector<Value> results = stepLoop(
      schedule, copyTile, SmallVector<Value>(4 * chunks, f32c(0.0)), step);
  storeRows(tilesOf(results, 1, chunks)[0], k.dq, h, q0, firstColumn, m,
            op.getScaleValue());
}

void GradBuilder::buildKeyValueGrad() {
  setUp(kvTile);
  Value kvHead = k.head;
  Value kv0 = mul(k.block, c(kvTile));
  copyRows(k.key, k.batch, kvHead, kv0, n, kvTile, d, k.ownFirst, {});
  copyRows(k.value, k.batch, kvHead, kv0, n, kvTile, dv, k.ownSecond, {});
  commitGroup();
  tilesLanded();
  SmallVector<Fragment> keyFragments = keptFragments(k.ownFirst, d);
  SmallVector<Fragment> valueFragments = keptFragments(k.ownSecond, dv);
  std::array<Value, 2> keys;
  for (int64_t r = 0; r < 2; ++r)
    keys[r] = add(kv0, add(add(warpRow, g), c(8 * r)));

  // Every query head of the kv head in turn, perHead steps each (GQA sums
  // their gradients in the registers).
  Value firstHead = mul(kvHead, group);
  Schedule schedule;
  Value perHead;
  std::optional<ListLine> shared;
  if (k.counts) {
    listLine = kvBlock == kvTile ? k.block : div(k.block, kvBlock / kvTile);
    streamedTile = qTile;
    streamedBlock = qBlock;
  }
  // Lists that are the same for every head: the line is read once.
  if (k.counts && listsIgnoreHeads(op)) {
    shared = readLine(firstHead, m);
    perHead = shared->total;
  } else if (k.counts) {
    // The longest of the heads' lists; steps past a head's are idle.
    auto longest = scf::ForOp::create(b, loc, c(0), group, c(1), c(0));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(longest.getBody());
      Value total =
          readLine(add(firstHead, longest.getInductionVar()), m).total;
      scf::YieldOp::create(b, loc, max(longest.getRegionIterArgs()[0], total));
    }
    perHead = longest.getResult(0);
  } else {
    // Causal: rows above the block's first key see none of its keys.
    Value qBlocks = arith::CeilDivUIOp::create(b, loc, m, c(qTile));
    perHead = max(sub(qBlocks, op.getCausal() ? div(kv0, qTile) : c(0)), c(0));
  }
  Value safe = max(perHead, c(1));
  schedule.steps = mul(group, perHead);
  schedule.head = [=](Value j) {
    return add(firstHead, arith::DivUIOp::create(b, loc, j, safe));
  };
  auto entryOf = [=](Value j) {
    return arith::RemUIOp::create(b, loc, j, safe).getResult();
  };
  if (k.counts) {
    auto lineOf = [=](Value j) {
      return shared ? *shared : readLine(schedule.head(j), m);
    };
    schedule.start = [=](Value j) { return lineOf(j).start(entryOf(j)); };
    if (!shared)
      schedule.active = [=](Value j) {
        return less(entryOf(j), lineOf(j).total);
      };
    schedule.needsMasks = [=](Value j, Value q0) {
      Value full = lineOf(j).full;
      Value entry = entryOf(j);
      return listedStepNeedsMasks(entry, full, less(m, add(q0, c(qTile))), q0,
                                  kv0);
    };
  } else {
    Value qFirst = op.getCausal() ? div(kv0, qTile) : c(0);
    schedule.start = [=](Value j) {
      return mul(add(qFirst, entryOf(j)), c(qTile));
    };
    // Whole q-tiles inside M, on or below the block's last key's diagonal,
    // need no masks. A mask_mod without its block lists applies on every
    // step.
    schedule.needsMasks = [=](Value, Value q0) -> Value {
      if (op.hasMaskMod())
        return arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      Value masked = less(m, add(q0, c(qTile)));
      if (op.getCausal())
        masked = arith::OrIOp::create(b, loc, masked,
                                      less(q0, add(kv0, c(kvTile - 1))));
      return masked;
    };
  }
  auto copyTile = [&](Value j, Value q0, Value buffer) {
    Value h = schedule.head(j);
    copyRows(k.query, k.batch, h, q0, m, qTile, d, k.streamedFirst, {buffer});
    copyRows(k.gradOutput, k.batch, h, q0, m, qTile, dv, k.streamedSecond,
             {buffer});
    copyRowStats(h, q0, buffer);
  };
  int64_t keyChunks = firstWidth / kChunk, valueChunks = secondWidth / kChunk;
  auto step = [&](Value j, Value q0, Value buffer, Value needsMasks,
                  ValueRange carried) {
    Value h = schedule.head(j);
    BandTile dkAcc =
        tilesOf(carried.take_front(4 * keyChunks), 1, keyChunks)[0];
    BandTile dvAcc =
        tilesOf(carried.drop_front(4 * keyChunks), 1, valueChunks)[0];
    SmallVector<BandTile> products =
        rowProducts({{k.ownFirst, keyFragments, k.streamedFirst, d},
                     {k.ownSecond, valueFragments, k.streamedSecond, dv}},
                    buffer, qTile);
    // P^T while dP^T's wgmmas run.
    BandTile s = landed(products[0], 1);
    auto readyDp = [&] { return landed(products[1], 0); };
    auto [p, ds] = gradients(
        s, readyDp, h, needsMasks, /*withProbs=*/true,
        [&](int64_t chunk, int64_t e) {
          // The column's L and Delta, read where they are used.
          Value column = add(t2, c(kChunk * chunk + e % 2));
          Value lse = memref::LoadOp::create(b, loc, k.lseStage,
                                             ValueRange{buffer, column});
          Value delta = arith::BitcastOp::create(
              b, loc, f32,
              memref::LoadOp::create(b, loc, k.deltaStage,
                                     ValueRange{buffer, column}));
          return std::array<Value, 4>{add(q0, column), lse, delta, keys[e / 2]};
        });
    accumulate({{p, k.streamedSecond, dvAcc, secondColumn},
                {ds, k.streamedFirst, dkAcc, firstColumn}},
               buffer);
    SmallVector<Value> yields = flattenTiles({dkAcc});
    yields.append(flattenTiles({dvAcc}));
    return yields;
  };
  SmallVector<Value> results = stepLoop(
      schedule, copyTile,
      SmallVector<Value>(4 * (keyChunks + valueChunks), f32c(0.0)), step);
  ArrayRef<Value> grads(results);
  storeRows(tilesOf(grads.take_front(4 * keyChunks), 1, keyChunks)[0], k.dk,
            kvHead, kv0, firstColumn, n, op.getScaleValue());
  storeRows(tilesOf(grads.drop_front(4 * keyChunks), 1, valueChunks)[0], k.dv,
            kvHead, kv0, secondColumn, n, 1.0);
}

void BackwardKernel::buildQueryGrad() { GradBuilder(*this).buildQueryGrad(); }

void BackwardKernel::buildKeyValueGrad() {
  GradBuilder(*this).buildKeyValueGrad();
}
