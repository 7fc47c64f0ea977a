//===- WgmmaMainloop.cpp - the wgmma kernel's mainloop --------------------===//
//
// sm_90a's kernel of one block per q-tile: Q, K and V in shared memory in
// a swizzle layout, S = Q K^T from two descriptors, O += P V
// with P from registers, and FlashAttention-3's intra-warpgroup
// pipelining, the softmax of S_j running while the wgmma of P_j-1 V_j-1
// does. WarpSpecialized.cpp runs the same loop with a TMA producer.
//
//===----------------------------------------------------------------------===//

#include "BlockBuilder.h"
#include "WarpgroupMma.h"

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

void BlockBuilder::waitGroupsForWgmma(int32_t pending) {
  NVVM::CpAsyncWaitGroupOp::create(b, loc, pending);
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
}

Value BlockBuilder::stageAddress(Value stage, Value buffer) {
  return mma::stageAddress(b, loc, stage, buffer);
}

SmallVector<Value> BlockBuilder::issueScores(Value buffer) {
  int64_t kvTile = k.tiles.kvTile;
  Swizzle swizzle = Swizzle::forWidth(d);
  Value keyDescriptor = swizzledDescriptor(
      b, loc, swizzle, stageAddress(k.keyStage, buffer),
      /*leadingBytes=*/16, /*strideBytes=*/8 * swizzle.rowBytes);
  SmallVector<std::pair<Value, Value>> descriptors;
  int64_t stepsPerTile = swizzle.columns() / 16;
  for (int64_t kk = 0; kk < d / 16; ++kk) {
    // k-step kk lies in swizzled tile kk / stepsPerTile, 32 bytes per step
    // within.
    int64_t tile = kk / stepsPerTile, within = (kk % stepsPerTile) * 32;
    descriptors.push_back(
        {advanceDescriptor(b, loc, queryDescriptor,
                           tile * k.tiles.qTile * swizzle.rowBytes + within),
         advanceDescriptor(b, loc, keyDescriptor,
                           tile * kvTile * swizzle.rowBytes + within)});
  }
  Value undefined = LLVM::UndefOp::create(b, loc, f32);
  SmallVector<Value> s(kvTile / 2, undefined);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (auto [kk, pair] : llvm::enumerate(descriptors))
    s = warpgroupMma(b, loc, element, s, pair.first, pair.second,
                     /*transposeB=*/false, /*accumulate=*/kk > 0);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return s;
}

BlockBuilder::PvOperands BlockBuilder::pvOperands(ArrayRef<Fragment> probs,
                                                  Value buffer) {
  int64_t kvTile = k.tiles.kvTile;
  // V is MN-major: its swizzled tiles lie kv-tile rows apart.
  Swizzle swizzle = Swizzle::forWidth(dv);
  Value valueDescriptor =
      swizzledDescriptor(b, loc, swizzle, stageAddress(k.valueStage, buffer),
                         /*leadingBytes=*/kvTile * swizzle.rowBytes,
                         /*strideBytes=*/8 * swizzle.rowBytes);
  PvOperands operands;
  for (int64_t kk = 0; kk < kvTile / 16; ++kk) {
    SmallVector<Value> a;
    for (Value reg : probs[kk])
      a.push_back(reg.getType() == i32
                      ? reg
                      : vector::ExtractOp::create(
                            b, loc,
                            vector::BitCastOp::create(
                                b, loc, VectorType::get({1}, i32), reg),
                            0)
                            .getResult());
    operands.a.push_back(a);
    operands.descriptors.push_back(
        advanceDescriptor(b, loc, valueDescriptor, 16 * kk * swizzle.rowBytes));
  }
  return operands;
}

void BlockBuilder::issueAccumulate(const PvOperands &operands,
                                   SmallVector<BandTile> &acc) {
  SmallVector<Value> o = flattenTiles(acc);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (auto [a, descriptor] : llvm::zip(operands.a, operands.descriptors))
    o = warpgroupMma(b, loc, element, o, a, descriptor, /*transposeB=*/true,
                     /*accumulate=*/true);
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  acc = tilesOf(o, 1, dv / kChunk);
}

BlockBuilder::TileStaging BlockBuilder::copyStaging(Value steps) {
  TileStaging staging;
  staging.base = c(0);
  // Step j, after every copy before it landed, copies K_j+1 and V_j: both
  // buffers' last readers finished before this step's barrier.
  staging.beforeStep = [this, steps](Value j, Value it, Value kv0, bool) {
    Value buffer = rem(it, 2);
    waitGroupsForWgmma(0);
    copyKeyTile(add(j, c(1)), steps, sub(c(1), buffer));
    copyRows(k.value, k.batch, kvHead, kv0, n, k.tiles.kvTile, dv, k.valueStage,
             {buffer});
    commitGroup();
  };
  staging.keysRead = [](Value) {};
  staging.valuesRead = [](Value) {};
  staging.beforeLastAccumulate = [this](Value) { waitGroupsForWgmma(0); };
  staging.afterLoop = [this] { NVVM::CpAsyncWaitGroupOp::create(b, loc, 0); };
  return staging;
}

