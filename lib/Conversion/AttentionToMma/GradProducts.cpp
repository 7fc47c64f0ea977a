//===- GradProducts.cpp - the backward kernels products -------------------===//
//
// The contractions of both backward kernels: own rows times a streamed
// tile into scores and dP (or their transposes), and the sums of P and dS
// times a streamed tile into the gradients. mma.sync m16n8k16 on ldmatrix
// fragments, or on sm_90a a warpgroup's wgmma on swizzled tiles, whose
// accumulators lie in each warp in mma.sync's order.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"
#include "WarpgroupMma.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

void GradBuilder::setUp(int64_t rows) {
  m = memref::DimOp::create(b, loc, k.query, 2);
  n = memref::DimOp::create(b, loc, k.key, 2);
  queryHeads = memref::DimOp::create(b, loc, k.query, 1);
  Value kvHeads = memref::DimOp::create(b, loc, k.key, 1);
  group = arith::DivUIOp::create(b, loc, queryHeads, max(kvHeads, c(1)));
  copyThread = k.tid;
  copyThreads = 2 * rows;
  lane = rem(k.tid, 32);
  warpRow = mul(div(k.tid, 32), c(16));
  g = div(lane, 4);
  t = rem(lane, 4);
  t2 = mul(t, c(2));
  // ldmatrix x4: lanes 8i..8i+7 address the rows of matrix i.
  Value row8 = rem(lane, 8);
  Value half = mul(div(lane, 16), c(8));
  Value odd = mul(rem(div(lane, 8), 2), c(8));
  ownRowLane = add(warpRow, rem(lane, 16));
  ownColLane = half;
  keyRowLane = add(half, row8);
  keyColLane = odd;
  valueRowLane = add(odd, row8);
  valueColLane = half;
  if (k.slice) {
    firstColumn = mul(k.slice, c(firstWidth));
    secondColumn = mul(k.slice, c(secondWidth));
  }
}

Fragment GradBuilder::ownFragment(Value stage, int64_t kk) {
  return loadMatrix(stage, {ownRowLane, add(ownColLane, c(16 * kk))},
                    /*transpose=*/false);
}

SmallVector<Fragment> GradBuilder::keptFragments(Value stage, int64_t width) {
  // Two tiles of 64 columns fit next to the accumulators; 128 do not.
  // wgmma reads them from shared memory.
  if (d + dv > 128 || warpgroup)
    return {};
  SmallVector<Fragment> fragments;
  for (int64_t kk = 0; kk < width / 16; ++kk)
    fragments.push_back(ownFragment(stage, kk));
  return fragments;
}

void GradBuilder::tilesLanded() {
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  // cp.async writes through the generic proxy, wgmma reads through the
  // async one.
  if (warpgroup)
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
}

SmallVector<BandTile> GradBuilder::rowProducts(ArrayRef<RowOperand> operands,
                                               Value buffer, int64_t columns) {
  if (warpgroup)
    return warpgroupRowProducts(operands, buffer, columns);
  SmallVector<BandTile> products;
  for (const RowOperand &operand : operands) {
    BandTile out(columns / kChunk, Fragment(4, f32c(0.0)));
    for (int64_t kk = 0; kk < operand.width / 16; ++kk) {
      Fragment a = operand.kept.empty() ? ownFragment(operand.own, kk)
                                        : operand.kept[kk];
      Value col = add(keyColLane, c(16 * kk));
      for (int64_t pair = 0; pair < columns / 16; ++pair) {
        Fragment rows =
            loadMatrix(operand.streamed,
                       {buffer, add(keyRowLane, c(16 * pair)), col}, false);
        out[2 * pair] = mmaSync(a, {rows[0], rows[1]}, out[2 * pair]);
        out[2 * pair + 1] = mmaSync(a, {rows[2], rows[3]}, out[2 * pair + 1]);
      }
    }
    products.push_back(out);
  }
  return products;
}

void GradBuilder::accumulate(ArrayRef<Accumulation> sums, Value buffer) {
  if (warpgroup)
    return warpgroupAccumulate(sums, buffer);
  for (const Accumulation &sum : sums) {
    int64_t width = 8 * sum.acc.size();
    Value firstCol = sum.column ? add(valueColLane, sum.column) : valueColLane;
    for (auto [kk, operand] : llvm::enumerate(sum.a)) {
      Value row = add(valueRowLane, c(16 * kk));
      for (int64_t pair = 0; pair < width / 16; ++pair) {
        Fragment rows = loadMatrix(
            sum.streamed, {buffer, row, add(firstCol, c(16 * pair))}, true);
        sum.acc[2 * pair] =
            mmaSync(operand, {rows[0], rows[1]}, sum.acc[2 * pair]);
        sum.acc[2 * pair + 1] =
            mmaSync(operand, {rows[2], rows[3]}, sum.acc[2 * pair + 1]);
      }
    }
  }
}

