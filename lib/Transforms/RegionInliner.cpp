//===- RegionInliner.cpp - attn.attention's regions, inlined -------------===//

#include "AttnDialect/Transforms/RegionInliner.h"
#include "AttnDialect/IR/ScoreModDerivative.h"
#include "AttnDialect/Transforms/Passes.h"
#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/InferIntRangeInterface.h"

#include <limits>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// What a report says went wrong; the numbers are the first argument of
/// attnReportRegionError.
enum class RegionError : int64_t {
  ReadOutOfBounds = 1,
  DivisionByZero = 2,
  DivisionOverflow = 3
};

/// The kinds of integer division a region may use.
bool isIntegerDivision(Operation *op) {
  return isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
             arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(op);
}
bool isSignedDivision(Operation *op) {
  return isa<arith::DivSIOp, arith::RemSIOp, arith::CeilDivSIOp,
             arith::FloorDivSIOp>(op);
}

} // namespace

Value RegionInliner::scoreMod(OpBuilder &builder, Location loc, Value score,
                              Value b, Value h, Value q, Value kv) {
  IRMapping mapping;
  return inlineRegion(builder, loc, *scoreModRegion, {score, b, h, q, kv},
                      mapping);
}

Value RegionInliner::maskMod(OpBuilder &builder, Location loc, Value b, Value h,
                             Value q, Value kv) {
  IRMapping mapping;
  return inlineRegion(builder, loc, *maskModRegion, {b, h, q, kv}, mapping);
}

/// The type of a value of `type` evaluated in i32: index and integers wider
/// than 32 bits become i32.
static Type narrowedType(Type type) {
  bool wide = type.isIndex() ||
              (isa<IntegerType>(type) && type.getIntOrFloatBitWidth() > 32);
  return wide ? IntegerType::get(type.getContext(), 32) : type;
}

bool RegionInliner::maskModFitsI32() {
  if (checks != RegionChecks::None || !maskModRegion->hasOneBlock())
    return false;
  Block &block = maskModRegion->front();
  DenseMap<Value, ConstantIntRanges> ranges;
  for (BlockArgument arg : block.getArguments())
    ranges.try_emplace(
        arg, ConstantIntRanges::fromSigned(
                 APInt(64, 0), APInt(64, std::numeric_limits<int32_t>::max())));
  auto rangeOf = [&](Value v) {
    auto it = ranges.find(v);
    return it != ranges.end()
               ? it->second
               : ConstantIntRanges::maxRange(integerWidth(v.getType()));
  };
  // A value wider than 32 bits must keep to i32's range; narrower ones are
  // evaluated in their own type.
  auto fits = [&](Value v) {
    if (!isIndexOrInteger(v.getType()) || integerWidth(v.getType()) <= 32)
      return true;
    ConstantIntRanges range = rangeOf(v);
    return range.smin().getSExtValue() >= std::numeric_limits<int32_t>::min() &&
           range.smax().getSExtValue() <= std::numeric_limits<int32_t>::max();
  };
  for (Operation &op : block.without_terminator()) {
    if (op.getNumRegions() != 0 || op.getNumResults() != 1 ||
        !isIndexOrInteger(op.getResult(0).getType()))
      return false;
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      ranges.try_emplace(
          extract.getResult(),
          ConstantIntRanges::maxRange(integerWidth(extract.getType())));
    } else {
      auto infer = dyn_cast<InferIntRangeInterface>(op);
      if (!infer || !isa<arith::ArithDialect>(op.getDialect()))
        return false;
      SmallVector<ConstantIntRanges> operands;
      for (Value operand : op.getOperands()) {
        if (!isIndexOrInteger(operand.getType()))
          return false;
        operands.push_back(rangeOf(operand));
      }
      // Unsigned division of a negative value differs between widths.
      if (isa<arith::DivUIOp, arith::RemUIOp, arith::CeilDivUIOp>(op) &&
          llvm::any_of(operands, [](const ConstantIntRanges &range) {
            return range.smin().isNegative();
          }))
        return false;
      infer.inferResultRanges(operands,
                              [&](Value v, const ConstantIntRanges &range) {
                                ranges.insert_or_assign(v, range);
                              });
    }
    if (!llvm::all_of(op.getOperands(), fits) || !fits(op.getResult(0)))
      return false;
  }
  return true;
}

