//===- FragmentBuilder.cpp - mma.sync building blocks ---------------------===//
//
// See FragmentBuilder.h.
//
//===----------------------------------------------------------------------===//

#include "FragmentBuilder.h"
#include "WarpgroupMma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

void FragmentBuilder::copyRows(Value source, Value batch, Value head,
                               Value start, Value limit, int64_t rows,
                               int64_t width, Value stage,
                               ValueRange stageIndex) {
  int64_t chunksPerRow = width / kVectorElements;
  int64_t total = rows * chunksPerRow;
  int64_t threads = copyThreads;
  // When the copying threads cover whole rows, a thread's copies differ by
  // constant rows, so their addresses differ by constants.
  bool wholeRows = threads % chunksPerRow == 0;
  Value firstRow = div(copyThread, chunksPerRow);
  Value firstCol = mul(rem(copyThread, chunksPerRow), c(kVectorElements));
  // The copy of `row` at column `col`.
  auto copy = [&](Value row, Value col) {
    Value position = add(start, row);
    // A row past `limit` copies 0 bytes (zero fill) and reads nothing.
    Value elements = arith::SelectOp::create(b, loc, less(position, limit),
                                             c(kVectorElements), c(0));
    SmallVector<Value> to(stageIndex);
    if (swizzledStages) {
      Swizzle swizzle = Swizzle::forWidth(width);
      to.append(
          {div(col, swizzle.columns()), row,
           swizzledColumn(b, loc, swizzle, row, rem(col, swizzle.columns()))});
    } else
      to.append({row, col});
    nvgpu::DeviceAsyncCopyOp::create(
        b, loc, stage, to, source, ValueRange{batch, head, position, col},
        b.getIndexAttr(kVectorElements), elements, b.getUnitAttr());
  };
  for (int64_t i = 0; i * threads < total; ++i) {
    Value idx = add(copyThread, c(i * threads));
    auto copyChunk = [&] {
      Value row = wholeRows ? add(firstRow, c(i * threads / chunksPerRow))
                            : div(idx, chunksPerRow);
      Value col = wholeRows ? firstCol
                            : mul(rem(idx, chunksPerRow), c(kVectorElements));
      copy(row, col);
    };
    if ((i + 1) * threads <= total) {
      copyChunk();
      continue;
    }
    auto inTile = scf::IfOp::create(b, loc, less(idx, c(total)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inTile.thenBlock());
    copyChunk();
  }
}

Value FragmentBuilder::pack(Value lo, Value hi) {
  Value pair = vector::FromElementsOp::create(b, loc, VectorType::get({2}, f32),
                                              ValueRange{lo, hi});
  return asRegister(
      arith::TruncFOp::create(b, loc, VectorType::get({2}, element), pair));
}

Value FragmentBuilder::asWord(Value pair) {
  Value word =
      vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), pair);
  return vector::ExtractOp::create(b, loc, word, 0);
}

Value FragmentBuilder::shuffleXor(Value v, int32_t offset) {
  return gpu::ShuffleOp::create(b, loc, v, offset, /*width=*/32,
                                gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

Fragment FragmentBuilder::loadMatrix(Value stage, ValueRange indices,
                                     bool transpose) {
  auto type = VectorType::get({4, 2}, element);
  Value tiles =
      nvgpu::LdMatrixOp::create(b, loc, type, stage, indices, transpose, 4);
  Fragment registers;
  for (int64_t i = 0; i < 4; ++i)
    registers.push_back(
        asRegister(vector::ExtractOp::create(b, loc, tiles, i)));
  return registers;
}

Fragment FragmentBuilder::mmaSync(ArrayRef<Value> a, ArrayRef<Value> bPair,
                                  ArrayRef<Value> acc) {
  auto resultType = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                     SmallVector<Type>(4, f32));
  NVVM::MMATypes inputType =
      element.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  // bf16 goes through nvvm.mma.sync on i32 registers: nvgpu.mma.sync cannot
  // lower bf16 in MLIR 22.
  Value result = NVVM::MmaOp::create(
      b, loc, resultType, a, bPair, acc, {16, 8, 16}, std::nullopt,
      std::nullopt, std::array<NVVM::MMATypes, 2>{inputType, inputType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  Fragment out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, result, i));
  return out;
}

Value FragmentBuilder::asRegister(Value pair) {
  return element.isBF16() ? asWord(pair) : pair;
}

SmallVector<Fragment> FragmentBuilder::asOperand(ArrayRef<Fragment> chunks) {
  SmallVector<Fragment> operands;
  for (size_t kk = 0; kk < chunks.size() / 2; ++kk) {
    const Fragment &left = chunks[2 * kk], &right = chunks[2 * kk + 1];
    operands.push_back({pack(left[0], left[1]), pack(left[2], left[3]),
                        pack(right[0], right[1]), pack(right[2], right[3])});
  }
  return operands;
}
