//===- TilingInterfaceImpl.cpp - tiling attn.attention and its gradient --===//
//
// attn.attention tiles over (B, Hq, M, Dv) of its output, all parallel, and
// the kv length N, a reduction split only through PartialReductionOpInterface.
// attn.attention_grad tiles over (B, Hkv). A tile is again the op, on slices
// of its operands and outputs, whose `offsets` give its whole-problem
// position so that masks and score mods see the same indices as before
// tiling.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::attn;

/// The iteration domain: (B, Hq, M, Dv) of the output, then the kv length.
enum : unsigned { kBatch, kHeads, kRows, kValueDim, kKv, kNumLoops };

SmallVector<utils::IteratorType> AttentionOp::getLoopIteratorTypes() {
  SmallVector<utils::IteratorType> types(kNumLoops,
                                         utils::IteratorType::parallel);
  types[kKv] = utils::IteratorType::reduction;
  return types;
}

SmallVector<Range> AttentionOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Range> domain;
  // B, Hq and M from the query, which tiling never replaces (the outputs
  // become the partial tensors of a split-kv tiling).
  for (int64_t dim = 0; dim < 3; ++dim)
    domain.push_back(
        Range{zero, tensor::getMixedSize(b, loc, getQuery(), dim), one});
  domain.push_back(Range{zero, b.getIndexAttr(getValueHeadDim()), one});
  domain.push_back(Range{zero, tensor::getMixedSize(b, loc, getKey(), 2), one});
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
  // One op-building operand per call, for a compiler-independent order.
  Value divisor = getValueOrCreateConstantIndexOp(b, loc, y);
  return arith::DivUIOp::create(
             b, loc, getValueOrCreateConstantIndexOp(b, loc, x), divisor)
      .getResult();
}

static Value slice(OpBuilder &b, Location loc, Value source,
                   ArrayRef<OpFoldResult> offsets,
                   ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                        strides);
}

/// An f32 tensor of the given sizes filled with `value`.
static Value filledF32(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                       double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getF32Type());
  Value fill = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return linalg::FillOp::create(b, loc, fill, empty).getResult(0);
}

/// The static shape of `sizes`, dynamic where a size is not constant.
static SmallVector<int64_t> staticShape(ArrayRef<OpFoldResult> sizes) {
  return llvm::map_to_vector(sizes, [](OpFoldResult size) {
    return getConstantIntValue(size).value_or(ShapedType::kDynamic);
  });
}

/// Whether `size` is dim `dim` of one of `sources`: the same constant, a
/// tensor.dim of one of them (tiling passes untiled dims as the domain's own
/// sizes, which getIterationDomain built as tensor.dim ops), or the size a
/// tensor.extract_slice gave that dim (what tensor.dim of a slice folds to).
static bool isDimOf(OpFoldResult size, ArrayRef<Value> sources, int64_t dim) {
  if (std::optional<int64_t> constant = getConstantIntValue(size))
    return llvm::any_of(sources, [&](Value source) {
      int64_t extent = cast<ShapedType>(source.getType()).getDimSize(dim);
      return !ShapedType::isDynamic(extent) && extent == *constant;
    });
  auto value = dyn_cast<Value>(size);
  auto dimOp = value ? value.getDefiningOp<tensor::DimOp>() : nullptr;
  if (dimOp && getConstantIntValue(dimOp.getIndex()) == dim &&
      llvm::is_contained(sources, dimOp.getSource()))
    return true;
  return llvm::any_of(sources, [&](Value source) {
    auto slice = source.getDefiningOp<tensor::ExtractSliceOp>();
    return slice &&
           slice.getSourceType().getRank() == slice.getResultType().getRank() &&
           isEqualConstantIntOrValue(size, slice.getMixedSizes()[dim]);
  });
}

/// Whether (offset, size) covers the whole kv length of `op`.
static bool coversWholeKv(AttentionOp op, OpFoldResult offset,
                          OpFoldResult size) {
  return isZeroInteger(offset) &&
         isDimOf(size, {op.getKey(), op.getValue()}, 2);
}