Value RegionInliner::maskModI32(OpBuilder &builder, Location l, Value b,
                                Value h, Value q, Value kv) {
  Block &block = maskModRegion->front();
  IRMapping mapping;
  mapping.map(block.getArguments(), ValueRange{b, h, q, kv});
  Type indexType = builder.getIndexType();
  for (Operation &op : block.without_terminator()) {
    Value result = op.getResult(0);
    Type type = narrowedType(result.getType());
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      APInt value = cast<IntegerAttr>(constant.getValue()).getValue();
      mapping.map(
          result,
          arith::ConstantOp::create(
              builder, l,
              builder.getIntegerAttr(
                  type, value.sextOrTrunc(type.getIntOrFloatBitWidth())))
              .getResult());
      continue;
    }
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      SmallVector<Value> indices;
      for (Value index : extract.getIndices())
        indices.push_back(arith::IndexCastOp::create(
            builder, l, indexType, mapping.lookupOrDefault(index)));
      mapping.map(result, tensor::ExtractOp::create(
                              builder, l, extract.getTensor(), indices)
                              .getResult());
      continue;
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp, arith::TruncIOp>(op)) {
      Value source = mapping.lookupOrDefault(op.getOperand(0));
      unsigned from = source.getType().getIntOrFloatBitWidth();
      unsigned to = type.getIntOrFloatBitWidth();
      Value cast = source;
      if (from < to && isa<arith::IndexCastUIOp, arith::ExtUIOp>(op))
        cast = arith::ExtUIOp::create(builder, l, type, source);
      else if (from < to)
        cast = arith::ExtSIOp::create(builder, l, type, source);
      else if (from > to)
        cast = arith::TruncIOp::create(builder, l, type, source);
      mapping.map(result, cast);
      continue;
    }
    Operation *copy = builder.clone(op, mapping);
    copy->getResult(0).setType(type);
  }
  return mapping.lookupOrDefault(
      cast<YieldOp>(block.getTerminator()).getValues()[0]);
}

std::pair<Value, Value>
RegionInliner::scoreModAndDerivative(OpBuilder &builder, Location loc,
                                     Value score, Value b, Value h, Value q,
                                     Value kv) {
  IRMapping mapping;
  Value value = inlineRegion(builder, loc, *scoreModRegion,
                             {score, b, h, q, kv}, mapping);
  return {value,
          buildScoreModDerivative(builder, loc, *scoreModRegion, mapping)};
}

SmallVector<std::pair<SmallVector<Value>, Value>>
RegionInliner::scoreModReadDerivatives(OpBuilder &builder, Location loc,
                                       Value score, Value b, Value h, Value q,
                                       Value kv,
                                       ArrayRef<tensor::ExtractOp> reads) {
  IRMapping mapping;
  inlineRegion(builder, loc, *scoreModRegion, {score, b, h, q, kv}, mapping);
  SmallVector<std::pair<SmallVector<Value>, Value>> result;
  for (tensor::ExtractOp read : reads) {
    SmallVector<Value> indices;
    for (Value index : read.getIndices())
      indices.push_back(mapping.lookupOrDefault(index));
    result.emplace_back(
        std::move(indices),
        buildReadDerivative(builder, loc, *scoreModRegion, mapping, read));
  }
  return result;
}

Value RegionInliner::inlineRegion(OpBuilder &builder, Location l,
                                  Region &region, ValueRange args,
                                  IRMapping &mapping) {
  Block &block = region.front();
  mapping.map(block.getArguments(), args);
  int64_t regionId = &region == scoreModRegion ? 0 : 1;
  for (Operation &nested : block.without_terminator())
    cloneChecked(builder, nested, mapping, regionId);
  return mapping.lookupOrDefault(
      cast<YieldOp>(block.getTerminator()).getValues()[0]);
}

