//===- ChooseKernel.cpp - the GPU kernel of each attention op -------------===//
//
// The one place the GPU pipeline decides which kernel computes an
// attn.attention and with which tiles; see the pass description in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Conversion/KernelTiles.h"
#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/Target/NVVM/TargetInfo.h"
#include "AttnDialect/Transforms/FlashLoop.h"

#include <algorithm>
#include <numeric>

namespace mlir::attn {
#define GEN_PASS_DEF_CHOOSEKERNEL
#include "AttnDialect/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

namespace {

/// Why the tensor-core kernels cannot compute `op`, or "" if they can:
/// 16-bit inputs and head dims they can split into k16 steps, and, with a
/// block mask, not a tile of a larger op (its lists are the whole
/// problem's).
std::string whyNotTensorCores(AttentionOp op) {
  Type element = op.getQueryType().getElementType();
  if (!element.isF16() && !element.isBF16())
    return "it needs f16 or bf16 inputs (f32 would need tf32, which misses "
           "the f32 tolerance)";
  if (op.getHeadDim() % 16 != 0 || op.getValueHeadDim() % 16 != 0)
    return "its head dims (" + std::to_string(op.getHeadDim()) + ", " +
           std::to_string(op.getValueHeadDim()) + ") are not multiples of 16";
  if (op.getBlockMask() && !op.getOffsets().empty())
    return "it is a tile of a larger op with a block mask";
  return "";
}

struct ChooseKernelPass : attn::impl::ChooseKernelBase<ChooseKernelPass> {
  using ChooseKernelBase::ChooseKernelBase;