/// The attention of one tile: rows offsets[0..2] / sizes[0..2] of the
/// output, keys [kvOffset, kvOffset + kvSize), written into `outputs`.
static FailureOr<TilingResult> buildTile(
    AttentionOp op, OpBuilder &b, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, OpFoldResult kvOffset, OpFoldResult kvSize,
    function_ref<SmallVector<Value>(SmallVector<Operation *> &)> makeOutputs) {
  Location loc = op.getLoc();
  OpFoldResult zero = b.getIndexAttr(0);
  int64_t dv = op.getValueHeadDim();
  if (!isZeroInteger(offsets[kValueDim]) ||
      getConstantIntValue(sizes[kValueDim]) != dv)
    return op.emitOpError() << "cannot tile the value head dim (Dv = " << dv
                            << "): every tile needs whole rows of the softmax";

  // The kv heads the query-head tile reads: head h reads kv head h / G.
  OpFoldResult hq = tensor::getMixedSize(b, loc, op.getQuery(), 1);
  OpFoldResult hkv = tensor::getMixedSize(b, loc, op.getKey(), 1);
  OpFoldResult group = divide(b, loc, hq, hkv);
  OpFoldResult kvHeadOffset = divide(b, loc, offsets[kHeads], group);
  OpFoldResult kvHeads;
  std::optional<int64_t> headTile = getConstantIntValue(sizes[kHeads]);
  std::optional<int64_t> groupSize = getConstantIntValue(group);
  if (headTile == 1) {
    kvHeads = b.getIndexAttr(1);
  } else if (isZeroInteger(offsets[kHeads]) &&
             (sizes[kHeads] == hq ||
              isDimOf(sizes[kHeads], {op.getQuery()}, 1))) {
    kvHeads = hkv;
  } else if (headTile && groupSize && *headTile % *groupSize == 0) {
    kvHeads = b.getIndexAttr(*headTile / *groupSize);
  } else {
    return op.emitOpError()
           << "cannot tile the query heads into groups that do not map onto "
              "whole kv heads; tile heads by 1, by a multiple of Hq / Hkv, or "
              "not at all";
  }

  OpFoldResult d = b.getIndexAttr(op.getHeadDim());
  SmallVector<OpFoldResult> kvOffsets = {offsets[kBatch], kvHeadOffset,
                                         kvOffset, zero};
  SmallVector<Operation *> slices;
  auto addSlice = [&](Value source, ArrayRef<OpFoldResult> sliceOffsets,
                      ArrayRef<OpFoldResult> sliceSizes) {
    Value value = slice(b, loc, source, sliceOffsets, sliceSizes);
    slices.push_back(value.getDefiningOp());
    return value;
  };
  Value query = addSlice(
      op.getQuery(), {offsets[kBatch], offsets[kHeads], offsets[kRows], zero},
      {sizes[kBatch], sizes[kHeads], sizes[kRows], d});
  Value key =
      addSlice(op.getKey(), kvOffsets, {sizes[kBatch], kvHeads, kvSize, d});
  Value value = addSlice(op.getValue(), kvOffsets,
                         {sizes[kBatch], kvHeads, kvSize, sizes[kValueDim]});
  SmallVector<Value> outputs = makeOutputs(slices);

  // The tile's position in the whole problem: this op's own, plus the tile's.
  SmallVector<OpFoldResult> base = op.getMixedOffsets();
  SmallVector<OpFoldResult> local = {offsets[kBatch], offsets[kHeads],
                                     offsets[kRows], kvOffset};
  SmallVector<Value> tileOffsets;
  for (auto [baseOffset, localOffset] : llvm::zip_equal(base, local))
    tileOffsets.push_back(getValueOrCreateConstantIndexOp(
        b, loc, add(b, loc, baseOffset, localOffset)));

  auto tiled = AttentionOp::create(b, loc, ValueRange(outputs).getTypes(),
                                   query, key, value, op.getBlockMask(),
                                   outputs, tileOffsets, op.getScaleAttr(),
                                   op.getCausalAttr(), op.getKernelAttr());
  IRMapping mapping;
  op.getScoreMod().cloneInto(&tiled.getScoreMod(), mapping);
  op.getMaskMod().cloneInto(&tiled.getMaskMod(), mapping);
  return TilingResult{
      {tiled.getOperation()}, SmallVector<Value>(tiled.getResults()), slices};
}

