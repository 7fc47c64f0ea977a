//===- AttentionGradOp.cpp - attn.attention_grad --------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/IR/ScoreModDerivative.h"
#include "VerifyUtils.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::detail;

float AttentionGradOp::getScaleValue() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

SmallVector<OpFoldResult> AttentionGradOp::getMixedOffsets() {
  if (!getOffsets().empty())
    return getAsOpFoldResult(getOffsets());
  return SmallVector<OpFoldResult>(2, Builder(getContext()).getIndexAttr(0));
}

LogicalResult AttentionGradOp::verify() {
  Operation *op = getOperation();
  if (!getOffsets().empty() && getOffsets().size() != 2)
    return emitOpError() << "expected 2 offsets (b, h) or none, but got "
                         << getOffsets().size();
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   v = getValue().getType(), o = getOutput().getType(),
                   dO = getGradOutput().getType(),
                   lse = getLogsumexp().getType();
  if (failed(verifyRank(op, "query", q, 4, "[B, Hq, M, D]")) ||
      failed(verifyRank(op, "key", k, 4, "[B, Hkv, N, D]")) ||
      failed(verifyRank(op, "value", v, 4, "[B, Hkv, N, Dv]")) ||
      failed(verifyRank(op, "output", o, 4, "[B, Hq, M, Dv]")) ||
      failed(verifyRank(op, "grad_output", dO, 4, "[B, Hq, M, Dv]")) ||
      failed(verifyLogsumexp(op, lse, "[B, Hq, M]")))
    return failure();
  size_t expected = 3 + getWrt().size();
  if (getOutputs().size() != expected)
    return emitOpError() << "expected " << expected
                         << " outputs (dQ, dK, dV and one per wrt tensor), "
                            "but got "
                         << getOutputs().size();

  Type elementType = q.getElementType();
  if (!isSupportedFloat(elementType))
    return emitOpError() << "expected query element type to be f16, bf16 or "
                            "f32, but got "
                         << elementType;
  if (k.getElementType() != elementType || v.getElementType() != elementType)
    return emitOpError() << "expected key and value element types to equal "
                            "the query's ("
                         << elementType << "), but got " << k.getElementType()
                         << " and " << v.getElementType();
  const std::pair<const char *, RankedTensorType> rowInputs[] = {
      {"output", o}, {"grad_output", dO}};
  for (const auto &[name, type] : rowInputs)
    if (!isSupportedFloat(type.getElementType()))
      return emitOpError() << "expected " << name
                           << " element type to be f16, bf16 or f32, but got "
                           << type.getElementType();
  if (failed(verifyHeadDim(op, "query", q)) ||
      failed(verifyHeadDim(op, "key", k)) ||
      failed(verifyHeadDim(op, "value", v)))
    return failure();

  // Q, K and V are the forward's; O, dO and the logsumexp are per query
  // row; dQ, dK and dV are shaped as Q, K and V.
  if (failed(verifySameDim(op, "batch", "query", q, 0, "key", k, 0)) ||
      failed(verifySameDim(op, "batch", "query", q, 0, "value", v, 0)) ||
      failed(verifySameDim(op, "head dim D", "query", q, 3, "key", k, 3)) ||
      failed(verifySameDim(op, "kv heads", "key", k, 1, "value", v, 1)) ||
      failed(verifySameDim(op, "kv length N", "key", k, 2, "value", v, 2)))
    return failure();
  static const char *const rowDims[] = {"batch", "query heads",
                                        "query length M"};
  const std::pair<const char *, RankedTensorType> perRow[] = {
      {"output", o}, {"grad_output", dO}, {"logsumexp", lse}};
  for (const auto &[name, type] : perRow)
    for (unsigned dim = 0; dim < 3; ++dim)
      if (failed(verifySameDim(op, rowDims[dim], "query", q, dim, name, type,
                               dim)))
        return failure();
  for (const auto &[name, type] :
       ArrayRef<std::pair<const char *, RankedTensorType>>(perRow).drop_back())
    if (failed(verifySameDim(op, "value head dim Dv", "value", v, 3, name, type,
                             3)))
      return failure();

  if (failed(verifyGroupedHeads(op, q, k)))
    return failure();
  if (std::optional<APFloat> scale = getScale())
    if (failed(verifyScale(op, scale->convertToFloat())))
      return failure();

  const char *gradNames[] = {"dQ", "dK", "dV"};
  RankedTensorType primals[] = {q, k, v};
  for (auto [i, init] : llvm::enumerate(getOutputs().take_front(3))) {
    auto type = cast<RankedTensorType>(init.getType());
    if (failed(verifyCompatibleShape(type.getShape(), primals[i].getShape())))
      return emitOpError() << "expected " << gradNames[i] << " (output #" << i
                           << ") to have the shape of "
                           << StringRef(gradNames[i]).drop_front() << " "
                           << primals[i] << ", but got " << type;
    if (!isSupportedFloat(type.getElementType()))
      return emitOpError() << "expected " << gradNames[i]
                           << " element type to be f16, bf16 or f32, but got "
                           << type.getElementType();
  }
  // A wrt tensor's gradient is summed over many positions: f32.
  for (auto [i, wrt] : llvm::enumerate(getWrt())) {
    auto type = cast<RankedTensorType>(wrt.getType());
    if (!isSupportedFloat(type.getElementType()))
      return emitOpError() << "expected wrt #" << i
                           << " to be a tensor of f16, bf16 or f32, but got "
                           << type;
    if (llvm::is_contained(getWrt().take_front(i), wrt))
      return emitOpError() << "expected wrt #" << i
                           << " to be listed once, but it repeats an earlier "
                              "one";
    auto gradType = cast<RankedTensorType>(getOutputs()[3 + i].getType());
    if (failed(verifyCompatibleShape(gradType.getShape(), type.getShape())) ||
        !gradType.getElementType().isF32())
      return emitOpError() << "expected output #" << 3 + i
                           << " (the gradient of wrt #" << i
                           << ") to be f32 of its shape, "
                           << RankedTensorType::get(
                                  type.getShape(),
                                  Float32Type::get(getContext()))
                           << ", but got " << gradType;
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

int64_t AttentionGradOp::gradColumnSlices(int64_t d, int64_t dv) {
  int64_t widest = std::max(d, dv);
  int64_t fewest = llvm::divideCeil(widest, kMaxGradSliceWidth);
  for (int64_t slices = fewest; 16 * slices <= widest; ++slices)
    if (d % (16 * slices) == 0 && dv % (16 * slices) == 0)
      return slices;
  return fewest;
}

bool AttentionGradOp::hasWarpgroupGradHeadDims() {
  auto swizzled = [](int64_t dim) {
    return llvm::isPowerOf2_64(dim) && dim <= kMaxGradSliceWidth;
  };
  return swizzled(getHeadDim()) && swizzled(getValueHeadDim());
}

LogicalResult AttentionGradOp::verifyKernel(KernelAttr kernel) {
  bool warpgroup = kernel.getKind() == KernelKind::wgmma;
  if ((kernel.getKind() != KernelKind::mma_sync && !warpgroup) ||
      kernel.getBands() != 1)
    return emitOpError() << "has kernel " << kernel
                         << ", but the backward's kernels are mma_sync and "
                            "wgmma of one band";
  StringRef kind = stringifyKernelKind(kernel.getKind());
  Type element = getQuery().getType().getElementType();
  int64_t d = getHeadDim(), dv = getValueHeadDim();
  if (!element.isF16() && !element.isBF16())
    return emitOpError() << "cannot run on the " << kind
                         << " backward kernel: it needs f16 or bf16 inputs, "
                            "not "
                         << element;
  if (d % 16 != 0 || dv % 16 != 0 || d > kMaxGradHeadDim ||
      dv > kMaxGradHeadDim)
    return emitOpError() << "cannot run on the " << kind
                         << " backward kernel: its head dims (" << d << ", "
                         << dv << ") are not multiples of 16 up to "
                         << kMaxGradHeadDim;
  // Each column slice is whole k16 steps: the dK/dV kernel's split d and dv
  // alike (the dQ kernel's, d alone, always are).
  int64_t slices = gradColumnSlices(d, dv);
  if (d % (16 * slices) != 0 || dv % (16 * slices) != 0)
    return emitOpError() << "cannot run on the " << kind
                         << " backward kernel: its head dims (" << d << ", "
                         << dv << ") split into no column slices of at most "
                         << kMaxGradSliceWidth << " that are multiples of 16";
  if (warpgroup && !hasWarpgroupGradHeadDims())
    return emitOpError() << "cannot run on the wgmma backward kernel: it "
                            "serves head dims of 16, 32, 64 and 128, not D = "
                         << d << ", Dv = " << dv;
  Type gradOutputElement = getGradOutput().getType().getElementType();
  if (gradOutputElement != element)
    return emitOpError() << "cannot run on the " << kind
                         << " backward kernel: its grad_output is an mma "
                            "operand, so it must be "
                         << element << " as Q is, not " << gradOutputElement;
  if (!getOffsets().empty())
    return emitOpError() << "cannot run on the " << kind
                         << " backward kernel: it computes whole problems, "
                            "not a tile with offsets";
  if (kernel.getQTile() > 128 || kernel.getKvTile() > 128)
    return emitOpError() << "has kernel " << kernel
                         << ": the backward's tiles are at most 128 rows "
                            "(8 warps)";
  // Each kernel's own tile is whole warpgroups of 64 rows.
  if (warpgroup && (kernel.getQTile() % 64 != 0 ||
                    kernel.getKvTile() % 64 != 0 || kernel.getStages() != 2))
    return emitOpError() << "has kernel " << kernel
                         << ": the wgmma backward's tiles are 64 or 128 rows "
                            "(whole warpgroups), with two stages";
  // A tile's steps walk whole blocks of the lists.
  if (Value blockMask = getBlockMask()) {
    auto type = cast<BlockMaskType>(blockMask.getType());
    if (type.getQBlock() % kernel.getQTile() != 0 ||
        type.getKvBlock() % kernel.getKvTile() != 0)
      return emitOpError() << "has a block mask of " << type.getQBlock()
                           << " x " << type.getKvBlock() << " blocks, which "
                           << kind << " tiles of " << kernel.getQTile() << " x "
                           << kernel.getKvTile() << " do not divide";
  }
  return success();
}

LogicalResult AttentionGradOp::verifyRegions() {
  MLIRContext *ctx = getContext();
  Type index = IndexType::get(ctx), f32 = Float32Type::get(ctx);
  if (hasScoreMod() &&
      (failed(verifyModRegion(getOperation(), getScoreMod(), "score_mod",
                              {f32, index, index, index, index}, f32,
                              "[score, b, h, q, kv]")) ||
       failed(verifyScoreModDifferentiable(getOperation(), getScoreMod()))))
    return failure();
  // A wrt tensor the score_mod does not read (or no score_mod) gets a zero
  // gradient: canonicalization may fold away a read whose value is unused.
  for (auto [i, wrt] : llvm::enumerate(getWrt()))
    if (hasScoreMod() && failed(verifyReadsDifferentiable(
                             getOperation(), getScoreMod(), wrt, i)))
      return failure();
  if (hasMaskMod() &&
      failed(verifyModRegion(getOperation(), getMaskMod(), "mask_mod",
                             {index, index, index, index},
                             IntegerType::get(ctx, 1), "[b, h, q, kv]")))
    return failure();
  return success();
}