void RegionInliner::cloneChecked(OpBuilder &builder, Operation &nested,
                                 IRMapping &mapping, int64_t region) {
  if (checks != RegionChecks::None) {
    auto extract = dyn_cast<tensor::ExtractOp>(nested);
    if (extract && !extract.getIndices().empty())
      return guardedExtract(builder, extract, mapping, region);
    if (isIntegerDivision(&nested) &&
        nested.getResult(0).getType().isIntOrIndex())
      return guardedDivision(builder, &nested, mapping, region);
  }
  if (checks == RegionChecks::None || nested.getNumRegions() == 0) {
    Operation *copy = builder.clone(nested, mapping);
    if (auto tanh = dyn_cast<math::TanhOp>(copy); tanh && approximateMath)
      tanh.setFastmath(tanh.getFastmath() | arith::FastMathFlags::afn);
    return;
  }
  // Ops with regions (scf.if, ...) are copied op by op, so that reads and
  // divisions nested in them are checked too.
  Operation *copy = builder.cloneWithoutRegions(nested, mapping);
  OpBuilder::InsertionGuard guard(builder);
  for (auto [from, to] : llvm::zip(nested.getRegions(), copy->getRegions())) {
    for (Block &block : from) {
      Block *newBlock = builder.createBlock(&to, to.end());
      mapping.map(&block, newBlock);
      for (BlockArgument arg : block.getArguments())
        mapping.map(arg, newBlock->addArgument(arg.getType(), arg.getLoc()));
    }
    for (auto [block, newBlock] : llvm::zip(from, to)) {
      builder.setInsertionPointToEnd(&newBlock);
      for (Operation &inner : block)
        cloneChecked(builder, inner, mapping, region);
    }
  }
}

void RegionInliner::report(OpBuilder &builder, Location l, Value error,
                           int64_t region, Value operand, Value dim,
                           Value index, Value size) {
  auto i64 = builder.getI64Type();
  auto toI64 = [&](Value v) -> Value {
    if (v.getType() == i64)
      return v;
    if (v.getType().isIndex())
      return arith::IndexCastOp::create(builder, l, i64, v);
    if (v.getType().getIntOrFloatBitWidth() > 64)
      return arith::TruncIOp::create(builder, l, i64, v);
    return arith::ExtSIOp::create(builder, l, i64, v);
  };
  Value values[] = {
      error,          arith::ConstantIntOp::create(builder, l, i64, region),
      toI64(operand), toI64(dim),
      toI64(index),   toI64(size)};
  if (checks == RegionChecks::HostReport) {
    func::CallOp::create(builder, l, kRegionErrorFunction, TypeRange{}, values);
    return;
  }
  gpu::PrintfOp::create(builder, l,
                        "attn: region error %lld in region %lld: argument "
                        "%lld dim %lld, values %lld and %lld\n",
                        values);
  LLVM::Trap::create(builder, l);
}

/// The function argument number of a captured value, or -1.
static Value capturedArgument(OpBuilder &builder, Location l, Value value) {
  int64_t number = -1;
  if (auto arg = dyn_cast<BlockArgument>(value))
    if (isa_and_nonnull<func::FuncOp>(arg.getOwner()->getParentOp()))
      number = arg.getArgNumber();
  return arith::ConstantIntOp::create(builder, l, builder.getI64Type(), number);
}