FailureOr<TilingResult>
AttentionOp::getTiledImplementation(OpBuilder &b,
                                    ArrayRef<OpFoldResult> offsets,
                                    ArrayRef<OpFoldResult> sizes) {
  Location loc = getLoc();
  if (offsets.size() > kKv && !coversWholeKv(*this, offsets[kKv], sizes[kKv]))
    return emitOpError()
           << "cannot tile the kv length N as a plain loop: attention "
              "overwrites its output instead of accumulating into it; split "
              "N with tile_reduction_using_forall or "
              "tile_reduction_using_for (PartialReductionOpInterface)";
  return buildTile(*this, b, offsets, sizes, b.getIndexAttr(0),
                   tensor::getMixedSize(b, loc, getKey(), 2),
                   [&](SmallVector<Operation *> &slices) {
                     SmallVector<Value> outputs;
                     auto addSlice = [&](Value source, unsigned rank) {
                       outputs.push_back(slice(b, loc, source,
                                               offsets.take_front(rank),
                                               sizes.take_front(rank)));
                       slices.push_back(outputs.back().getDefiningOp());
                     };
                     addSlice(getOutputs()[0], 4);
                     if (Value lse = getLogsumexpInit())
                       addSlice(lse, 3);
                     return outputs;
                   });
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

//===----------------------------------------------------------------------===//
// Split-kv tiling (PartialReductionOpInterface)
//
// The partial state of a kv split is its normalized f32 output and its
// logsumexp: partial_out [B, Hq, M, Dv, S] and partial_lse [B, Hq, M, S],
// one slot per split, initialized to (0, -inf), the identity of the merge.
// attn.merge_splits combines the slots.
//
// - tile_reduction_using_forall (outer parallel): split s computes its
//   attention straight into slot s; S is the number of splits.
// - tile_reduction_using_for (outer reduction): the loop carries one running
//   (output, logsumexp) pair per row and merges each kv chunk into slot 0.
//   Upstream's driver sizes the slot dim by the tile size, as for linalg
//   ops whose lanes reduce independently; attention's state is one pair per
//   row, so the other slots stay at the identity and merge to nothing.
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>>
AttentionOp::generateInitialTensorForPartialReduction(
    OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
    const SetVector<unsigned> &reductionDims) {
  if (reductionDims.size() != 1 || reductionDims.front() != kKv)
    return emitOpError() << "can split only the kv length (dim " << kKv
                         << " of the iteration domain)";
  OpFoldResult splits = sizes[kKv];
  SmallVector<OpFoldResult> outSizes = {sizes[kBatch], sizes[kHeads],
                                        sizes[kRows], sizes[kValueDim], splits};
  SmallVector<OpFoldResult> lseSizes = {sizes[kBatch], sizes[kHeads],
                                        sizes[kRows], splits};
  return SmallVector<Value>{
      filledF32(b, loc, outSizes, 0.0),
      filledF32(b, loc, lseSizes, -std::numeric_limits<double>::infinity())};
}

/// The slot of the partial tensors that a tile writes.
static OpFoldResult partialSlot(OpBuilder &b, ReductionTilingStrategy strategy,
                                ArrayRef<OpFoldResult> splitReductionIvs) {
  if (strategy == ReductionTilingStrategy::PartialReductionOuterParallel)
    return splitReductionIvs.front();
  return b.getIndexAttr(0);
}

LogicalResult AttentionOp::getPartialResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ReductionTilingStrategy strategy,
    ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes,
    const SetVector<unsigned> &reductionDims,
    ArrayRef<OpFoldResult> splitReductionIvs,
    SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  if (resultNumber > 1)
    return failure();
  unsigned rank = resultNumber == 0 ? 4 : 3;
  resultOffsets.assign(offsets.begin(), offsets.begin() + rank);
  resultSizes.assign(sizes.begin(), sizes.begin() + rank);
  resultOffsets.push_back(partialSlot(b, strategy, splitReductionIvs));
  resultSizes.push_back(b.getIndexAttr(1));
  return success();
}

