//===- StageTile.cpp - attn.softmax's tile into shared memory -------------===//
//
// A block copies its tile of the row into shared memory with cp.async
// (16-byte copies that hold no registers while in flight), so that it
// reads every element once and then reduces and writes from there.
//
//===----------------------------------------------------------------------===//

#include "SoftmaxKernel.h"

#include "AttnDialect/Target/NVVM/CrossBlockExchange.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::softmax;

/// cp.async groups a tile's unrolled copies are committed in (copyTile).
static constexpr int64_t kCopyGroups = 4;

/// Copies this thread's vectors of the tile at `tileStart` into `stage`:
/// cp.async for whole vectors (no registers held while they are in
/// flight), committed in groups that the first pass waits for one at a
/// time (waitForGroup), so it reduces the vectors that have landed while
/// later groups are still in flight. Each thread later reads only what it
/// copied, so waiting for its own copies is enough. The warps at a split
/// row's ends (Checked) copy their whole vectors so too, each behind a
/// check, and stage -inf for the others with one store each: they are in
/// the blocks that the rest of the row waits for, which a loop of element
/// stores here made late. At a short row's ends they copy everything in
/// stageChecked's loop and wait for all of it, which measured faster
/// there than the split rows' way.
void SoftmaxKernel::copyTile(Value tileStart, Vectors kind) {
  if (kind == Vectors::Checked && !splitRow) {
    stageChecked(tileStart, /*copyWhole=*/true);
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
    return;
  }
  for (int64_t k = 0; k < vectors; ++k) {
    if (k > 0 && groupOf(k) != groupOf(k - 1))
      NVVM::CpAsyncCommitGroupOp::create(b, loc);
    OpBuilder::InsertionGuard guard(b);
    if (k > 0 && kind != Vectors::Whole) {
      auto used = scf::IfOp::create(b, loc, inTile(k), false);
      b.setInsertionPoint(used.thenBlock()->getTerminator());
    }
    Value at = position(c(0), k);
    Value p = add(tileStart, at);
    if (kind == Vectors::Checked) {
      // The others are staged -inf (one 16-byte store), and the row's
      // elements of those that straddle an end loaded after the copies.
      auto whole = scf::IfOp::create(b, loc, this->whole(p),
                                     /*withElseRegion=*/true);
      b.setInsertionPoint(whole.elseBlock()->getTerminator());
      stageNegInf(at);
      b.setInsertionPoint(whole.thenBlock()->getTerminator());
    }
    copyVector(at, p);
  }
  NVVM::CpAsyncCommitGroupOp::create(b, loc);
  if (kind != Vectors::Checked)
    return;
  // An input that is not 16-byte aligned is staged element by element.
  onlyIf(negate(vectorIn),
         [&] { stageChecked(tileStart, /*copyWhole=*/false); });
  loadStraddlingVectors(tileStart);
}

/// A vector of -inf into the stage at `at`.
void SoftmaxKernel::stageNegInf(Value at) {
  Type element = cast<MemRefType>(in.getType()).getElementType();
  auto type = VectorType::get({width}, element);
  Value negInf = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, kNegInf)));
  vector::StoreOp::create(b, loc, negInf, stage, ValueRange{at},
                          /*nontemporal=*/false, llvm::Align(16));
}

/// One 16-byte cp.async of the input at `p` to the stage at `at`.
void SoftmaxKernel::copyVector(Value at, Value p) {
  auto cacheGlobal = NVVM::LoadCacheModifierKindAttr::get(
      b.getContext(), NVVM::LoadCacheModifierKind::CG);
  // One op-building operand per call: the IR's order must not depend on
  // the compiler's order of evaluating arguments.
  Value from = nvvm::elementPointer(b, loc, in, p, 1);
  NVVM::CpAsyncOp::create(b, loc, nvvm::elementPointer(b, loc, stage, at, 3),
                          from, b.getI32IntegerAttr(16), cacheGlobal,
                          /*cpSize=*/Value());
}

