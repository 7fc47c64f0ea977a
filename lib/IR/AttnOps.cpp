//===- AttnOps.cpp - attn dialect operations ------------------------------===//
//
// Verifiers name the operand at fault and what was expected against what was
// found, so that a user reading one diagnostic can fix the IR.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "VerifyUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::detail;

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

float AttentionOp::getScaleValue() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

SmallVector<OpFoldResult> AttentionOp::getMixedOffsets() {
  if (!getOffsets().empty())
    return getAsOpFoldResult(getOffsets());
  return SmallVector<OpFoldResult>(4, Builder(getContext()).getIndexAttr(0));
}

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  if (!getOffsets().empty() && getOffsets().size() != 4)
    return emitOpError() << "expected 4 offsets (b, h, q, kv) or none, but "
                            "got "
                         << getOffsets().size();
  RankedTensorType q = getQueryType(), k = getKeyType(), v = getValueType();

  if (failed(verifyRank(op, "query", q, 4, "[B, Hq, M, D]")) ||
      failed(verifyRank(op, "key", k, 4, "[B, Hkv, N, D]")) ||
      failed(verifyRank(op, "value", v, 4, "[B, Hkv, N, Dv]")))
    return failure();

  size_t numOutputs = getOutputs().size();
  if (numOutputs != 1 && numOutputs != 2)
    return emitOpError() << "expected 1 or 2 outputs (the output, then "
                            "optionally the logsumexp), but got "
                         << numOutputs;
  RankedTensorType out = getOutputType();
  if (failed(verifyRank(op, "output", out, 4, "[B, Hq, M, Dv]")))
    return failure();

  Type elementType = q.getElementType();
  if (!isSupportedFloat(elementType))
    return emitOpError() << "expected query element type to be f16, bf16 or "
                            "f32, but got "
                         << elementType;
  if (k.getElementType() != elementType)
    return emitOpError() << "expected key element type to equal the query's ("
                         << elementType << "), but got " << k.getElementType();
  if (v.getElementType() != elementType)
    return emitOpError() << "expected value element type to equal the "
                            "query's ("
                         << elementType << "), but got " << v.getElementType();
  if (!isSupportedFloat(out.getElementType()))
    return emitOpError() << "expected output element type to be f16, bf16 or "
                            "f32, but got "
                         << out.getElementType();

  if (failed(verifyHeadDim(op, "query", q)) ||
      failed(verifyHeadDim(op, "value", v)) ||
      failed(verifyHeadDim(op, "output", out)))
    return failure();
  if (k.isDynamicDim(3))
    return emitOpError() << "expected a static head dim (dim 3) in key, but "
                            "got "
                         << k;

  // Batch, heads, lengths and head dims agree across operands.
  if (failed(verifySameDim(op, "batch", "query", q, 0, "key", k, 0)) ||
      failed(verifySameDim(op, "batch", "query", q, 0, "value", v, 0)) ||
      failed(verifySameDim(op, "batch", "query", q, 0, "output", out, 0)) ||
      failed(verifySameDim(op, "head dim D", "query", q, 3, "key", k, 3)) ||
      failed(verifySameDim(op, "kv heads", "key", k, 1, "value", v, 1)) ||
      failed(verifySameDim(op, "kv length N", "key", k, 2, "value", v, 2)) ||
      failed(
          verifySameDim(op, "query heads", "query", q, 1, "output", out, 1)) ||
      failed(verifySameDim(op, "query length M", "query", q, 2, "output", out,
                           2)) ||
      failed(verifySameDim(op, "value head dim Dv", "value", v, 3, "output",
                           out, 3)))
    return failure();

  if (failed(verifyGroupedHeads(op, q, k)))
    return failure();

  if (std::optional<APFloat> scale = getScale())
    if (failed(verifyScale(op, scale->convertToFloat())))
      return failure();

  if (Value lseInit = getLogsumexpInit()) {
    auto lse = cast<RankedTensorType>(lseInit.getType());
    if (failed(verifyLogsumexp(op, lse, "[B, Hq, M]")))
      return failure();
    if (failed(
            verifySameDim(op, "batch", "query", q, 0, "logsumexp", lse, 0)) ||
        failed(verifySameDim(op, "query heads", "query", q, 1, "logsumexp", lse,
                             1)) ||
        failed(verifySameDim(op, "query length M", "query", q, 2, "logsumexp",
                             lse, 2)))
      return failure();
  }

  if (failed(verifyResultsMatchOutputs(op, getResults(), getOutputs())))
    return failure();

  if (getBlockMask() && !hasMaskMod())
    return emitOpError() << "has a block_mask but no mask_mod: partial blocks "
                            "need the elementwise mask";
  if (KernelAttr kernel = getKernelAttr())
    return verifyKernel(kernel);
  return success();
}