SmallVector<BandTile>
GradBuilder::warpgroupRowProducts(ArrayRef<RowOperand> operands, Value buffer,
                                  int64_t columns) {
  // Both operands K-major: k-step kk lies in swizzled tile kk / steps,
  // 32 bytes per step within; warpgroup w's own rows start 64 w rows in.
  SmallVector<BandTile> products;
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (const RowOperand &operand : operands) {
    Swizzle swizzle = Swizzle::forWidth(operand.width);
    int64_t ownRows = cast<MemRefType>(operand.own.getType()).getDimSize(1);
    Value warpgroupRows = mul(div(k.tid, 128), c(64 * swizzle.rowBytes));
    Value ownDescriptor = swizzledDescriptor(
        b, loc, swizzle,
        add(stageAddress(b, loc, operand.own, Value()), warpgroupRows),
        /*leadingBytes=*/16, /*strideBytes=*/8 * swizzle.rowBytes);
    Value streamedDescriptor = swizzledDescriptor(
        b, loc, swizzle, stageAddress(b, loc, operand.streamed, buffer),
        /*leadingBytes=*/16, /*strideBytes=*/8 * swizzle.rowBytes);
    int64_t stepsPerTile = swizzle.columns() / 16;
    SmallVector<Value> out(columns / 2, LLVM::UndefOp::create(b, loc, f32));
    for (int64_t kk = 0; kk < operand.width / 16; ++kk) {
      int64_t tile = kk / stepsPerTile, within = (kk % stepsPerTile) * 32;
      out = warpgroupMma(
          b, loc, element, out,
          advanceDescriptor(b, loc, ownDescriptor,
                            tile * ownRows * swizzle.rowBytes + within),
          advanceDescriptor(b, loc, streamedDescriptor,
                            tile * columns * swizzle.rowBytes + within),
          /*transposeB=*/false, /*accumulate=*/kk > 0);
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    products.push_back(tilesOf(out, 1, columns / kChunk)[0]);
  }
  return products;
}

void GradBuilder::warpgroupAccumulate(ArrayRef<Accumulation> sums,
                                      Value buffer) {
  SmallVector<Value> all, registers;
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (const Accumulation &sum : sums) {
    assert(!sum.column && "wgmma's head dims need no column slices");
    int64_t width = 8 * sum.acc.size();
    // The streamed tile is MN-major: its swizzled tiles lie `rows` rows
    // apart, k-step kk 16 rows in.
    Swizzle swizzle = Swizzle::forWidth(width);
    int64_t rows = cast<MemRefType>(sum.streamed.getType()).getDimSize(2);
    Value descriptor = swizzledDescriptor(
        b, loc, swizzle, stageAddress(b, loc, sum.streamed, buffer),
        /*leadingBytes=*/rows * swizzle.rowBytes,
        /*strideBytes=*/8 * swizzle.rowBytes);
    SmallVector<Value> acc = flattenTiles({sum.acc});
    for (auto [kk, operand] : llvm::enumerate(sum.a)) {
      SmallVector<Value> a;
      for (Value reg : operand)
        a.push_back(reg.getType() == i32 ? reg : asWord(reg));
      registers.append(a);
      acc = warpgroupMma(
          b, loc, element, acc, a,
          advanceDescriptor(b, loc, descriptor, 16 * kk * swizzle.rowBytes),
          /*transposeB=*/true, /*accumulate=*/true);
    }
    all.append(acc);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // The A registers stay live until the wgmmas that read them are done.
  all = warpgroupWait(b, loc, all, 0, registers);
  ArrayRef<Value> done(all);
  for (const Accumulation &sum : sums) {
    int64_t values = 4 * sum.acc.size();
    sum.acc = tilesOf(done.take_front(values), 1, sum.acc.size())[0];
    done = done.drop_front(values);
  }
}

BandTile GradBuilder::landed(const BandTile &tile, int64_t pending) {
  if (!warpgroup)
    return tile;
  return tilesOf(warpgroupWait(b, loc, flattenTiles({tile}), pending), 1,
                 tile.size())[0];
}