FailureOr<TilingResult> AttentionOp::tileToPartialReduction(
    OpBuilder &b, Location loc, ReductionTilingStrategy strategy,
    ValueRange init, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, const SetVector<unsigned> &reductionDims,
    ArrayRef<OpFoldResult> splitReductionIvs) {
  if (reductionDims.size() != 1 || reductionDims.front() != kKv ||
      init.size() != 2)
    return emitOpError() << "can split only the kv length (dim " << kKv
                         << " of the iteration domain)";
  OpFoldResult one = b.getIndexAttr(1);
  OpFoldResult slot = partialSlot(b, strategy, splitReductionIvs);
  SmallVector<OpFoldResult> rowSizes(sizes.take_front(3));
  SmallVector<OpFoldResult> outSizes = {sizes[kBatch], sizes[kHeads],
                                        sizes[kRows], sizes[kValueDim]};

  // Slot `slot` of the partial tensors at the tile's rows, without the slot
  // dim: [b, h, m, Dv] and [b, h, m].
  SmallVector<Value> slotOf(2);
  SmallVector<Operation *> slotSlices;
  for (auto [i, partial] : llvm::enumerate(init)) {
    ArrayRef<OpFoldResult> tileSizes = i == 0 ? outSizes : rowSizes;
    SmallVector<OpFoldResult> sliceOffsets(
        offsets.take_front(tileSizes.size()));
    SmallVector<OpFoldResult> sliceSizes(tileSizes);
    sliceOffsets.push_back(slot);
    sliceSizes.push_back(one);
    auto type = RankedTensorType::get(staticShape(tileSizes), b.getF32Type());
    SmallVector<OpFoldResult> strides(sliceSizes.size(), one);
    auto sliceOp = tensor::ExtractSliceOp::create(
        b, loc, type, partial, sliceOffsets, sliceSizes, strides);
    slotOf[i] = sliceOp;
    slotSlices.push_back(sliceOp);
  }

  if (strategy == ReductionTilingStrategy::PartialReductionOuterParallel) {
    // Split s computes its attention straight into slot s.
    FailureOr<TilingResult> tile =
        buildTile(*this, b, offsets, sizes, offsets[kKv], sizes[kKv],
                  [&](SmallVector<Operation *> &) { return slotOf; });
    if (succeeded(tile))
      tile->generatedSlices.append(slotSlices);
    return tile;
  }

  // Outer reduction: attention of this kv chunk, then merged with the
  // running pair of slot 0 by attn.merge_splits over the two.
  FailureOr<TilingResult> tile = buildTile(
      *this, b, offsets, sizes, offsets[kKv], sizes[kKv],
      [&](SmallVector<Operation *> &) {
        return SmallVector<Value>{
            tensor::EmptyOp::create(b, loc, outSizes, b.getF32Type()),
            tensor::EmptyOp::create(b, loc, rowSizes, b.getF32Type())};
      });
  if (failed(tile))
    return failure();
  SmallVector<Value> pair(2);
  for (unsigned i = 0; i < 2; ++i) {
    ArrayRef<OpFoldResult> tileSizes = i == 0 ? outSizes : rowSizes;
    SmallVector<OpFoldResult> pairSizes(tileSizes);
    pairSizes.push_back(b.getIndexAttr(2));
    Value both = tensor::EmptyOp::create(b, loc, pairSizes, b.getF32Type());
    SmallVector<Value, 2> parts = {slotOf[i], tile->tiledValues[i]};
    for (auto [index, part] : llvm::enumerate(parts)) {
      SmallVector<OpFoldResult> at(tileSizes.size(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> partSizes(tileSizes);
      at.push_back(b.getIndexAttr(index));
      partSizes.push_back(one);
      SmallVector<OpFoldResult> strides(partSizes.size(), one);
      both = tensor::InsertSliceOp::create(b, loc, part, both, at, partSizes,
                                           strides);
    }
    pair[i] = both;
  }
  auto merged = MergeSplitsOp::create(
      b, loc, TypeRange{slotOf[0].getType(), slotOf[1].getType()}, pair[0],
      pair[1],
      ValueRange{tensor::EmptyOp::create(b, loc, outSizes, b.getF32Type()),
                 tensor::EmptyOp::create(b, loc, rowSizes, b.getF32Type())});
  tile->tiledValues = SmallVector<Value>(merged.getResults());
  tile->generatedSlices.append(slotSlices);
  return tile;
}

FailureOr<MergeResult>
AttentionOp::mergeReductions(OpBuilder &b, Location loc,
                             ValueRange partialReduce,
                             const SetVector<unsigned> &reductionDims) {
  if (partialReduce.size() != 2)
    return failure();
  auto merge = MergeSplitsOp::create(b, loc, getResultTypes(), partialReduce[0],
                                     partialReduce[1], getOutputs());
  return MergeResult{{merge.getOperation()},
                     SmallVector<Value>(merge.getResults())};
}

//===----------------------------------------------------------------------===//
// attn.attention_grad: tiles of whole kv heads, each with every query head
// that reads it, since dK and dV sum over those query heads.
//===----------------------------------------------------------------------===//

enum : unsigned { kGradBatch, kGradKvHeads, kGradNumLoops };

SmallVector<utils::IteratorType> AttentionGradOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(kGradNumLoops,
                                          utils::IteratorType::parallel);
}

SmallVector<Range> AttentionGradOp::getIterationDomain(OpBuilder &b) {
  Location loc = getLoc();
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<Range> domain;
  for (int64_t dim = 0; dim < kGradNumLoops; ++dim)
    domain.push_back(
        Range{zero, tensor::getMixedSize(b, loc, getKey(), dim), one});
  return domain;
}

/// x * y on indices, folded when both are constant.
static OpFoldResult multiply(OpBuilder &b, Location loc, OpFoldResult x,
                             OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x),
                         cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx * *cy);
  if (cy == 1)
    return x;
  Value factor = getValueOrCreateConstantIndexOp(b, loc, y);
  return arith::MulIOp::create(
             b, loc, getValueOrCreateConstantIndexOp(b, loc, x), factor)
      .getResult();
}