LogicalResult AttentionOp::verifyKernel(KernelAttr kernel) {
  if (!kernel.isTensorCore())
    return success();
  StringRef kind = stringifyKernelKind(kernel.getKind());
  Type element = getQueryType().getElementType();
  int64_t d = getHeadDim(), dv = getValueHeadDim();
  if (!element.isF16() && !element.isBF16())
    return emitOpError() << "cannot run on a " << kind << " kernel: it needs "
                         << "f16 or bf16 inputs, not " << element;
  if (d % 16 != 0 || dv % 16 != 0)
    return emitOpError() << "cannot run on a " << kind
                         << " kernel: its head dims (" << d << ", " << dv
                         << ") are not multiples of 16";
  auto servedByWgmma = [](int64_t dim) {
    return dim == 16 || dim == 32 || dim == 64 || dim == 128 || dim == 256;
  };
  if (kernel.isWarpgroupMma() && (!servedByWgmma(d) || !servedByWgmma(dv)))
    return emitOpError() << "cannot run on a " << kind
                         << " kernel: wgmma serves head dims of 16, 32, 64, "
                            "128 and 256, not D = "
                         << d << ", Dv = " << dv;
  Value blockMask = getBlockMask();
  if (!blockMask)
    return success();
  if (!getOffsets().empty())
    return emitOpError() << "cannot run on a " << kind
                         << " kernel: it is a tile of a larger op with a "
                            "block mask";
  auto type = cast<BlockMaskType>(blockMask.getType());
  if (type.getQBlock() % kernel.getQTile() != 0 ||
      type.getKvBlock() % kernel.getKvTile() != 0)
    return emitOpError() << "has a block mask of " << type.getQBlock() << " x "
                         << type.getKvBlock() << " blocks, which " << kind
                         << " tiles of " << kernel.getQTile() << " x "
                         << kernel.getKvTile() << " do not divide";
  return success();
}

