//===- MmaKernel.cpp - the body of the tensor-core attention kernel -------===//
//
// The parts every tensor-core kernel shares, whatever its MMA generation:
// copies into shared memory, score_mod and the masks per register, the
// online softmax on the accumulator fragments (the m16n8 order, which
// mma.sync and wgmma share, and which is also PV's A operand once rounded),
// the epilogue and the block's setup. Every fragment array is indexed by
// constants only (the C++ loops unroll), so it lives in registers. The
// mainloops are MmaSyncMainloop.cpp and WgmmaMainloop.cpp, the
// warp-specialized kernel WarpSpecialized.cpp; MmaKernel::build picks one
// by the op's kernel kind.
//
//===----------------------------------------------------------------------===//

#include "BlockBuilder.h"
#include "WarpgroupMma.h"

#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

void BlockBuilder::transposeQuad(MutableArrayRef<Value> words) {
  // Two exchanges: between lanes two apart, the pairs of words whose
  // index differs from the lane's in bit 1; then between neighbours, in
  // bit 0. Each lane sends the words it gives up and takes the partner's
  // into the same places.
  for (int64_t bit : {2, 1}) {
    Value high =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                              arith::AndIOp::create(b, loc, t, c(bit)), c(0));
    for (int64_t low = 0; low < 4; ++low) {
      if (low & bit)
        continue;
      Value &kept = words[low];
      Value &given = words[low | bit];
      Value send = arith::SelectOp::create(b, loc, high, kept, given);
      Value taken = shuffleXor(send, bit);
      Value newKept = arith::SelectOp::create(b, loc, high, taken, kept);
      given = arith::SelectOp::create(b, loc, high, given, taken);
      kept = newKept;
    }
  }
}

Value BlockBuilder::maskScore(Value x, Value keep, Value negInf) {
  Value whole = LLVM::FreezeOp::create(b, loc, keep);
  return arith::SelectOp::create(b, loc, whole, x, negInf);
}

BandTile BlockBuilder::modifyScores(ArrayRef<Fragment> s, Value kv0,
                                    int64_t band, bool masked) {
  BandTile out;
  Value lastKv = max(sub(n, c(1)), c(0));
  Value negInf = f32c(kNegInf);
  Value scale = f32c(op.getScaleValue());
  Value preScale = softmaxScale() == 1.0 ? f32c(scoreScale()) : Value();
  if (masked && !op.hasMaskMod() && !op.hasScoreMod()) {
    // Only the kv tail and causal: a register at column kv0 + 2t + o (o a
    // constant) is kept when o < limit, one i32 limit per row.
    Value tail = sub(sub(n, kv0), t2);
    Value limits[2];
    for (int64_t r = 0; r < 2; ++r) {
      Value limit = tail;
      if (op.getCausal()) {
        Value q = add(offQ, rowQ[band][r]);
        limit = min(limit, sub(sub(add(sub(q, offKV), c(1)), kv0), t2));
      }
      limits[r] = asI32(limit);
    }
    for (auto [chunk, values] : llvm::enumerate(s)) {
      Fragment modified;
      for (int64_t e = 0; e < 4; ++e) {
        Value x = values[e];
        if (preScale)
          x = arith::MulFOp::create(b, loc, x, preScale);
        Value offset =
            arith::ConstantIntOp::create(b, loc, i32, kChunk * chunk + e % 2);
        Value keep = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                           offset, limits[e / 2]);
        modified.push_back(arith::SelectOp::create(b, loc, keep, x, negInf));
      }
      out.push_back(modified);
    }
    return out;
  }
  // The masks in i32 where the mask_mod allows (positions are below 2^31):
  // half the instructions of 64-bit index arithmetic, on the partial
  // blocks' critical path.
  bool narrow = masked && op.hasMaskMod() && maskFitsI32;
  Value kvBase32, lastKv32, n32, offKV32, batch32, head32, rowQ32[2];
  if (narrow) {
    kvBase32 = asI32(add(kv0, t2));
    lastKv32 = asI32(lastKv);
    n32 = asI32(n);
    offKV32 = asI32(offKV);
    batch32 = asI32(batchW);
    head32 = asI32(headW);
    for (int64_t r = 0; r < 2; ++r)
      rowQ32[r] = asI32(regionQ[band][r]);
  }
  for (auto [chunk, values] : llvm::enumerate(s)) {
    Fragment modified;
    for (int64_t e = 0; e < 4; ++e) {
      Value kv = add(kv0, add(t2, c(kChunk * chunk + e % 2)));
      Value regionKv = add(offKV, min(kv, lastKv));
      Value q = regionQ[band][e / 2];
      Value x = values[e];
      if (op.hasScoreMod()) {
        Value scaled = arith::MulFOp::create(b, loc, x, scale);
        x = k.regions.scoreMod(b, loc, scaled, batchW, headW, q, regionKv);
      }
      if (preScale)
        x = arith::MulFOp::create(b, loc, x, preScale);
      if (narrow) {
        Value kv32 = arith::AddIOp::create(
            b, loc, kvBase32,
            arith::ConstantIntOp::create(b, loc, i32, kChunk * chunk + e % 2));
        Value q32 = rowQ32[e / 2];
        Value regionKv32 = arith::AddIOp::create(
            b, loc, offKV32, arith::MinSIOp::create(b, loc, kv32, lastKv32));
        Value keep =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, kv32, n32);
        if (op.getCausal())
          keep = arith::AndIOp::create(
              b, loc, keep,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                    regionKv32, q32));
        keep = arith::AndIOp::create(
            b, loc, keep,
            k.regions.maskModI32(b, loc, batch32, head32, q32, regionKv32));
        x = maskScore(x, keep, negInf);
      } else if (masked) {
        Value keep = less(kv, n);
        if (op.getCausal()) {
          Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                              regionKv, q);
          keep = arith::AndIOp::create(b, loc, keep, below);
        }
        if (op.hasMaskMod()) {
          Value mask = k.regions.maskMod(b, loc, batchW, headW, q, regionKv);
          keep = arith::AndIOp::create(b, loc, keep, mask);
        }
        x = maskScore(x, keep, negInf);
      }
      modified.push_back(x);
    }
    out.push_back(modified);
  }
  return out;
}

