//===- GradElementwise.cpp - P and dS element by element ------------------===//
//
// P = exp(s' - L) and dS = P (dP - Delta) * d score_mod / d s at every
// element a warp holds, with the masks on the steps that need them.
//
//===----------------------------------------------------------------------===//

#include "GradBuilder.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

std::pair<Value, Value> GradBuilder::probabilityAt(Value s, Value h, Value q,
                                                   Value kv, Value lse,
                                                   bool masked) {
  Value zero = f32c(0.0);
  Value x = arith::MulFOp::create(b, loc, s, f32c(op.getScaleValue()));
  Value factor;
  // The regions see positions inside the problem; what lies past it is
  // masked.
  Value regionQ = min(q, max(sub(m, c(1)), c(0)));
  Value regionKv = min(kv, max(sub(n, c(1)), c(0)));
  if (op.hasScoreMod())
    std::tie(x, factor) = k.regions.scoreModAndDerivative(b, loc, x, k.batch, h,
                                                          regionQ, regionKv);
  // A row that saw no key has L = -inf: P is 0 there, not NaN. A NaN L
  // keeps its row NaN, as the forward's output is.
  Value keep = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, lse,
                                     f32c(kNegInf));
  if (masked) {
    keep = arith::AndIOp::create(
        b, loc, keep, arith::AndIOp::create(b, loc, less(q, m), less(kv, n)));
    if (op.getCausal())
      keep = arith::AndIOp::create(
          b, loc, keep,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, kv, q));
    if (op.hasMaskMod())
      keep = arith::AndIOp::create(
          b, loc, keep,
          k.regions.maskMod(b, loc, k.batch, h, regionQ, regionKv));
  }
  Value lse2 = arith::MulFOp::create(b, loc, lse, f32c(kLog2E));
  Value p = math::Exp2Op::create(
      b, loc,
      arith::SubFOp::create(
          b, loc, arith::MulFOp::create(b, loc, x, f32c(kLog2E)), lse2));
  p = arith::SelectOp::create(b, loc, LLVM::FreezeOp::create(b, loc, keep), p,
                              zero);
  return {p, factor};
}

Value GradBuilder::gradientAt(Value p, Value factor, Value dp, Value delta) {
  Value zero = f32c(0.0);
  Value ds = arith::MulFOp::create(b, loc, p,
                                   arith::SubFOp::create(b, loc, dp, delta));
  if (factor)
    ds = arith::MulFOp::create(b, loc, ds, factor);
  // A masked or underflowed P gives 0 even where the factor is infinite.
  Value none =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, p, zero);
  return arith::SelectOp::create(b, loc, none, zero, ds);
}

std::pair<SmallVector<Fragment>, SmallVector<Fragment>> GradBuilder::gradients(
    const BandTile &s, const std::function<BandTile()> &readyDp, Value h,
    Value needsMasks, bool withProbs, const Position &position) {
  int64_t chunks = s.size();
  // Each branch yields packed A operands: half the registers of the f32
  // values across the branch.
  int64_t words = 2 * chunks;
  Type word = element.isBF16() ? Type(i32) : VectorType::get({2}, element);
  auto split = scf::IfOp::create(
      b, loc, TypeRange(SmallVector<Type>((withProbs ? 2 : 1) * words, word)),
      needsMasks, /*withElseRegion=*/true);
  for (bool masked : {true, false}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(masked ? split.thenBlock() : split.elseBlock());
    BandTile p(chunks), factors(chunks), deltas(chunks), ds(chunks);
    SmallVector<CaptureTerm> terms;
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t e = 0; e < 4; ++e) {
        auto [q, lse, delta, kv] = position(chunk, e);
        auto [pe, factor] = probabilityAt(s[chunk][e], h, q, kv, lse, masked);
        p[chunk].push_back(pe);
        factors[chunk].push_back(factor);
        deltas[chunk].push_back(delta);
        terms.push_back({s[chunk][e], q, kv, pe, Value()});
      }
    BandTile dp = readyDp();
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t e = 0; e < 4; ++e)
        ds[chunk].push_back(gradientAt(p[chunk][e], factors[chunk][e],
                                       dp[chunk][e], deltas[chunk][e]));
    if (addsCaptures) {
      for (auto [i, term] : llvm::enumerate(terms))
        term.dsModified =
            gradientAt(term.p, Value(), dp[i / 4][i % 4], deltas[i / 4][i % 4]);
      addCaptureTerms(terms, h);
    }
    SmallVector<Value> yields;
    if (withProbs)
      yields = flattenTiles({BandTile(asOperand(p))});
    yields.append(flattenTiles({BandTile(asOperand(ds))}));
    scf::YieldOp::create(b, loc, yields);
  }
  ValueRange results = split.getResults();
  auto operands = [&](ValueRange values) {
    return SmallVector<Fragment>(tilesOf(values, 1, chunks / 2)[0]);
  };
  if (!withProbs)
    return {{}, operands(results)};
  return {operands(results.take_front(words)),
          operands(results.drop_front(words))};
}
