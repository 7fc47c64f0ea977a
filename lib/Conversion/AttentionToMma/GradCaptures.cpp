//===- GradCaptures.cpp - the wrt tensors' gradients on the GPU -----------===//
//
// Each element the dQ kernel visits adds dS' * d score_mod / d c[idx] to
// element idx of each wrt tensor c it reads. Many blocks add to one element
// at once, so the terms go through atomics; to give the same bits in any
// order they are added exactly, as integers: an f32 term is its 24-bit
// significand times a power of two, added to the i64 word of its binary
// exponent's group of 8 (shifted by the exponent within the group). A word
// takes 2^32 terms before it can overflow. A last launch turns the words
// into f32 (AttentionGradToMma.cpp).
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"

#include "AttnDialect/IR/ScoreModDerivative.h"
#include "AttnDialect/Target/NVVM/InlinePtx.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

/// Whether `value`, computed in the score_mod's `block`, depends on the
/// score, q or kv (b and h are the same across a dQ block). Ops with
/// regions count as depending on them.
static bool variesInBlock(Value value, Block &block) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == &block && arg.getArgNumber() != 1 &&
           arg.getArgNumber() != 2;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != &block)
    return false;
  if (def->getNumRegions() != 0)
    return true;
  return llvm::any_of(def->getOperands(), [&](Value operand) {
    return variesInBlock(operand, block);
  });
}

void GradBuilder::addExactly(Value base, Value element, Value term) {
  Type i64 = b.getI64Type();
  auto i32c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  auto i64c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v).getResult();
  };
  Value bits = arith::BitcastOp::create(b, loc, i32, term);
  Value exponent = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, i32c(23)), i32c(255));
  Value fraction = arith::AndIOp::create(b, loc, bits, i32c(0x7fffff));
  // A subnormal has no implicit bit and the exponent of the smallest normal.
  Value normal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                       exponent, i32c(0));
  Value significand = arith::SelectOp::create(
      b, loc, normal, arith::OrIOp::create(b, loc, fraction, i32c(0x800000)),
      fraction);
  Value scaled = arith::MaxUIOp::create(b, loc, exponent, i32c(1));
  Value magnitude = arith::ShLIOp::create(
      b, loc, arith::ExtUIOp::create(b, loc, i64, significand),
      arith::ExtUIOp::create(b, loc, i64,
                             arith::AndIOp::create(b, loc, scaled, i32c(7))));
  Value negative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, bits, i32c(0));
  Value signedValue = arith::SelectOp::create(
      b, loc, negative, arith::SubIOp::create(b, loc, i64c(0), magnitude),
      magnitude);
  // Infinities and NaN count in the last word.
  Value finite = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                       exponent, i32c(255));
  Value word = arith::SelectOp::create(
      b, loc, finite, arith::ShRUIOp::create(b, loc, scaled, i32c(3)),
      i32c(kCaptureWords - 1));
  Value addend = arith::SelectOp::create(b, loc, finite, signedValue, i64c(1));
  Value offset = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc,
                            arith::IndexCastOp::create(b, loc, i64, element),
                            i64c(8 * kCaptureWords)),
      arith::MulIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, word),
                            i64c(8)));
  Value address = arith::AddIOp::create(b, loc, base, offset);
  // The workspace is a buffer of i32 words: its i64 adds go by address.
  nvvm::inlinePtx(b, loc, "red.add.u64 [$0], $1;", {address, addend});
}

void GradBuilder::addCaptureTerms(ArrayRef<CaptureTerm> terms, Value h) {
  Region &scoreMod = op.getScoreMod();
  Block &block = scoreMod.front();
  struct Read {
    tensor::ExtractOp op;
    int64_t wrt;
    bool uniform;
  };
  SmallVector<Read> reads;
  SmallVector<tensor::ExtractOp> readOps;
  for (auto [w, wrt] : llvm::enumerate(op.getWrt()))
    for (tensor::ExtractOp read : readsOf(scoreMod, wrt)) {
      bool uniform = llvm::none_of(read.getIndices(), [&](Value index) {
        return variesInBlock(index, block);
      });
      reads.push_back({read, static_cast<int64_t>(w), uniform});
      readOps.push_back(read);
    }
  if (reads.empty())
    return;
  OpBuilder::InsertionGuard guard(b);
  // A dQ tile's column slices visit the same elements: the first adds.
  if (k.slice) {
    auto first = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k.slice, c(0)),
        /*withElseRegion=*/false);
    b.setInsertionPointToStart(first.thenBlock());
  }
  Value workspace = arith::IndexCastOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, k.delta));
  auto baseOf = [&](int64_t w) -> Value {
    return arith::AddIOp::create(
        b, loc, workspace,
        arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                   k.captureOffsets[w]));
  };
  // Row-major position of `indices` in wrt tensor `w`.
  auto elementOf = [&](int64_t w, ArrayRef<Value> indices) {
    Value wrt = op.getWrt()[w];
    Value element = c(0);
    for (auto [i, index] : llvm::enumerate(indices)) {
      Value size = tensor::DimOp::create(b, loc, wrt, i);
      element = add(mul(element, size), index);
    }
    return element;
  };
  Value zero = f32c(0.0);
  SmallVector<Value> sums(reads.size(), zero);
  SmallVector<SmallVector<Value>> uniformIndices(reads.size());
  Value scale = f32c(op.getScaleValue());
  for (const CaptureTerm &term : terms) {
    Value x = arith::MulFOp::create(b, loc, term.score, scale);
    Value regionQ = min(term.q, max(sub(m, c(1)), c(0)));
    Value regionKv = min(term.kv, max(sub(n, c(1)), c(0)));
    auto derivatives = k.regions.scoreModReadDerivatives(
        b, loc, x, k.batch, h, regionQ, regionKv, readOps);
    // Masked elements (P = 0) add nothing, even where the derivative is
    // not finite; nor do rows past M, which steps without masks compute
    // (and the dQ kernel does not store).
    Value kept = arith::AndIOp::create(
        b, loc,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, term.p, zero),
        less(term.q, m));
    for (auto [r, read] : llvm::enumerate(reads)) {
      auto &[indices, derivative] = derivatives[r];
      Value value = arith::SelectOp::create(
          b, loc, kept,
          arith::MulFOp::create(b, loc, term.dsModified, derivative), zero);
      if (read.uniform) {
        // The lane's terms of a read at one element, in a fixed order.
        sums[r] = arith::AddFOp::create(b, loc, sums[r], value);
        if (uniformIndices[r].empty())
          uniformIndices[r] = indices;
        continue;
      }
      auto ifKept = scf::IfOp::create(b, loc, kept, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(ifKept.thenBlock());
      addExactly(baseOf(read.wrt), elementOf(read.wrt, indices), value);
    }
  }
  // A read whose element is the same across the block: the warp's sum, in
  // a fixed order (lane 0's of the butterfly), is one add.
  for (auto [r, read] : llvm::enumerate(reads)) {
    if (!read.uniform)
      continue;
    Value sum = sums[r];
    for (int32_t offset : {16, 8, 4, 2, 1})
      sum = arith::AddFOp::create(b, loc, sum, shuffleXor(sum, offset));
    Value adds = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, c(0)),
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, sum, zero));
    auto first = scf::IfOp::create(b, loc, adds, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(first.thenBlock());
    addExactly(baseOf(read.wrt), elementOf(read.wrt, uniformIndices[r]), sum);
  }
}
