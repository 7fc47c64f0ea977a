//===- DecomposeMergeSplits.cpp - attn.merge_splits to linalg -------------===//
//
// The merge of split-kv attention (FlashDecoding's second kernel) as linalg
// generics on tensors: the row max of the splits' logsumexps, the sum of
// their exponentials, the merged logsumexp, then the output as the
// exp-weighted sum of the splits' outputs. Every exponential is exp2 with
// log2(e) folded in; a split whose logsumexp is -inf weighs 0, and a row
// whose splits are all -inf gives 0 and -inf instead of NaN.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Utils/OnlineSoftmaxMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::attn;

FailureOr<SmallVector<Value>>
MergeSplitsOp::decomposeOperation(OpBuilder &rewriter) {
  MergeSplitsOp op = *this;
  Location loc = op.getLoc();
  Value partialOut = op.getPartialOut(), partialLse = op.getPartialLse();
  Value out = op.getOutputs()[0];
  MLIRContext *ctx = rewriter.getContext();
  Type f32 = rewriter.getF32Type();

  SmallVector<OpFoldResult> outSizes =
      tensor::getMixedSizes(rewriter, loc, out);
  ArrayRef<OpFoldResult> rowSizes = ArrayRef(outSizes).take_front(3);
  auto filled = [&](ArrayRef<OpFoldResult> sizes, double value) {
    Value empty = tensor::EmptyOp::create(rewriter, loc, sizes, f32);
    return linalg::FillOp::create(rewriter, loc,
                                  f32Constant(rewriter, loc, value), empty)
        .getResult(0);
  };
  using utils::IteratorType;

  // Over (b, h, m, s): rows reduce over the splits.
  AffineMap rowSplit = AffineMap::getMultiDimIdentityMap(4, ctx);
  AffineMap row = rowSplit.dropResult(3);
  SmallVector<IteratorType> rowReduction = {
      IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
      IteratorType::reduction};
  // Ops built one per statement: C++ leaves the order of argument
  // evaluation open, and the IR must not depend on the compiler.
  Value maxInit = filled(rowSizes, kNegInf);
  Type rowType = filled(rowSizes, 0.0).getType();
  Value max =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{rowType}, ValueRange{partialLse},
          ValueRange{maxInit}, ArrayRef<AffineMap>{rowSplit, row}, rowReduction,
          [](OpBuilder &b, Location l, ValueRange args) {
            linalg::YieldOp::create(
                b, l, Value(arith::MaximumFOp::create(b, l, args[0], args[1])));
          })
          .getResult(0);
  Value sum =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{max.getType()}, ValueRange{partialLse, max},
          ValueRange{filled(rowSizes, 0.0)},
          ArrayRef<AffineMap>{rowSplit, row, row}, rowReduction,
          [](OpBuilder &b, Location l, ValueRange args) {
            Value w = mergeWeight(b, l, args[0], args[1]);
            linalg::YieldOp::create(
                b, l, Value(arith::AddFOp::create(b, l, w, args[2])));
          })
          .getResult(0);

  // lse = max + ln(sum), -inf when no split saw a key (sum 0).
  AffineMap rowIdentity = AffineMap::getMultiDimIdentityMap(3, ctx);
  Value lseInit =
      op.getLogsumexpInit()
          ? op.getLogsumexpInit()
          : tensor::EmptyOp::create(rewriter, loc, rowSizes, f32).getResult();
  Value lse = linalg::GenericOp::create(
                  rewriter, loc, TypeRange{lseInit.getType()},
                  ValueRange{max, sum}, ValueRange{lseInit},
                  ArrayRef<AffineMap>{rowIdentity, rowIdentity, rowIdentity},
                  SmallVector<IteratorType>(3, IteratorType::parallel),
                  [](OpBuilder &b, Location l, ValueRange args) {
                    Value ln2 = f32Constant(b, l, kLn2);
                    Value ln = arith::MulFOp::create(
                        b, l, math::Log2Op::create(b, l, args[1]), ln2);
                    Value finite = arith::AddFOp::create(b, l, args[0], ln);
                    Value empty =
                        arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                              args[1], f32Constant(b, l, 0.0));
                    linalg::YieldOp::create(
                        b, l,
                        Value(arith::SelectOp::create(
                            b, l, empty, f32Constant(b, l, kNegInf), finite)));
                  })
                  .getResult(0);

  // Over (b, h, m, dv, s): out = sum_s exp(lse_s - lse) * out_s.
  AffineMap element = AffineMap::getMultiDimIdentityMap(5, ctx);
  AffineMap elementRow = element.dropResult(4);
  AffineMap splitLse =
      AffineMap::get(5, 0,
                     {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
                      getAffineDimExpr(2, ctx), getAffineDimExpr(4, ctx)},
                     ctx);
  AffineMap lseOfRow = element.dropResults(ArrayRef<int64_t>{3, 4});
  SmallVector<IteratorType> splitReduction(5, IteratorType::parallel);
  splitReduction.back() = IteratorType::reduction;
  auto outType = cast<RankedTensorType>(out.getType());
  bool widen = !outType.getElementType().isF32();
  Value accInit =
      widen ? filled(outSizes, 0.0)
            : linalg::FillOp::create(rewriter, loc,
                                     f32Constant(rewriter, loc, 0.0), out)
                  .getResult(0);
  Value acc =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{accInit.getType()},
          ValueRange{partialOut, partialLse, lse}, ValueRange{accInit},
          ArrayRef<AffineMap>{element, splitLse, lseOfRow, elementRow},
          splitReduction,
          [](OpBuilder &b, Location l, ValueRange args) {
            Value w = mergeWeight(b, l, args[1], args[2]);
            linalg::YieldOp::create(
                b, l,
                Value(arith::AddFOp::create(
                    b, l, arith::MulFOp::create(b, l, w, args[0]), args[3])));
          })
          .getResult(0);
  if (widen) {
    AffineMap id4 = AffineMap::getMultiDimIdentityMap(4, ctx);
    Type elementType = outType.getElementType();
    acc = linalg::GenericOp::create(
              rewriter, loc, TypeRange{outType}, ValueRange{acc},
              ValueRange{out}, ArrayRef<AffineMap>{id4, id4},
              SmallVector<IteratorType>(4, IteratorType::parallel),
              [&](OpBuilder &b, Location l, ValueRange args) {
                linalg::YieldOp::create(
                    b, l,
                    Value(arith::TruncFOp::create(b, l, elementType, args[0])));
              })
              .getResult(0);
  }

  SmallVector<Value> results = {acc};
  if (op.getLogsumexpInit())
    results.push_back(lse);
  return results;
}