void BlockBuilder::storeOutput(ArrayRef<BandTile> acc, ArrayRef<Value> sums,
                               ArrayRef<Value> maxes, bool staged) {
  Value zero = f32c(0.0);
  Value one = f32c(1.0);
  SmallVector<Value> inverse;
  for (Value sum : sums) {
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, zero);
    Value reciprocal = arith::DivFOp::create(b, loc, one, sum);
    inverse.push_back(arith::SelectOp::create(b, loc, empty, zero, reciprocal));
  }
  int64_t outBytes = outElement.getIntOrFloatBitWidth() / 8;
  auto pairType = VectorType::get({2}, f32);
  // Row r's column pair at `col`, scaled and rounded to the output type.
  auto outputPair = [&](const Fragment &values, int64_t band, int64_t r) {
    Value scale = inverse[2 * band + r];
    Value lo = arith::MulFOp::create(b, loc, values[2 * r], scale);
    Value hi = arith::MulFOp::create(b, loc, values[2 * r + 1], scale);
    Value pair =
        vector::FromElementsOp::create(b, loc, pairType, ValueRange{lo, hi});
    if (outElement != f32)
      pair = arith::TruncFOp::create(b, loc, VectorType::get({2}, outElement),
                                     pair);
    return pair;
  };
  if (!staged) {
    // Shared memory may already hold the next tile's Q: each lane stores
    // from its registers, a row's stores under one bounds check so that
    // they share its address.
    int64_t chunks = dv / kChunk;
    bool quadVectors = outBytes == 2 && chunks % 4 == 0;
    for (int64_t band = 0; band < bands; ++band)
      for (int64_t r = 0; r < 2; ++r) {
        Value row = rowQ[band][r];
        if (!quadVectors) {
          auto inside = scf::IfOp::create(b, loc, less(row, m));
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(inside.thenBlock());
          for (auto [chunk, values] : llvm::enumerate(acc[band]))
            vector::StoreOp::create(
                b, loc, outputPair(values, band, r), k.output,
                ValueRange{k.batch, k.head, row, add(t2, c(kChunk * chunk))},
                /*nontemporal=*/false, b.getI64IntegerAttr(2 * outBytes));
          continue;
        }
        // A quad holds four chunks' pairs; transposed across the quad
        // (every lane shuffles, before the bounds check), each lane holds
        // one chunk's eight columns and stores them as one 16-byte vector.
        SmallVector<Value> vectors;
        for (int64_t first = 0; first < chunks; first += 4) {
          SmallVector<Value> words;
          for (int64_t chunk = first; chunk < first + 4; ++chunk)
            words.push_back(asWord(outputPair(acc[band][chunk], band, r)));
          transposeQuad(words);
          Value vector = vector::FromElementsOp::create(
              b, loc, VectorType::get({4}, i32), words);
          vectors.push_back(vector::BitCastOp::create(
              b, loc, VectorType::get({8}, outElement), vector));
        }
        auto inside = scf::IfOp::create(b, loc, less(row, m));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(inside.thenBlock());
        for (auto [i, vector] : llvm::enumerate(vectors))
          vector::StoreOp::create(b, loc, vector, k.output,
                                  ValueRange{k.batch, k.head, row,
                                             mul(add(t, c(4 * i)), c(kChunk))},
                                  /*nontemporal=*/false,
                                  b.getI64IntegerAttr(16));
      }
  } else {
    // The Q tile's rows become the output rows: every warp is past its last
    // read of Q, K and V.
    gpu::BarrierOp::create(b, loc);
    for (int64_t band = 0; band < bands; ++band) {
      for (auto [chunk, values] : llvm::enumerate(acc[band])) {
        Value col = add(t2, c(kChunk * chunk));
        for (int64_t r = 0; r < 2; ++r) {
          Value pair = outputPair(values, band, r);
          Value row = add(add(warpRow, g), c(16 * band + 8 * r));
          vector::StoreOp::create(
              b, loc, pair, k.outputStage, ValueRange{row, col},
              /*nontemporal=*/false, b.getI64IntegerAttr(2 * outBytes));
        }
      }
    }
    // Each warp reads back only its own rows.
    NVVM::SyncWarpOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, i32, -1).getResult());
    int64_t vectorElements = 16 / outBytes;
    int64_t chunksPerRow = dv / vectorElements;
    auto vectorType = VectorType::get({vectorElements}, outElement);
    for (int64_t i = 0; i < 16 * bands * chunksPerRow / 32; ++i) {
      Value idx = add(lane, c(32 * i));
      Value stageRow = add(warpRow, div(idx, chunksPerRow));
      Value col = mul(rem(idx, chunksPerRow), c(vectorElements));
      Value row = add(q0, stageRow);
      auto inside = scf::IfOp::create(b, loc, less(row, m));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(inside.thenBlock());
      Value v = vector::LoadOp::create(
          b, loc, vectorType, k.outputStage, ValueRange{stageRow, col},
          /*nontemporal=*/false, b.getI64IntegerAttr(16));
      vector::StoreOp::create(b, loc, v, k.output,
                              ValueRange{k.batch, k.head, row, col},
                              /*nontemporal=*/false, b.getI64IntegerAttr(16));
    }
  }
  if (!k.lse)
    return;
  // lse = (max + log2(sum)) * ln(2) in natural log; -inf for empty rows.
  Value firstOfQuad =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, t, c(0));
  for (int64_t band = 0; band < bands; ++band)
    for (int64_t r = 0; r < 2; ++r) {
      Value sum = sums[2 * band + r];
      Value row = rowQ[band][r];
      Value store = arith::AndIOp::create(b, loc, firstOfQuad, less(row, m));
      auto inside = scf::IfOp::create(b, loc, store);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(inside.thenBlock());
      Value log2Sum = math::Log2Op::create(b, loc, sum);
      Value lse = arith::MulFOp::create(
          b, loc, arith::AddFOp::create(b, loc, maxes[2 * band + r], log2Sum),
          f32c(kLn2));
      Value empty =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sum, zero);
      lse = arith::SelectOp::create(b, loc, empty, f32c(kNegInf), lse);
      memref::StoreOp::create(b, loc, lse, k.lse,
                              ValueRange{k.batch, k.head, row});
    }
}