LogicalResult AttentionOp::verifyRegions() {
  MLIRContext *ctx = getContext();
  Type index = IndexType::get(ctx), f32 = Float32Type::get(ctx);
  if (hasScoreMod() &&
      failed(verifyModRegion(getOperation(), getScoreMod(), "score_mod",
                             {f32, index, index, index, index}, f32,
                             "[score, b, h, q, kv]")))
    return failure();
  if (hasMaskMod() &&
      failed(verifyModRegion(getOperation(), getMaskMod(), "mask_mod",
                             {index, index, index, index},
                             IntegerType::get(ctx, 1), "[b, h, q, kv]")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// OnlineSoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult OnlineSoftmaxOp::verify() {
  auto scores = cast<RankedTensorType>(getScores().getType());
  auto max = cast<RankedTensorType>(getMax().getType());
  if (scores.getRank() < 1)
    return emitOpError() << "expected scores to have rank 1 or more, but got "
                         << scores;
  if (max.getRank() != scores.getRank() - 1)
    return emitOpError() << "expected max and sum to have rank "
                         << scores.getRank() - 1
                         << " (the scores' rank less the reduced last dim), "
                            "but got "
                         << max;
  for (int64_t i = 0, e = max.getRank(); i < e; ++i)
    if (failed(verifySameDim(getOperation(), "rows", "scores", scores, i, "max",
                             max, i)))
      return failure();
  if (auto sum = cast<RankedTensorType>(getSum().getType()); sum != max)
    return emitOpError() << "expected sum type to equal max type " << max
                         << ", but got " << sum;
  return verifyScale(getOperation(), getScale().convertToFloat());
}

namespace {
/// op(cast(x)) -> cast(op(x)) for casts that only drop static sizes, on
/// attn.attention and attn.attention_grad: the op sees the more static
/// types; its results are cast back. It runs before upstream's generic
/// pattern for destination-style ops, which cannot clone their regions.
template <typename OpT> struct FoldCastsInto : OpRewritePattern<OpT> {
  FoldCastsInto(MLIRContext *ctx) : OpRewritePattern<OpT>(ctx, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    IRMapping mapping;
    for (Value operand : op->getOperands()) {
      auto cast = operand.getDefiningOp<tensor::CastOp>();
      if (cast && tensor::canFoldIntoConsumerOp(cast))
        mapping.map(operand, cast.getSource());
    }
    if (mapping.getValueMap().empty())
      return failure();
    // A copy on the cast sources, whose results take the (new) outs' types.
    Operation *folded = rewriter.clone(*op, mapping);
    for (auto [result, init] :
         llvm::zip_equal(folded->getResults(), cast<OpT>(folded).getOutputs()))
      result.setType(init.getType());
    SmallVector<Value> replacements;
    for (auto [result, old] :
         llvm::zip_equal(folded->getResults(), op->getResults()))
      replacements.push_back(
          result.getType() == old.getType()
              ? Value(result)
              : Value(tensor::CastOp::create(rewriter, op.getLoc(),
                                             old.getType(), result)));
    rewriter.replaceOp(op, replacements);
    return success();
  }
};
} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<FoldCastsInto<AttentionOp>>(context);
}

void AttentionGradOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                                  MLIRContext *context) {
  patterns.add<FoldCastsInto<AttentionGradOp>>(context);
}

//===----------------------------------------------------------------------===//
// MergeSplitsOp
//===----------------------------------------------------------------------===//