SmallVector<Value> BlockBuilder::warpgroupLoop(Value steps,
                                               const TileStaging &staging) {
  const MmaTiles &tiles = k.tiles;
  int64_t accChunks = dv / kChunk;
  int64_t accValues = 4 * accChunks;
  int64_t probValues = 4 * (tiles.kvTile / 16);
  Value zero = f32c(0.0);
  Value negInf = f32c(kNegInf);
  // The carried P: 4 registers per 16 keys, after O, maxes and sums.
  auto probsOf = [&](ValueRange carried) {
    SmallVector<Fragment> probs;
    for (int64_t i = 0; i < probValues / 4; ++i)
      probs.push_back(Fragment(carried.slice(accValues + 4 + 4 * i, 4)));
    return probs;
  };
  // Step j (the staging's step it, whose tiles are in buffer it % 2)
  // issues S_j and, with `previous` P_j-1, O += P_j-1 V_j-1, then runs the
  // softmax of S_j while that runs. Returns (O, maxes, sums, P_j).
  auto step = [&](Value j, ValueRange carried, bool previous) {
    SmallVector<BandTile> acc = tilesOf(carried, 1, accChunks);
    SmallVector<Value> maxes(carried.slice(accValues, 2));
    SmallVector<Value> sums(carried.slice(accValues + 2, 2));
    Value it = add(staging.base, j);
    Value buffer = rem(it, 2);
    Value kv0 = kvStart(j);
    staging.beforeStep(j, it, kv0, previous);
    PvOperands pv;
    if (previous)
      pv = pvOperands(probsOf(carried), sub(c(1), buffer));
    SmallVector<Value> s = issueScores(buffer);
    if (previous) {
      issueAccumulate(pv, acc);
      s = warpgroupWait(b, loc, s, 1);
    } else {
      s = warpgroupWait(b, loc, s, 0);
    }
    staging.keysRead(it);
    SmallVector<Value> corrections;
    SmallVector<BandTile> probs = scoresToProbs(
        tilesOf(s, 1, tiles.kvTile / kChunk), j, kv0, maxes, sums, corrections);
    if (previous) {
      SmallVector<Value> o =
          warpgroupWait(b, loc, flattenTiles(acc), 0, pv.inputs());
      acc = tilesOf(o, 1, accChunks);
      staging.valuesRead(sub(it, c(1)));
    }
    rescale(acc, corrections);
    SmallVector<Value> out = flattenTiles(acc);
    out.append(maxes);
    out.append(sums);
    for (const Fragment &fragment : probs[0])
      out.append(fragment.begin(), fragment.end());
    return out;
  };

  SmallVector<Value> inits(accValues, zero);
  inits.append({negInf, negInf, zero, zero});
  Type probType = element.isBF16() ? Type(i32) : VectorType::get({2}, element);
  Value noProb = LLVM::UndefOp::create(b, loc, probType);
  inits.append(SmallVector<Value>(probValues, noProb));
  SmallVector<Type> types = llvm::to_vector(ValueRange(inits).getTypes());
  // Step 0 has no P V before it.
  auto first = scf::IfOp::create(b, loc, types, less(c(0), steps),
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    scf::YieldOp::create(b, loc, step(c(0), inits, /*previous=*/false));
    b.setInsertionPointToStart(first.elseBlock());
    scf::YieldOp::create(b, loc, inits);
  }
  auto loop = scf::ForOp::create(b, loc, c(1), steps, c(1), first.getResults());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(b, loc,
                         step(loop.getInductionVar(), loop.getRegionIterArgs(),
                              /*previous=*/true));
  }
  // The last P V, once its V landed.
  ValueRange results = loop.getResults();
  auto last = scf::IfOp::create(
      b, loc, TypeRange(ValueRange(results.take_front(accValues)).getTypes()),
      less(c(0), steps), /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(last.thenBlock());
    Value it = add(staging.base, sub(steps, c(1)));
    staging.beforeLastAccumulate(it);
    SmallVector<BandTile> acc =
        tilesOf(results.take_front(accValues), 1, accChunks);
    issueAccumulate(pvOperands(probsOf(results), rem(it, 2)), acc);
    SmallVector<Value> o = warpgroupWait(b, loc, flattenTiles(acc), 0);
    staging.valuesRead(it);
    scf::YieldOp::create(b, loc, o);
    b.setInsertionPointToStart(last.elseBlock());
    scf::YieldOp::create(b, loc, results.take_front(accValues));
  }
  staging.afterLoop();
  SmallVector<Value> out(last.getResults());
  out.append(results.begin() + accValues, results.begin() + accValues + 4);
  return out;
}

void BlockBuilder::buildWarpgroup() {
  Value steps = startBlockTile();
  // Warpgroup w's rows start 64 w rows into each swizzled tile.
  Swizzle swizzle = Swizzle::forWidth(d);
  Value rows = mul(div(k.tid, 128), c(64 * swizzle.rowBytes));
  queryDescriptor = swizzledDescriptor(
      b, loc, swizzle, add(stageAddress(k.queryStage, Value()), rows),
      /*leadingBytes=*/16, /*strideBytes=*/8 * swizzle.rowBytes);
  finishTile(warpgroupLoop(steps, copyStaging(steps)), /*staged=*/true);
}