/// The query heads (offset, size) of kv heads [offset, offset + size): Hq /
/// Hkv per kv head.
static std::pair<OpFoldResult, OpFoldResult> queryHeadsOf(AttentionGradOp op,
                                                          OpBuilder &b,
                                                          OpFoldResult offset,
                                                          OpFoldResult size) {
  Location loc = op.getLoc();
  OpFoldResult hq = tensor::getMixedSize(b, loc, op.getQuery(), 1);
  OpFoldResult hkv = tensor::getMixedSize(b, loc, op.getKey(), 1);
  OpFoldResult group = divide(b, loc, hq, hkv);
  OpFoldResult headOffset = multiply(b, loc, offset, group);
  OpFoldResult heads = multiply(b, loc, size, group);
  return {headOffset, heads};
}

/// [offsets[0], headOffset, 0...] / [sizes[0], heads, whole...] of `source`.
static Value headSlice(OpBuilder &b, Location loc, Value source,
                       OpFoldResult batchOffset, OpFoldResult batches,
                       OpFoldResult headOffset, OpFoldResult heads) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, source);
  SmallVector<OpFoldResult> offsets(sizes.size(), b.getIndexAttr(0));
  offsets[0] = batchOffset;
  offsets[1] = headOffset;
  sizes[0] = batches;
  sizes[1] = heads;
  return slice(b, loc, source, offsets, sizes);
}