  void runOnOperation() override {
    target = nvvm::lookupTarget(chip);
    if (chip.empty()) {
      getOperation()->emitError()
          << "attn-choose-kernel: missing chip: pass chip=sm_80 or chip=sm_90a";
      return signalPassFailure();
    }
    if (!target) {
      getOperation()->emitError()
          << "attn-choose-kernel: unsupported chip '" << chip
          << "': the kernels need one of " << nvvm::knownTargetNames();
      return signalPassFailure();
    }
    if (failed(checkOptions()))
      return signalPassFailure();
    WalkResult backward = getOperation()->walk([&](AttentionGradOp op) {
      if (inGpuKernel(op))
        return WalkResult::advance();
      return failed(chooseGrad(op)) ? WalkResult::interrupt()
                                    : WalkResult::advance();
    });
    if (backward.wasInterrupted())
      return signalPassFailure();
    // Ops inside kernels are parts of other kernels.
    WalkResult walk = getOperation()->walk([&](AttentionOp op) {
      if (inGpuKernel(op))
        return WalkResult::advance();
      LogicalResult done =
          op.getKernelAttr() ? checkOnChip(op, op.getKernelAttr()) : choose(op);
      return failed(done) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
  }

  LogicalResult checkOptions();
  /// Sets (or checks) the backward's kernel: wgmma on sm_90a, mma.sync
  /// elsewhere or when the strategy asks for it.
  LogicalResult chooseGrad(AttentionGradOp op);
  /// Sets `op`'s kernel from the strategy and the chip.
  LogicalResult choose(AttentionOp op);
  /// The tensor-core tiles for `op` under the strategy, which `choose`
  /// has found the tensor cores serve.
  FailureOr<MmaTiles> chooseTensorCoreTiles(AttentionOp op);
  /// Whether the chip runs `kernel`, with a diagnostic on `op` if not.
  LogicalResult checkOnChip(AttentionOp op, KernelAttr kernel);

  const nvvm::TargetInfo *target = nullptr;
};

} // namespace

LogicalResult ChooseKernelPass::checkOptions() {
  Operation *root = getOperation();
  // 512 rows: 32 warps, the most a block has.
  if (qTile < 0 || qTile > 512 || kvTile < 0 || kvTile > 256 || bands < 0 ||
      bands > 2 || (bands > 0 && qTile % (16 * bands) != 0))
    return root->emitError()
           << "attn-choose-kernel: q-tile must be up to 512 (a multiple of "
              "32 with bands=2), kv-tile up to 256 and bands 1 or 2 (0: "
              "chosen), got "
           << qTile.getValue() << ", " << kvTile.getValue() << " and "
           << bands.getValue();
  if (warps < 0 || warps > 32 || stages < 0 || stages > 2 ||
      (warps > 0 && qTile > 0 &&
       (qTile % (16 * warps) != 0 || qTile / (16 * warps) > 2)))
    return root->emitError()
           << "attn-choose-kernel: warps must be up to 32, with q-tile "
              "given one or two 16-row bands each, and stages 1 or 2 (0: "
              "chosen), got "
           << warps.getValue() << " warps for q-tile " << qTile.getValue()
           << " and " << stages.getValue() << " stages";
  bool tensorCores = strategy != KernelStrategy::Simt;
  if (tensorCores && target->hasAsyncCopy() &&
      (qTile % 16 != 0 || kvTile % 16 != 0))
    return root->emitError()
           << "attn-choose-kernel: the tensor-core kernels need q-tile and "
              "kv-tile to be multiples of 16 (strategy=simt takes others), "
              "got "
           << qTile.getValue() << " and " << kvTile.getValue();
  if (tensorCores && strategy != KernelStrategy::Auto &&
      !target->hasAsyncCopy())
    return root->emitError() << "attn-choose-kernel: strategy "
                             << stringifyKernelStrategy(strategy)
                             << " needs sm_80 or newer, not " << chip;
  if ((strategy == KernelStrategy::Wgmma ||
       strategy == KernelStrategy::WgmmaWs) &&
      !target->hasWarpgroupMma())
    return root->emitError()
           << "attn-choose-kernel: strategy "
           << stringifyKernelStrategy(strategy)
           << " needs wgmma, which only sm_90a has, not " << chip;
  return success();
}

LogicalResult ChooseKernelPass::chooseGrad(AttentionGradOp op) {
  if (!target->hasAsyncCopy())
    return op.emitOpError() << "has no GPU kernel on " << chip
                            << ": the backward needs sm_80 or newer "
                               "(attn-lower-to-cpu computes it)";
  KernelAttr kernel = op.getKernelAttr();
  if (!kernel) {
    // 64 x 64 tiles: a warp's dK and dV (or dQ), its scores and dP fit the
    // registers up to head dims of 128 (wider ones in column slices).
    // wgmma where the chip has it and its swizzled tiles serve the head
    // dims (unless mma_sync is asked for); mma.sync with two stages where
    // they fit, else one, else 32 x 32 tiles (head dims over 128 on chips
    // of 99 KB a block).
    bool warpgroup = target->hasWarpgroupMma() &&
                     strategy != KernelStrategy::MmaSync &&
                     op.hasWarpgroupGradHeadDims();
    kernel = KernelAttr::get(
        op.getContext(), warpgroup ? KernelKind::wgmma : KernelKind::mma_sync,
        64, 64);
    auto fits = [&] {
      return GradSharedLayout::bytesOf(kernel, op.getHeadDim(),
                                       op.getValueHeadDim()) <=
             target->sharedMemoryPerBlock;
    };
    if (!warpgroup) {
      for (auto [tile, stages] :
           {std::pair<int64_t, int64_t>{64, 1}, {32, 2}, {32, 1}}) {
        if (fits())
          break;
        kernel = KernelAttr::get(op.getContext(), KernelKind::mma_sync, tile,
                                 tile, 1, stages, 1, 0, 0);
      }
    }
    // The op's verifier says why the kernel cannot compute it.
    if (failed(op.verifyKernel(kernel)))
      return failure();
    op.setKernelAttr(kernel);
  }
  if (kernel.isWarpgroupMma() && !target->hasWarpgroupMma())
    return op.emitOpError()
           << "has kernel " << kernel
           << ", which needs wgmma: only sm_90a has it, not " << chip;
  int64_t bytes =
      GradSharedLayout::bytesOf(kernel, op.getHeadDim(), op.getValueHeadDim());
  if (bytes > target->sharedMemoryPerBlock)
    return op.emitOpError()
           << "has a backward kernel whose tiles take " << bytes
           << " bytes of shared memory, more than " << chip << "'s "
           << target->sharedMemoryPerBlock << " per block";
  return success();
}

LogicalResult ChooseKernelPass::choose(AttentionOp op) {
  bool tensorCores = strategy != KernelStrategy::Simt && target->hasAsyncCopy();
  std::string why = whyNotTensorCores(op);
  if (tensorCores && !why.empty()) {
    if (strategy != KernelStrategy::Auto)
      return op.emitOpError()
             << "cannot run on strategy " << stringifyKernelStrategy(strategy)
             << ": " << why;
    tensorCores = false;
  }
  if (tensorCores) {
    FailureOr<MmaTiles> tiles = chooseTensorCoreTiles(op);
    if (failed(tiles))
      return failure();
    op.setKernelAttr(tiles->toAttr(op.getContext()));
    return success();
  }
  // When nothing fits, the given tiles (or 16) are recorded and
  // attn-map-forall-to-gpu reports the bytes they need.
  auto [simtQTile, simtKvTile] =
      chooseSimtTiles(op, qTile, kvTile, target->sharedMemoryPerBlock)
          .value_or(std::make_pair(qTile > 0 ? qTile.getValue() : 16,
                                   kvTile > 0 ? kvTile.getValue() : 16));
  // A SIMT tile reads the kv-block lists of one q-block: q-tiles divide it.
  if (Value blockMask = op.getBlockMask())
    simtQTile = std::gcd(
        simtQTile, static_cast<int64_t>(
                       cast<BlockMaskType>(blockMask.getType()).getQBlock()));
  op.setKernelAttr(KernelAttr::get(op.getContext(), KernelKind::simt, simtQTile,
                                   simtKvTile));
  return success();
}

FailureOr<MmaTiles> ChooseKernelPass::chooseTensorCoreTiles(AttentionOp op) {
  MmaShape shape = MmaShape::of(op);
  int64_t sharedMemory = target->sharedMemoryPerBlock;
  StringRef name = stringifyKernelStrategy(strategy);
  bool explicitWgmma =
      strategy == KernelStrategy::Wgmma || strategy == KernelStrategy::WgmmaWs;
  if (explicitWgmma && !servesWarpgroupMma(shape))
    return op.emitOpError()
           << "cannot run on strategy " << name
           << ": wgmma serves head dims of 16, 32, 64, 128 and 256, not D = "
           << shape.headDim << ", Dv = " << shape.valueHeadDim;
  MmaTiles given{qTile, kvTile, bands, stages};
  // Under auto, D = 16 without causal stays on mma.sync, which measured up
  // to 15% faster there at N <= 4k (and equal beyond); causal, and every
  // other head dim wgmma serves, is faster on wgmma.
  bool narrowFull =
      std::min(shape.headDim, shape.valueHeadDim) == 16 && !op.getCausal();
  given.warpgroup =
      explicitWgmma ||
      (strategy == KernelStrategy::Auto && target->hasWarpgroupMma() &&
       servesWarpgroupMma(shape) && !narrowFull && bands <= 1);
  given.warpSpecialized = given.warpgroup && strategy != KernelStrategy::Wgmma;
  std::optional<MmaTiles> tiles =
      chooseTiles(shape, given, warps, sharedMemory);
  if (!tiles && explicitWgmma)
    return op.emitOpError()
           << "has no " << name << " tiles that fit " << sharedMemory
           << " bytes of shared memory per block (q-tile " << qTile.getValue()
           << ", a multiple of 64; kv-tile " << kvTile.getValue() << "; bands "
           << bands.getValue() << ", 1; stages " << stages.getValue()
           << ", 2; warps " << warps.getValue() << ")";
  // Under auto, tiles given for mma.sync (bands of 32 rows, 64-row
  // warpgroups cut, one K/V stage) keep it.
  if (!tiles && given.warpgroup) {
    given.warpgroup = false;
    given.warpSpecialized = false;
    tiles = chooseTiles(shape, given, warps, sharedMemory);
  }
  // A block reads one q-block's lists and walks each listed kv-block in
  // whole kv-tiles: chosen tiles are cut to divide the blocks.
  auto blockMask = op.getBlockMask()
                       ? cast<BlockMaskType>(op.getBlockMask().getType())
                       : BlockMaskType();
  if (tiles && blockMask &&
      (blockMask.getQBlock() % tiles->qTile != 0 ||
       blockMask.getKvBlock() % tiles->kvTile != 0)) {
    int64_t qBlock = blockMask.getQBlock(), kvBlock = blockMask.getKvBlock();
    if (given.qTile == 0)
      given.qTile = std::gcd(tiles->qTile, qBlock);
    if (given.kvTile == 0)
      given.kvTile = std::gcd(tiles->kvTile, kvBlock);
    tiles = chooseTiles(shape, given, warps, sharedMemory);
    // Under auto, blocks of fewer than 64 rows go to mma.sync, whose
    // warps take 16 rows each.
    if (!tiles && given.warpgroup && strategy == KernelStrategy::Auto) {
      given.warpgroup = false;
      given.warpSpecialized = false;
      tiles = chooseTiles(shape, given, warps, sharedMemory);
    }
    if (!tiles)
      return op.emitOpError()
             << "has a block mask of " << qBlock << " x " << kvBlock
             << " blocks, which no "
             << (given.warpgroup ? name : StringRef("mma.sync"))
             << " tiles divide (q-tile " << given.qTile << ", kv-tile "
             << given.kvTile << ")";
    if (qBlock % tiles->qTile != 0 || kvBlock % tiles->kvTile != 0)
      return op.emitOpError()
             << "has a block mask of " << qBlock << " x " << kvBlock
             << " blocks, which q-tile " << tiles->qTile << " and kv-tile "
             << tiles->kvTile << " do not divide";
  }
  if (!tiles)
    return op.emitOpError()
           << "has no mma.sync tiles that fit " << sharedMemory
           << " bytes of shared memory per block (D = " << shape.headDim
           << ", Dv = " << shape.valueHeadDim << ", q-tile " << qTile.getValue()
           << ", kv-tile " << kvTile.getValue() << ", bands "
           << bands.getValue() << ", warps " << warps.getValue() << ")";
  return *tiles;
}

LogicalResult ChooseKernelPass::checkOnChip(AttentionOp op, KernelAttr kernel) {
  StringRef kind = stringifyKernelKind(kernel.getKind());
  if (kernel.isTensorCore() && !target->hasAsyncCopy())
    return op.emitOpError()
           << "has a " << kind << " kernel, which needs sm_80 or newer, not "
           << chip;
  if (kernel.isWarpgroupMma() && !target->hasWarpgroupMma())
    return op.emitOpError() << "has a " << kind
                            << " kernel, which needs wgmma: only sm_90a has "
                               "it, not "
                            << chip;
  if (!kernel.isTensorCore())
    return success();
  int64_t bytes = sharedLayout(MmaTiles::of(kernel), MmaShape::of(op)).total;
  if (bytes > target->sharedMemoryPerBlock)
    return op.emitOpError()
           << "has a " << kind << " kernel whose tiles take " << bytes
           << " bytes of shared memory, more than " << chip << "'s "
           << target->sharedMemoryPerBlock << " per block";
  return success();
}
