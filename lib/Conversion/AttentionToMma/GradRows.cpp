//===- GradRows.cpp - row statistics and gradient stores ------------------===//
//
// What the backward kernels read and write a row at a time: Delta (the
// dQ kernel computes it), L and Delta of the streamed rows (the dK/dV
// kernel copies them), and the gradients' rows.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

void GradBuilder::copyRowStats(Value h, Value q0, Value buffer) {
  // A 4-byte copy per value: thread i copies L and Delta's word of row i,
  // as many rounds as the block needs.
  Value lastRow = max(sub(m, c(1)), c(0));
  Value deltaRow = mul(add(mul(k.batch, queryHeads), h), m);
  int64_t threads = copyThreads;
  for (int64_t first = 0; first < qTile; first += threads) {
    Value row = add(k.tid, c(first));
    auto copy = [&] {
      Value q = add(q0, row);
      Value at = min(q, lastRow);
      Value elements = arith::SelectOp::create(b, loc, less(q, m), c(1), c(0));
      nvgpu::DeviceAsyncCopyOp::create(
          b, loc, k.lseStage, ValueRange{buffer, row}, k.lse,
          ValueRange{k.batch, h, at}, b.getIndexAttr(1), elements, UnitAttr());
      nvgpu::DeviceAsyncCopyOp::create(b, loc, k.deltaStage,
                                       ValueRange{buffer, row}, k.delta,
                                       ValueRange{add(deltaRow, at)},
                                       b.getIndexAttr(1), elements, UnitAttr());
    };
    if (first + threads <= qTile) {
      copy();
      continue;
    }
    auto inTile = scf::IfOp::create(b, loc, less(row, c(qTile)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inTile.thenBlock());
    copy();
  }
}

void GradBuilder::storeDelta(Value q0, Value h) {
  // Two threads per row, each summing half of it.
  Value row = div(k.tid, 2);
  Value half = rem(k.tid, 2);
  Value position = add(q0, row);
  Value at = min(position, max(sub(m, c(1)), c(0)));
  auto vectorOf = [&](Value buffer) {
    return VectorType::get({kVectorElements},
                           cast<MemRefType>(buffer.getType()).getElementType());
  };
  auto wide = VectorType::get({kVectorElements}, f32);
  Value sum = arith::ConstantOp::create(
      b, loc, wide, DenseElementsAttr::get(wide, b.getF32FloatAttr(0.0)));
  for (int64_t i = 0; i < dv / (2 * kVectorElements); ++i) {
    Value col = add(mul(half, c(dv / 2)), c(kVectorElements * i));
    auto load = [&](Value buffer) -> Value {
      Value v = vector::LoadOp::create(
          b, loc, vectorOf(buffer), buffer, ValueRange{k.batch, h, at, col},
          /*nontemporal=*/false, b.getI64IntegerAttr(16));
      if (cast<VectorType>(v.getType()).getElementType() != f32)
        v = arith::ExtFOp::create(b, loc, wide, v);
      return v;
    };
    sum =
        vector::FMAOp::create(b, loc, load(k.output), load(k.gradOutput), sum);
  }
  Value total =
      vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, sum);
  total = arith::AddFOp::create(b, loc, total, shuffleXor(total, 1));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, half, c(0));
  auto writer = scf::IfOp::create(b, loc, first);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(writer.thenBlock());
  memref::StoreOp::create(b, loc, total, k.deltaStage, ValueRange{row});
  Value stores = less(position, m);
  // Every column slice computes the same Delta; the first stores it.
  if (k.slice) {
    Value firstSlice =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k.slice, c(0));
    stores = arith::AndIOp::create(b, loc, stores, firstSlice);
  }
  auto inside = scf::IfOp::create(b, loc, stores);
  b.setInsertionPointToStart(inside.thenBlock());
  Value word = add(mul(add(mul(k.batch, queryHeads), h), m), position);
  memref::StoreOp::create(b, loc, arith::BitcastOp::create(b, loc, i32, total),
                          k.delta, ValueRange{word});
}

void GradBuilder::storeRows(const BandTile &acc, Value dest, Value head,
                            Value row0, Value column, Value limit,
                            double scale) {
  Type type = cast<MemRefType>(dest.getType()).getElementType();
  int64_t bytes = type.getIntOrFloatBitWidth() / 8;
  Value factor = f32c(scale);
  Value firstCol = column ? add(t2, column) : t2;
  for (int64_t r = 0; r < 2; ++r) {
    Value row = add(row0, add(add(warpRow, g), c(8 * r)));
    auto inside = scf::IfOp::create(b, loc, less(row, limit));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inside.thenBlock());
    for (auto [chunk, values] : llvm::enumerate(acc)) {
      Value lo = arith::MulFOp::create(b, loc, values[2 * r], factor);
      Value hi = arith::MulFOp::create(b, loc, values[2 * r + 1], factor);
      Value pair = vector::FromElementsOp::create(
          b, loc, VectorType::get({2}, f32), ValueRange{lo, hi});
      if (type != f32)
        pair =
            arith::TruncFOp::create(b, loc, VectorType::get({2}, type), pair);
      vector::StoreOp::create(
          b, loc, pair, dest,
          ValueRange{k.batch, head, row, add(firstCol, c(kChunk * chunk))},
          /*nontemporal=*/false, b.getI64IntegerAttr(2 * bytes));
    }
  }
}