SmallVector<Fragment> BlockBuilder::softmax(SmallVector<Fragment> &s,
                                            SmallVector<Value> &maxes,
                                            SmallVector<Value> &sums,
                                            SmallVector<Value> &corrections) {
  double factor = softmaxScale();
  Value factorValue = f32c(factor);
  Value zero = f32c(0.0);
  Value negInf = f32c(kNegInf);
  for (int64_t r = 0; r < 2; ++r) {
    // The row's max over the lane's columns, then over its quad.
    Value rowMax = s[0][2 * r];
    for (auto [chunk, values] : llvm::enumerate(s))
      for (int64_t e = 2 * r; e < 2 * r + 2; ++e)
        if (chunk != 0 || e != 2 * r)
          rowMax = arith::MaximumFOp::create(b, loc, rowMax, values[e]);
    for (int32_t offset : {1, 2})
      rowMax =
          arith::MaximumFOp::create(b, loc, rowMax, shuffleXor(rowMax, offset));
    if (factor != 1.0)
      rowMax = arith::MulFOp::create(b, loc, rowMax, factorValue);
    Value newMax = arith::MaximumFOp::create(b, loc, maxes[r], rowMax);
    // A row with nothing unmasked yet subtracts 0, not -inf (no NaN).
    Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        newMax, negInf);
    Value usedMax = arith::SelectOp::create(b, loc, empty, zero, newMax);
    Value negMax = arith::NegFOp::create(b, loc, usedMax);
    Value correction = math::Exp2Op::create(
        b, loc, arith::SubFOp::create(b, loc, maxes[r], usedMax));
    Value rowSum;
    for (Fragment &values : s)
      for (int64_t e = 2 * r; e < 2 * r + 2; ++e) {
        values[e] = math::Exp2Op::create(
            b, loc,
            math::FmaOp::create(b, loc, values[e], factorValue, negMax));
        rowSum =
            rowSum
                ? arith::AddFOp::create(b, loc, rowSum, values[e]).getResult()
                : values[e];
      }
    sums[r] = math::FmaOp::create(b, loc, sums[r], correction, rowSum);
    maxes[r] = newMax;
    corrections.push_back(correction);
  }
  return asOperand(s);
}