LogicalResult MergeSplitsOp::verify() {
  Operation *op = getOperation();
  auto po = cast<RankedTensorType>(getPartialOut().getType());
  auto pl = cast<RankedTensorType>(getPartialLse().getType());
  if (failed(verifyRank(op, "partial_out", po, 5, "[B, H, M, Dv, S]")) ||
      failed(verifyRank(op, "partial_lse", pl, 4, "[B, H, M, S]")))
    return failure();
  for (auto [name, pi, li] :
       {std::tuple{"batch", 0u, 0u}, std::tuple{"heads", 1u, 1u},
        std::tuple{"query length M", 2u, 2u}, std::tuple{"splits S", 4u, 3u}})
    if (failed(verifySameDim(op, name, "partial_out", po, pi, "partial_lse", pl,
                             li)))
      return failure();

  size_t numOutputs = getOutputs().size();
  if (numOutputs < 1 || numOutputs > 2)
    return emitOpError() << "expected outs to hold the output and optionally "
                            "the logsumexp (1 or 2 tensors), but got "
                         << numOutputs;
  auto out = cast<RankedTensorType>(getOutputs()[0].getType());
  if (failed(verifyRank(op, "output", out, 4, "[B, H, M, Dv]")))
    return failure();
  if (!isSupportedFloat(out.getElementType()))
    return emitOpError() << "expected output element type to be f16, bf16 or "
                            "f32, but got "
                         << out.getElementType();
  for (unsigned d = 0; d < 4; ++d)
    if (failed(verifySameDim(op, d == 3 ? "value head dim" : "outer dim",
                             "partial_out", po, d, "output", out, d)))
      return failure();
  if (Value lseInit = getLogsumexpInit()) {
    auto lse = cast<RankedTensorType>(lseInit.getType());
    if (failed(verifyLogsumexp(op, lse, "[B, H, M]")))
      return failure();
    for (unsigned d = 0; d < 3; ++d)
      if (failed(verifySameDim(op, "outer dim", "partial_lse", pl, d,
                               "logsumexp", lse, d)))
        return failure();
  }
  if (failed(verifyResultsMatchOutputs(op, getResults(), getOutputs())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getOutput().getType());
  if (in.getRank() < 1)
    return emitOpError() << "expected input to have rank 1 or more, but got "
                         << in;
  if (!isSupportedFloat(in.getElementType()))
    return emitOpError() << "expected input element type to be f16, bf16 or "
                            "f32, but got "
                         << in.getElementType();
  if (!isSupportedFloat(out.getElementType()))
    return emitOpError() << "expected output element type to be f16, bf16 or "
                            "f32, but got "
                         << out.getElementType();
  if (out.getRank() != in.getRank())
    return emitOpError() << "expected output to have the input's rank ("
                         << in.getRank() << "), but got " << out;
  for (int64_t i = 0, e = in.getRank(); i < e; ++i)
    if (failed(verifySameDim(getOperation(), "shape", "input", in, i, "output",
                             out, i)))
      return failure();
  if (getResult().getType() != out)
    return emitOpError() << "expected result type to equal output type " << out
                         << ", but got " << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Block masks
//===----------------------------------------------------------------------===//

LogicalResult CreateBlockMaskOp::verify() {
  // Counts and block indices are i32, and the kernels launch a grid over
  // batch x heads: a constant size past that range, or below zero, could
  // only overflow an allocation or a launch.
  constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();
  for (auto [name, value] : {std::pair<StringRef, Value>{"batch", getBatch()},
                             {"heads", getHeads()},
                             {"q_len", getQLen()},
                             {"kv_len", getKvLen()}}) {
    APInt size;
    if (matchPattern(value, m_ConstantInt(&size)) &&
        (size.isNegative() || size.sgt(kMaxSize)))
      return emitOpError() << "expected " << name << " to lie in [0, "
                           << kMaxSize << "], but it is "
                           << size.getSExtValue();
  }
  return success();
}

LogicalResult CreateBlockMaskOp::verifyRegions() {
  Type index = IndexType::get(getContext());
  return verifyModRegion(getOperation(), getMaskMod(), "mask_mod",
                         {index, index, index, index},
                         IntegerType::get(getContext(), 1), "[b, h, q, kv]");
}

/// Block-mask counts are i32 [B, H, blocks]; index lists i32
/// [B, H, blocks, blocks].
static LogicalResult verifyBlockMaskTensor(Operation *op, StringRef name,
                                           Type type, int64_t rank) {
  auto tensor = cast<RankedTensorType>(type);
  if (tensor.getRank() != rank ||
      !tensor.getElementType().isSignlessInteger(32))
    return op->emitOpError()
           << "expected " << name << " to be an i32 tensor of rank " << rank
           << (rank == 3 ? " [B, H, blocks]" : " [B, H, blocks, blocks]")
           << ", but got " << type;
  return success();
}

Value MakeBlockMaskOp::getList(BlockMaskField field) {
  Value lists[] = {getKvNumBlocks(),    getKvIndices(),   getFullKvNumBlocks(),
                   getFullKvIndices(),  getQNumBlocks(),  getQIndices(),
                   getFullQNumBlocks(), getFullQIndices()};
  return lists[static_cast<int64_t>(field)];
}

LogicalResult MakeBlockMaskOp::verify() {
  Operation *op = getOperation();
  // Each side's counts and indices: the partial lists, then the full ones
  // of the same types.
  auto verifySide = [&](StringRef side, Value counts, Value indices,
                        Value fullCounts, Value fullIndices) -> LogicalResult {
    std::string num = (side + "_num_blocks").str(),
                idx = (side + "_indices").str();
    if (failed(verifyBlockMaskTensor(op, num, counts.getType(), 3)) ||
        failed(verifyBlockMaskTensor(op, idx, indices.getType(), 4)))
      return failure();
    auto numType = cast<RankedTensorType>(counts.getType());
    auto idxType = cast<RankedTensorType>(indices.getType());
    for (unsigned i = 0; i < 3; ++i)
      if (failed(verifySameDim(op, "leading dims", num, numType, i, idx,
                               idxType, i)))
        return failure();
    if (!fullCounts != !fullIndices)
      return emitOpError() << "expected both full_" << num << " and full_"
                           << idx << ", or neither";
    if (!fullCounts)
      return success();
    if (fullCounts.getType() != numType)
      return emitOpError() << "expected full_" << num << " type to equal "
                           << num << " type " << numType << ", but got "
                           << fullCounts.getType();
    if (fullIndices.getType() != idxType)
      return emitOpError() << "expected full_" << idx << " type to equal "
                           << idx << " type " << idxType << ", but got "
                           << fullIndices.getType();
    return success();
  };
  if (failed(verifySide("kv", getKvNumBlocks(), getKvIndices(),
                        getFullKvNumBlocks(), getFullKvIndices())))
    return failure();
  if (!getQNumBlocks() != !getQIndices())
    return emitOpError() << "expected both q_num_blocks and q_indices, or "
                            "neither";
  if (!getQNumBlocks()) {
    if (getFullQNumBlocks() || getFullQIndices())
      return emitOpError() << "has full q-side lists but no partial ones";
    return success();
  }
  if (failed(verifySide("q", getQNumBlocks(), getQIndices(),
                        getFullQNumBlocks(), getFullQIndices())))
    return failure();
  // Both sides describe the same batches and heads.
  auto kvIdx = cast<RankedTensorType>(getKvIndices().getType());
  auto qIdx = cast<RankedTensorType>(getQIndices().getType());
  for (unsigned i = 0; i < 2; ++i)
    if (failed(verifySameDim(op, "batch and heads", "kv_indices", kvIdx, i,
                             "q_indices", qIdx, i)))
      return failure();
  return success();
}

LogicalResult BlockMaskFieldOp::verify() {
  int64_t rank;
  switch (getField()) {
  case BlockMaskField::kv_num_blocks:
  case BlockMaskField::full_kv_num_blocks:
  case BlockMaskField::q_num_blocks:
  case BlockMaskField::full_q_num_blocks:
    rank = 3;
    break;
  default:
    rank = 4;
    break;
  }
  return verifyBlockMaskTensor(
      getOperation(), "result for " + stringifyBlockMaskField(getField()).str(),
      getResult().getType(), rank);
}

#define GET_OP_CLASSES
#include "AttnDialect/IR/AttnOps.cpp.inc"

//===----------------------------------------------------------------------===//
// WorkspaceOp
//===----------------------------------------------------------------------===//

LogicalResult WorkspaceOp::verify() {
  MemRefType type = getBuffer().getType();
  if (!type.isDynamicDim(0) || !type.getLayout().isIdentity() ||
      type.getMemorySpace())
    return emitOpError() << "must be a memref<?xi32> in the default memory "
                            "space (its size is `words`), got "
                         << type;
  return success();
}

//===----------------------------------------------------------------------===//
// TensorMapOp
//===----------------------------------------------------------------------===//

LogicalResult TensorMapOp::verify() {
  auto type = cast<MemRefType>(getSource().getType());
  if (!type.getLayout().isIdentity() || type.getMemorySpace())
    return emitOpError() << "needs a dense row-major memref in the default "
                            "memory space, got "
                         << type;
  Type element = type.getElementType();
  if (!element.isF16() && !element.isBF16() && !element.isF32())
    return emitOpError() << "maps f16, bf16 or f32 elements, got " << element;
  ArrayRef<int64_t> box = getBox();
  if (static_cast<int64_t>(box.size()) != type.getRank() || box.empty() ||
      box.size() > 5)
    return emitOpError() << "needs a box of one size per dim of the "
                            "source, 1 to 5 of them; got "
                         << box.size() << " for rank " << type.getRank();
  for (int64_t size : box)
    if (size < 1 || size > 256)
      return emitOpError() << "box sizes must be 1 to 256, got " << size;
  int64_t rowBytes = box.back() * element.getIntOrFloatBitWidth() / 8;
  if (rowBytes != 32 && rowBytes != 64 && rowBytes != 128)
    return emitOpError() << "the innermost box dim must be 32, 64 or 128 "
                            "bytes (the swizzle of its rows), got "
                         << rowBytes;
  if (!isa<LLVM::LLVMPointerType>(getMap().getType()) ||
      cast<LLVM::LLVMPointerType>(getMap().getType()).getAddressSpace() != 0)
    return emitOpError() << "yields a generic !llvm.ptr";
  return success();
}
