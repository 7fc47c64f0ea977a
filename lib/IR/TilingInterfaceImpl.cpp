//===- TilingInterfaceImpl.cpp - tiling attn.attention --------------------===//
//
// attn.attention tiles over its output (B, Hq, M, Dv), every dim parallel.
// A tile is again an attn.attention, on slices of Q, K, V and the outputs,
// whose `offsets` give its whole-problem position so that masks and score
// mods see the same indices as before tiling.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::attn;

SmallVector<utils::IteratorType> AttentionOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel);
}

SmallVector<Range> AttentionOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Range> domain;
  for (int64_t dim = 0; dim < 4; ++dim)
    domain.push_back(
        Range{zero, tensor::getMixedSize(b, loc, getOutputs()[0], dim), one});
  return domain;
}

static OpFoldResult add(OpBuilder &b, Location loc, OpFoldResult x,
                        OpFoldResult y) {
  AffineExpr d0, d1;
  bindDims(b.getContext(), d0, d1);
  return affine::makeComposedFoldedAffineApply(b, loc, d0 + d1, {x, y});
}

/// x / y on indices, folded when both are constant.
static OpFoldResult divide(OpBuilder &b, Location loc, OpFoldResult x,
                           OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x),
                         cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx / *cy);
  if (cy == 1)
    return x;
  return arith::DivUIOp::create(b, loc,
                                getValueOrCreateConstantIndexOp(b, loc, x),
                                getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

static Value slice(OpBuilder &b, Location loc, Value source,
                   ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                        strides);
}

FailureOr<TilingResult>
AttentionOp::getTiledImplementation(OpBuilder &b,
                                    ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0);
  int64_t dv = getValueHeadDim();
  if (!isZeroInteger(offsets[3]) || getConstantIntValue(sizes[3]) != dv)
    return emitOpError() << "cannot tile the value head dim (Dv = " << dv
                         << "): every tile needs whole rows of the softmax";

  // The kv heads the query-head tile reads: head h reads kv head h / G.
  OpFoldResult hq = tensor::getMixedSize(b, loc, getQuery(), 1);
  OpFoldResult hkv = tensor::getMixedSize(b, loc, getKey(), 1);
  OpFoldResult group = divide(b, loc, hq, hkv);
  OpFoldResult kvHeadOffset = divide(b, loc, offsets[1], group);
  OpFoldResult kvHeads;
  std::optional<int64_t> headTile = getConstantIntValue(sizes[1]);
  std::optional<int64_t> groupSize = getConstantIntValue(group);
  if (headTile == 1) {
    kvHeads = b.getIndexAttr(1);
  } else if (isZeroInteger(offsets[1]) && sizes[1] == hq) {
    kvHeads = hkv;
  } else if (headTile && groupSize && *headTile % *groupSize == 0) {
    kvHeads = b.getIndexAttr(*headTile / *groupSize);
  } else {
    return emitOpError() << "cannot tile the query heads into groups that do "
                            "not map onto whole kv heads; tile heads by 1, "
                            "by a multiple of Hq / Hkv, or not at all";
  }

  OpFoldResult d = b.getIndexAttr(getHeadDim());
  OpFoldResult n = tensor::getMixedSize(b, loc, getKey(), 2);
  SmallVector<OpFoldResult> kvOffsets = {offsets[0], kvHeadOffset, zero, zero};

  SmallVector<Operation *> slices;
  auto addSlice = [&](Value source, ArrayRef<OpFoldResult> sliceOffsets,
                      ArrayRef<OpFoldResult> sliceSizes) {
    Value value = slice(b, loc, source, sliceOffsets, sliceSizes);
    slices.push_back(value.getDefiningOp());
    return value;
  };
  Value query = addSlice(getQuery(), {offsets[0], offsets[1], offsets[2], zero},
                         {sizes[0], sizes[1], sizes[2], d});
  Value key = addSlice(getKey(), kvOffsets, {sizes[0], kvHeads, n, d});
  Value value =
      addSlice(getValue(), kvOffsets, {sizes[0], kvHeads, n, sizes[3]});
  SmallVector<Value> outputs = {addSlice(getOutputs()[0], offsets, sizes)};
  if (Value lse = getLogsumexpInit())
    outputs.push_back(
        addSlice(lse, offsets.take_front(3), sizes.take_front(3)));

  // The tile's position in the whole problem: this op's own, plus the tile's.
  SmallVector<OpFoldResult> base = getMixedOffsets();
  SmallVector<OpFoldResult> local = {offsets[0], offsets[1], offsets[2], zero};
  SmallVector<Value> tileOffsets;
  for (auto [baseOffset, localOffset] : llvm::zip_equal(base, local))
    tileOffsets.push_back(getValueOrCreateConstantIndexOp(
        b, loc, add(b, loc, baseOffset, localOffset)));

  auto tiled = AttentionOp::create(
      b, loc, ValueRange(outputs).getTypes(), query, key, value, getBlockMask(),
      outputs, tileOffsets, getScaleAttr(), getCausalAttr());
  IRMapping mapping;
  getScoreMod().cloneInto(&tiled.getScoreMod(), mapping);
  getMaskMod().cloneInto(&tiled.getMaskMod(), mapping);

  return TilingResult{
      {tiled.getOperation()}, SmallVector<Value>(tiled.getResults()), slices};
}

LogicalResult AttentionOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  // The output is indexed like the domain; the logsumexp drops Dv.
  unsigned rank = resultNumber == 0 ? 4 : 3;
  resultOffsets.assign(offsets.begin(), offsets.begin() + rank);
  resultSizes.assign(sizes.begin(), sizes.begin() + rank);
  return success();
}