void BlockBuilder::setUpThread() {
  m = memref::DimOp::create(b, loc, k.query, 2);
  n = memref::DimOp::create(b, loc, k.key, 2);
  Value heads = memref::DimOp::create(b, loc, k.query, 1);
  Value kvHeads = memref::DimOp::create(b, loc, k.key, 1);
  // max(Hkv, 1): no division by zero, even for empty shapes.
  group = arith::DivUIOp::create(b, loc, heads, max(kvHeads, c(1)));
  SmallVector<OpFoldResult> offsets = op.getMixedOffsets();
  offB = getValueOrCreateConstantIndexOp(b, loc, offsets[0]);
  offH = getValueOrCreateConstantIndexOp(b, loc, offsets[1]);
  offQ = getValueOrCreateConstantIndexOp(b, loc, offsets[2]);
  offKV = getValueOrCreateConstantIndexOp(b, loc, offsets[3]);
  copyThread = k.tid;
  copyThreads = k.tiles.threads();
}

void BlockBuilder::setUpLanes() {
  lane = rem(k.tid, 32);
  warpRow = mul(div(k.tid, 32), c(16 * bands));
  g = div(lane, 4);
  t = rem(lane, 4);
  t2 = mul(t, c(2));
  // ldmatrix x4: lanes 8i..8i+7 address the rows of matrix i.
  Value row8 = rem(lane, 8);
  Value half = mul(div(lane, 16), c(8));
  Value odd = mul(rem(div(lane, 8), 2), c(8));
  keyRowLane = add(half, row8);
  keyColLane = odd;
  valueRowLane = add(odd, row8);
  valueColLane = half;
  queryRowLane = rem(lane, 16);
  queryColLane = half;
}

Value BlockBuilder::setUpTile(llvm::function_ref<Value()> qBlock) {
  const MmaTiles &tiles = k.tiles;
  batchW = add(offB, k.batch);
  headW = add(offH, k.head);
  kvHead = arith::DivUIOp::create(b, loc, k.head, group);
  q0 = mul(qBlock(), c(tiles.qTile));
  if (!lane)
    setUpLanes();
  Value lastQ = max(sub(m, c(1)), c(0));
  rowQ.clear();
  regionQ.clear();
  for (int64_t band = 0; band < bands; ++band) {
    std::array<Value, 2> rows, clamped;
    for (int64_t r = 0; r < 2; ++r) {
      rows[r] = add(add(q0, warpRow), add(g, c(16 * band + 8 * r)));
      clamped[r] = add(offQ, min(rows[r], lastQ));
    }
    rowQ.push_back(rows);
    regionQ.push_back(clamped);
  }

  // The kv-tiles the block visits, and how many lead without masks.
  Value kvTile = c(tiles.kvTile);
  if (k.lists.counts) {
    listSteps = readLists();
    return listSteps.steps;
  }
  Value kvEnd = n;
  fullSteps = c(0);
  if (!op.hasMaskMod())
    fullSteps = arith::DivUIOp::create(b, loc, n, kvTile);
  if (op.getCausal()) {
    Value blockEnd = min(add(q0, c(tiles.qTile)), m);
    kvEnd = min(max(sub(add(offQ, blockEnd), offKV), c(0)), n);
    Value diagonal = add(sub(add(offQ, q0), offKV), c(1));
    Value below =
        max(arith::FloorDivSIOp::create(b, loc, diagonal, kvTile), c(0));
    fullSteps = min(fullSteps, below);
  }
  return arith::CeilDivUIOp::create(b, loc, kvEnd, kvTile);
}