FailureOr<TilingResult>
AttentionGradOp::getTiledImplementation(OpBuilder &b,
                                        ArrayRef<OpFoldResult> offsets,
                                        ArrayRef<OpFoldResult> sizes) {
  if (!getWrt().empty())
    return emitOpError() << "cannot be tiled with wrt tensors: every tile "
                            "adds to the whole of each wrt gradient";
  if (getKernelAttr())
    return emitOpError() << "cannot be tiled once it has a kernel: the GPU "
                            "backward kernels compute whole problems";
  Location loc = getLoc();
  OpFoldResult queryHeadOffset, queryHeads;
  std::tie(queryHeadOffset, queryHeads) =
      queryHeadsOf(*this, b, offsets[kGradKvHeads], sizes[kGradKvHeads]);
  SmallVector<Operation *> slices;
  auto byQueryHeads = [&](Value source) {
    Value value = headSlice(b, loc, source, offsets[kGradBatch],
                            sizes[kGradBatch], queryHeadOffset, queryHeads);
    slices.push_back(value.getDefiningOp());
    return value;
  };
  auto byKvHeads = [&](Value source) {
    Value value =
        headSlice(b, loc, source, offsets[kGradBatch], sizes[kGradBatch],
                  offsets[kGradKvHeads], sizes[kGradKvHeads]);
    slices.push_back(value.getDefiningOp());
    return value;
  };
  // One slice per statement, for a compiler-independent order.
  Value query = byQueryHeads(getQuery());
  Value key = byKvHeads(getKey());
  Value value = byKvHeads(getValue());
  Value output = byQueryHeads(getOutput());
  Value gradOutput = byQueryHeads(getGradOutput());
  Value logsumexp = byQueryHeads(getLogsumexp());
  SmallVector<Value> outputs;
  outputs.push_back(byQueryHeads(getOutputs()[0]));
  outputs.push_back(byKvHeads(getOutputs()[1]));
  outputs.push_back(byKvHeads(getOutputs()[2]));

  // The tile's position in the whole problem: this op's own, plus the tile's.
  SmallVector<OpFoldResult> base = getMixedOffsets();
  SmallVector<OpFoldResult> local = {offsets[kGradBatch], queryHeadOffset};
  SmallVector<Value> tileOffsets;
  for (auto [baseOffset, localOffset] : llvm::zip_equal(base, local))
    tileOffsets.push_back(getValueOrCreateConstantIndexOp(
        b, loc, add(b, loc, baseOffset, localOffset)));

  auto tiled = AttentionGradOp::create(
      b, loc, ValueRange(outputs).getTypes(), query, key, value, output,
      gradOutput, logsumexp, getBlockMask(), ValueRange(), outputs, tileOffsets,
      getScaleAttr(), getCausalAttr(), KernelAttr());
  IRMapping mapping;
  getScoreMod().cloneInto(&tiled.getScoreMod(), mapping);
  getMaskMod().cloneInto(&tiled.getMaskMod(), mapping);
  return TilingResult{
      {tiled.getOperation()}, SmallVector<Value>(tiled.getResults()), slices};
}

LogicalResult AttentionGradOp::getResultTilePosition(
    OpBuilder &b, unsigned resultNumber, ArrayRef<OpFoldResult> offsets,
    ArrayRef<OpFoldResult> sizes, SmallVector<OpFoldResult> &resultOffsets,
    SmallVector<OpFoldResult> &resultSizes) {
  // dQ by query heads, dK and dV by kv heads; wrt gradients are not tiled.
  if (resultNumber > 2)
    return failure();
  Location loc = getLoc();
  OpFoldResult headOffset = offsets[kGradKvHeads], heads = sizes[kGradKvHeads];
  if (resultNumber == 0)
    std::tie(headOffset, heads) =
        queryHeadsOf(*this, b, offsets[kGradKvHeads], sizes[kGradKvHeads]);
  resultSizes = tensor::getMixedSizes(b, loc, getOutputs()[resultNumber]);
  resultOffsets.assign(resultSizes.size(), b.getIndexAttr(0));
  resultOffsets[0] = offsets[kGradBatch];
  resultOffsets[1] = headOffset;
  resultSizes[0] = sizes[kGradBatch];
  resultSizes[1] = heads;
  return success();
}