void RegionInliner::guardedExtract(OpBuilder &builder,
                                   tensor::ExtractOp extract,
                                   IRMapping &mapping, int64_t region) {
  Location l = extract.getLoc();
  Value tensor = mapping.lookupOrDefault(extract.getTensor());
  // The first dim out of range, with its index and size, for the report.
  Value inBounds, badDim, badIndex, badSize;
  for (auto [dim, original] : llvm::enumerate(extract.getIndices())) {
    Value index = mapping.lookupOrDefault(original);
    Value size = tensor::DimOp::create(builder, l, tensor, dim);
    Value ok = arith::CmpIOp::create(builder, l, arith::CmpIPredicate::ult,
                                     index, size);
    Value dimValue = arith::ConstantIndexOp::create(builder, l, dim);
    if (!inBounds) {
      inBounds = ok;
      badDim = dimValue;
      badIndex = index;
      badSize = size;
      continue;
    }
    // Keep the earlier dim when it is already out of range.
    Value takeThis = arith::AndIOp::create(
        builder, l, inBounds,
        arith::XOrIOp::create(builder, l, ok,
                              arith::ConstantIntOp::create(builder, l, 1, 1)));
    badDim = arith::SelectOp::create(builder, l, takeThis, dimValue, badDim);
    badIndex = arith::SelectOp::create(builder, l, takeThis, index, badIndex);
    badSize = arith::SelectOp::create(builder, l, takeThis, size, badSize);
    inBounds = arith::AndIOp::create(builder, l, inBounds, ok);
  }
  Type type = extract.getType();
  auto guard = scf::IfOp::create(
      builder, l, inBounds,
      [&](OpBuilder &nb, Location nl) {
        scf::YieldOp::create(nb, nl, nb.clone(*extract, mapping)->getResults());
      },
      [&](OpBuilder &nb, Location nl) {
        Value error = arith::ConstantIntOp::create(
            nb, nl, nb.getI64Type(),
            static_cast<int64_t>(RegionError::ReadOutOfBounds));
        report(nb, nl, error, region,
               capturedArgument(nb, nl, extract.getTensor()), badDim, badIndex,
               badSize);
        scf::YieldOp::create(
            nb, nl,
            arith::ConstantOp::create(nb, nl, nb.getZeroAttr(type))
                .getResult());
      });
  mapping.map(extract.getResult(), guard.getResult(0));
}

void RegionInliner::guardedDivision(OpBuilder &builder, Operation *division,
                                    IRMapping &mapping, int64_t region) {
  Location l = division->getLoc();
  Value lhs = mapping.lookupOrDefault(division->getOperand(0));
  Value rhs = mapping.lookupOrDefault(division->getOperand(1));
  Type type = rhs.getType();
  auto constant = [&](const APInt &value) -> Value {
    if (type.isIndex())
      return arith::ConstantIndexOp::create(builder, l, value.getSExtValue());
    return arith::ConstantOp::create(builder, l,
                                     builder.getIntegerAttr(type, value));
  };
  unsigned width = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
  Value zero = constant(APInt(width, 0));
  Value byZero =
      arith::CmpIOp::create(builder, l, arith::CmpIPredicate::eq, rhs, zero);
  Value bad = byZero;
  if (isSignedDivision(division)) {
    // INT_MIN / -1 overflows (and traps on x86).
    // One op-building operand per call, for a compiler-independent order.
    Value byMinusOne =
        arith::CmpIOp::create(builder, l, arith::CmpIPredicate::eq, rhs,
                              constant(APInt::getAllOnes(width)));
    Value overflow = arith::AndIOp::create(
        builder, l,
        arith::CmpIOp::create(builder, l, arith::CmpIPredicate::eq, lhs,
                              constant(APInt::getSignedMinValue(width))),
        byMinusOne);
    bad = arith::OrIOp::create(builder, l, byZero, overflow);
  }
  scf::IfOp::create(builder, l, bad, [&](OpBuilder &nb, Location nl) {
    Value overflowKind = arith::ConstantIntOp::create(
        nb, nl, nb.getI64Type(),
        static_cast<int64_t>(RegionError::DivisionOverflow));
    Value kind = arith::SelectOp::create(
        nb, nl, byZero,
        arith::ConstantIntOp::create(
            nb, nl, nb.getI64Type(),
            static_cast<int64_t>(RegionError::DivisionByZero)),
        overflowKind);
    Value none = arith::ConstantIntOp::create(nb, nl, nb.getI64Type(), -1);
    report(nb, nl, kind, region, none, none, lhs, rhs);
    scf::YieldOp::create(nb, nl);
  });
  // Divide by 1 instead: the result is never used once reported.
  Value safeRhs =
      arith::SelectOp::create(builder, l, bad, constant(APInt(width, 1)), rhs);
  IRMapping divisionMapping = mapping;
  divisionMapping.map(division->getOperand(1), safeRhs);
  Operation *safe = builder.clone(*division, divisionMapping);
  mapping.map(division->getResult(0), safe->getResult(0));
}