Value BlockBuilder::startBlockTile() {
  setUpThread();
  // Causal blocks near the end of the rows have the most kv-tiles: they
  // start first.
  Value steps = setUpTile([&] {
    return op.getCausal() ? sub(sub(k.gridX, c(1)), k.blockX) : k.blockX;
  });
  copyRows(k.query, k.batch, k.head, q0, m, k.tiles.qTile, d, k.queryStage, {});
  commitGroup();
  copyKeyTile(c(0), steps, c(0));
  commitGroup();
  return steps;
}

void BlockBuilder::copyKeyTile(Value j, Value steps, Value buffer) {
  auto inLoop = scf::IfOp::create(b, loc, less(j, steps));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(inLoop.thenBlock());
  copyRows(k.key, k.batch, kvHead, kvStart(j), n, k.tiles.kvTile, d, k.keyStage,
           {buffer});
}

void BlockBuilder::finishTile(ArrayRef<Value> results, bool staged) {
  int64_t accValues = 4 * (dv / kChunk) * bands;
  SmallVector<BandTile> acc = tilesOf(
      ArrayRef<Value>(results).take_front(accValues), bands, dv / kChunk);
  SmallVector<Value> maxes(
      ArrayRef<Value>(results).slice(accValues, 2 * bands));
  SmallVector<Value> sums(
      ArrayRef<Value>(results).slice(accValues + 2 * bands, 2 * bands));
  // Each lane summed its own columns: add the quad's.
  for (Value &sum : sums)
    for (int32_t offset : {1, 2})
      sum = arith::AddFOp::create(b, loc, sum, shuffleXor(sum, offset));
  storeOutput(acc, sums, maxes, staged);
}

Value BlockBuilder::kvStart(Value j) {
  return k.lists.counts ? listStart(listSteps, j) : mul(j, c(k.tiles.kvTile));
}

Value BlockBuilder::needsMasks(Value j, Value kv0) {
  if (!k.lists.counts)
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, j,
                                 fullSteps);
  return listNeedsMasks(listSteps, j, kv0);
}

SmallVector<BandTile>
BlockBuilder::scoresToProbs(SmallVector<BandTile> s, Value j, Value kv0,
                            SmallVector<Value> &maxes, SmallVector<Value> &sums,
                            SmallVector<Value> &corrections) {
  // Tiles past the unmasked lead apply the masks.
  SmallVector<Value> flat = flattenTiles(s);
  auto masked =
      scf::IfOp::create(b, loc, TypeRange(SmallVector<Type>(flat.size(), f32)),
                        needsMasks(j, kv0), /*withElseRegion=*/true);
  for (bool withMasks : {true, false}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(withMasks ? masked.thenBlock()
                                         : masked.elseBlock());
    SmallVector<BandTile> modified;
    for (int64_t band = 0; band < bands; ++band)
      modified.push_back(modifyScores(s[band], kv0, band, withMasks));
    scf::YieldOp::create(b, loc, flattenTiles(modified));
  }
  s = tilesOf(masked.getResults(), bands, k.tiles.kvTile / kChunk);

  SmallVector<BandTile> probs;
  corrections.clear();
  for (int64_t band = 0; band < bands; ++band) {
    SmallVector<Value> bandMaxes(ArrayRef<Value>(maxes).slice(2 * band, 2));
    SmallVector<Value> bandSums(ArrayRef<Value>(sums).slice(2 * band, 2));
    probs.push_back(softmax(s[band], bandMaxes, bandSums, corrections));
    std::copy(bandMaxes.begin(), bandMaxes.end(), maxes.begin() + 2 * band);
    std::copy(bandSums.begin(), bandSums.end(), sums.begin() + 2 * band);
  }
  return probs;
}

void BlockBuilder::rescale(SmallVector<BandTile> &acc,
                           ArrayRef<Value> corrections) {
  for (int64_t band = 0; band < bands; ++band)
    for (Fragment &values : acc[band])
      for (int64_t e = 0; e < 4; ++e)
        values[e] = arith::MulFOp::create(b, loc, values[e],
                                          corrections[2 * band + e / 2]);
}

void MmaKernel::build() {
  BlockBuilder builder(*this);
  switch (tiles.kind()) {
  case KernelKind::mma_sync:
    return builder.buildMmaSync();
  case KernelKind::wgmma:
    return builder.buildWarpgroup();
  case KernelKind::wgmma_ws:
    return builder.buildWarpSpecialized();
  case KernelKind::simt:
    break;
  }
  llvm_unreachable("the SIMT kernel is not a tensor-core one");
}