/// Stages the vectors of the tile at `tileStart` that are not whole in
/// the row element by element, -inf outside it, so that every staged
/// vector is read whole; with `copyWhole` copies the whole ones too. For
/// the warps at a short row's ends, and split rows of a misaligned input.
/// A loop: unrolled, its per-element code was fetched cold into the
/// instruction cache by the block that the rest of its row waits for.
void SoftmaxKernel::stageChecked(Value tileStart, bool copyWhole) {
  OpBuilder::InsertionGuard guard(b);
  Value step = c(1);
  auto loop = scf::ForOp::create(b, loc, c(0), used, step);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value at = position(c(0), loop.getInductionVar());
  Value p = add(tileStart, at);
  auto wholeOrNot =
      scf::IfOp::create(b, loc, whole(p), /*withElseRegion=*/true);
  if (copyWhole) {
    OpBuilder::InsertionGuard copying(b);
    b.setInsertionPoint(wholeOrNot.thenBlock()->getTerminator());
    copyVector(at, p);
  }
  b.setInsertionPoint(wholeOrNot.elseBlock()->getTerminator());
  Type element = cast<MemRefType>(in.getType()).getElementType();
  for (int64_t i = 0; i < width; ++i) {
    Value q = add(p, c(i));
    Value x = select(
        insideRow(q), element,
        [&]() -> SmallVector<Value> {
          return {memref::LoadOp::create(b, loc, in, q)};
        },
        [&]() -> SmallVector<Value> {
          return {arith::ConstantOp::create(b, loc,
                                            b.getFloatAttr(element, kNegInf))};
        })[0];
    memref::StoreOp::create(b, loc, x, stage, add(at, c(i)));
  }
}

/// The copy group of unrolled vector `k` (copyTile): kCopyGroups groups
/// of about equal size, so that the first pass reduces the vectors that
/// have landed while the later groups are still in flight instead of
/// waiting for the whole tile at once.
int64_t SoftmaxKernel::groupOf(int64_t k) {
  int64_t groups = std::min(kCopyGroups, vectors);
  return k * groups / vectors;
}

/// Before the first pass reads vector `k`: waits for its copy group
/// where one starts (with the later groups still in flight).
void SoftmaxKernel::waitForGroup(int64_t k) {
  if (k > 0 && groupOf(k) == groupOf(k - 1))
    return;
  int64_t later = groupOf(vectors - 1) - groupOf(k);
  NVVM::CpAsyncWaitGroupOp::create(b, loc, later);
}

/// For a split row with aligned input: the row's elements of the (at
/// most two) vectors of this tile that straddle an end of the row, loaded
/// by the thread that staged them, after it has issued all its copies
/// and without a branch per element, so the loads overlap the copies (in
/// the copy loop they stalled the copies of the row's first block, which
/// the rest of the row waits for).
void SoftmaxKernel::loadStraddlingVectors(Value tileStart) {
  Type element = cast<MemRefType>(in.getType()).getElementType();
  Value negInf =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(element, kNegInf));
  auto i32 = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), v).getResult();
  };
  for (Value q : {rowStart, sub(rowEnd, c(1))}) {
    Value offset = sub(q, tileStart);
    Value beforeEnd = cmp(arith::CmpIPredicate::slt, offset, tile());
    Value inTileRange =
        both(cmp(arith::CmpIPredicate::sge, offset, c(0)), beforeEnd);
    // 32-bit arithmetic: offsets within a tile are small.
    Value vectorWidth = arith::ConstantIntOp::create(b, loc, width, 32);
    Value vector = arith::DivUIOp::create(b, loc, i32(offset), vectorWidth);
    Value thread = i32(tid);
    Value owner = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, vector, i32(threads)), thread);
    onlyIf(both(both(vectorIn, inTileRange), owner), [&] {
      Value widthValue = c(width);
      Value at =
          mul(arith::IndexCastOp::create(b, loc, b.getIndexType(), vector),
              widthValue);
      Value p = add(tileStart, at);
      onlyIf(negate(whole(p)), [&] {
        SmallVector<Value> xs;
        for (int64_t i = 0; i < width; ++i) {
          Value e = add(p, c(i));
          Value inside = insideRow(e);
          Value safe = arith::SelectOp::create(b, loc, inside, e, q);
          xs.push_back(arith::SelectOp::create(
              b, loc, inside, memref::LoadOp::create(b, loc, in, safe),
              negInf));
        }
        for (int64_t i = 0; i < width; ++i)
          memref::StoreOp::create(b, loc, xs[i], stage, add(at, c(i)));
      });
    });
  }
}
