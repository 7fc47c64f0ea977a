//===- MmaSyncMainloop.cpp - the mma.sync kernel's mainloop ---------------===//
//
// FlashAttention-2's forward, one block per q-tile: Q, K and V tiles land
// in shared memory through cp.async (K and V in one or two stages), both
// contractions are mma.sync m16n8k16 on ldmatrix fragments, and in the kv
// loop K_j+1 and V_j land while S_j, the softmax and P V_j run.
//
//===----------------------------------------------------------------------===//

#include "BlockBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

Fragment BlockBuilder::queryFragment(int64_t band, int64_t kk) {
  Value row = add(add(warpRow, c(16 * band)), queryRowLane);
  return loadMatrix(k.queryStage, {row, add(queryColLane, c(16 * kk))},
                    /*transpose=*/false);
}

SmallVector<BandTile> BlockBuilder::scores(Value buffer,
                                           ArrayRef<BandTile> queryFragments) {
  int64_t chunks = k.tiles.kvTile / kChunk;
  Value zero = f32c(0.0);
  SmallVector<BandTile> s(bands, BandTile(chunks, Fragment(4, zero)));
  for (int64_t kk = 0; kk < d / 16; ++kk) {
    SmallVector<Fragment> a;
    for (int64_t band = 0; band < bands; ++band)
      a.push_back(queryFragments.empty() ? queryFragment(band, kk)
                                         : queryFragments[band][kk]);
    Value col = add(keyColLane, c(16 * kk));
    // Each K fragment feeds every band of the warp.
    for (int64_t pair = 0; pair < chunks / 2; ++pair) {
      Fragment key =
          loadMatrix(k.keyStage, {buffer, add(keyRowLane, c(16 * pair)), col},
                     /*transpose=*/false);
      for (int64_t band = 0; band < bands; ++band) {
        BandTile &tile = s[band];
        tile[2 * pair] = mmaSync(a[band], {key[0], key[1]}, tile[2 * pair]);
        tile[2 * pair + 1] =
            mmaSync(a[band], {key[2], key[3]}, tile[2 * pair + 1]);
      }
    }
  }
  return s;
}

void BlockBuilder::accumulate(ArrayRef<BandTile> probs, Value buffer,
                              SmallVector<BandTile> &acc) {
  for (int64_t kk = 0; kk < k.tiles.kvTile / 16; ++kk) {
    Value row = add(valueRowLane, c(16 * kk));
    // Each V fragment feeds every band of the warp.
    for (int64_t pair = 0; pair < dv / 16; ++pair) {
      Fragment v = loadMatrix(k.valueStage,
                              {buffer, row, add(valueColLane, c(16 * pair))},
                              /*transpose=*/true);
      for (int64_t band = 0; band < bands; ++band) {
        BandTile &tile = acc[band];
        const Fragment &a = probs[band][kk];
        tile[2 * pair] = mmaSync(a, {v[0], v[1]}, tile[2 * pair]);
        tile[2 * pair + 1] = mmaSync(a, {v[2], v[3]}, tile[2 * pair + 1]);
      }
    }
  }
}

ValueRange BlockBuilder::syncLoop(Value steps) {
  const MmaTiles &tiles = k.tiles;
  int64_t accChunks = dv / kChunk;
  Value zero = f32c(0.0);
  Value negInf = f32c(kNegInf);
  int64_t accValues = 4 * accChunks * bands;
  SmallVector<Value> inits(accValues, zero);
  inits.append(SmallVector<Value>(2 * bands, negInf));
  inits.append(SmallVector<Value>(2 * bands, zero));
  auto loop = scf::ForOp::create(b, loc, c(0), steps, c(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<BandTile> acc = tilesOf(carried, bands, accChunks);
    SmallVector<Value> maxes(carried.slice(accValues, 2 * bands));
    SmallVector<Value> sums(carried.slice(accValues + 2 * bands, 2 * bands));
    bool doubled = tiles.stages == 2;
    Value buffer = doubled ? rem(j, 2) : c(0);
    Value kv0 = kvStart(j);

    // V_j lands while S_j is computed, K_j+1 while the softmax and P V_j
    // run. With one stage, each copy waits for a barrier that says no warp
    // reads the buffer any more (P V_j-1, and S_j).
    if (!doubled)
      waitGroups(0);
    copyRows(k.value, k.batch, kvHead, kv0, n, tiles.kvTile, dv, k.valueStage,
             {buffer});
    commitGroup();
    if (doubled)
      waitGroups(1);
    SmallVector<BandTile> s = scores(buffer, queryFragments);
    if (!doubled)
      waitGroups(0);
    copyKeyTile(add(j, c(1)), steps, doubled ? sub(c(1), buffer) : buffer);
    commitGroup();

    SmallVector<Value> corrections;
    SmallVector<BandTile> probs =
        scoresToProbs(s, j, kv0, maxes, sums, corrections);
    rescale(acc, corrections);
    if (doubled)
      waitGroups(1);
    accumulate(probs, buffer, acc);
    SmallVector<Value> carriedOut = flattenTiles(acc);
    carriedOut.append(maxes);
    carriedOut.append(sums);
    scf::YieldOp::create(b, loc, carriedOut);
  }
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  return loop.getResults();
}

void BlockBuilder::buildMmaSync() {
  Value steps = startBlockTile();
  if (keepsQueryInRegisters(k.tiles, {d, dv, 0, false})) {
    waitGroups(1);
    for (int64_t band = 0; band < bands; ++band) {
      BandTile fragments;
      for (int64_t kk = 0; kk < d / 16; ++kk)
        fragments.push_back(queryFragment(band, kk));
      queryFragments.push_back(fragments);
    }
  }
  finishTile(llvm::to_vector(syncLoop(steps)), /*staged=*/true);
}
