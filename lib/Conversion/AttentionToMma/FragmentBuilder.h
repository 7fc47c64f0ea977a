//===- FragmentBuilder.h - mma.sync building blocks -------------*- C++ -*-===//
//
// What the forward and backward tensor-core kernels build alike: index
// arithmetic, cp.async copies of rows into shared memory, ldmatrix,
// mma.sync m16n8k16 and the packing of f32 fragments into 16-bit operands.
// The fragment layout is the m16n8 accumulator's: lane l holds, for each
// 8-column chunk, columns 2(l % 4) and 2(l % 4) + 1 of rows l / 4 and
// l / 4 + 8.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTENTIONTOMMA_FRAGMENTBUILDER_H
#define ATTN_LIB_CONVERSION_ATTENTIONTOMMA_FRAGMENTBUILDER_H

#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::attn::mma {

/// Elements of a 16-byte copy or row pad, for 16-bit inputs.
constexpr int64_t kVectorElements = 8;
/// A fragment row of the m16n8 accumulator: 4 f32 per lane per 8 columns.
constexpr int64_t kChunk = 8;

/// Four values per lane: an mma.sync A fragment (i32 pairs), or an
/// accumulator chunk (f32: rows g and g + 8, two columns each).
using Fragment = SmallVector<Value, 4>;
/// A band's fragments: 16 rows, 8 columns per fragment.
using BandTile = SmallVector<Fragment>;

/// Every band's fragments as one value list (loop-carried, yielded).
inline SmallVector<Value> flattenTiles(ArrayRef<BandTile> tiles) {
  SmallVector<Value> values;
  for (const BandTile &tile : tiles)
    for (const Fragment &fragment : tile)
      values.append(fragment.begin(), fragment.end());
  return values;
}

/// The inverse of flattenTiles for `bands` tiles of `chunks` fragments.
inline SmallVector<BandTile> tilesOf(ValueRange values, int64_t bands,
                                     int64_t chunks) {
  SmallVector<BandTile> tiles(bands);
  for (int64_t i = 0; i < bands * chunks; ++i)
    tiles[i / chunks].push_back(Fragment(values.slice(4 * i, 4)));
  return tiles;
}

class FragmentBuilder {
public:
  /// `element`: the 16-bit type of the MMA operands.
  FragmentBuilder(OpBuilder &b, Location loc, Type element)
      : b(b), loc(loc), element(element), f32(b.getF32Type()),
        i32(b.getI32Type()) {}

protected:
  // Index arithmetic.
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, int64_t y) {
    return arith::DivUIOp::create(b, loc, x, c(y));
  }
  Value rem(Value x, int64_t y) {
    return arith::RemUIOp::create(b, loc, x, c(y));
  }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  Value less(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value asI32(Value x) { return arith::IndexCastOp::create(b, loc, i32, x); }
  Value f32c(double v) { return f32Constant(b, loc, v); }

  /// Issues the cp.async copies of rows [start, start + rows) of `source`
  /// at (batch, head) into `stage` (at `stageIndex` ahead of the row, if
  /// any); rows at or past `limit` are zero-filled. The `copyThreads`
  /// threads from `copyThread` 0 share the copies; `swizzledStages` says
  /// whether the stage is wgmma's swizzled layout or padded rows.
  void copyRows(Value source, Value batch, Value head, Value start, Value limit,
                int64_t rows, int64_t width, Value stage,
                ValueRange stageIndex);
  void commitGroup() { NVVM::CpAsyncCommitGroupOp::create(b, loc); }
  /// Waits until at most `pending` committed groups are in flight, then
  /// for the whole block.
  void waitGroups(int32_t pending) {
    NVVM::CpAsyncWaitGroupOp::create(b, loc, pending);
    gpu::BarrierOp::create(b, loc);
  }

  /// An x4 ldmatrix at [indices] as four i32 registers.
  Fragment loadMatrix(Value stage, ValueRange indices, bool transpose);
  /// D += A * B on one m16n8k16 tile.
  Fragment mmaSync(ArrayRef<Value> a, ArrayRef<Value> bPair,
                   ArrayRef<Value> acc);
  /// Two f32 as one register of two 16-bit values.
  Value pack(Value lo, Value hi);
  /// Accumulator chunks (f32, 8 columns each) as A fragments of 16
  /// columns each: the k-steps of a product whose A is this tile.
  SmallVector<Fragment> asOperand(ArrayRef<Fragment> chunks);
  /// A vector<2xf16> is an f16 mma operand as it is; bf16 pairs go as i32
  /// (nvvm.mma.sync's bf16 form).
  Value asRegister(Value pair);
  Value shuffleXor(Value v, int32_t offset);
  /// A pair of 16-bit values as one i32.
  Value asWord(Value pair);

  OpBuilder &b;
  Location loc;
  Type element, f32, i32;
  Value copyThread;
  int64_t copyThreads = 0;
  bool swizzledStages = false;
};

} // namespace mlir::attn::mma

#endif // ATTN_LIB_CONVERSION_ATTENTIONTOMMA_FRAGMENTBUILDER_H
