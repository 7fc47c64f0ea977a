//===- AttentionToMma.cpp - f16/bf16 attention on mma.sync tensor cores ---===//
//
// The pass: picks the ops the tensor-core kernel serves, chooses their
// tiles, and builds the gpu.launch (grid, shared memory views) whose body
// MmaKernel builds. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "MmaKernel.h"
#include "WarpgroupMma.h"

#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/Transforms/FlashLoop.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTENTIONTOMMA
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
std::string whyNotServed(AttentionOp op) {
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

struct AttentionToMmaPass : attn::impl::AttentionToMmaBase<AttentionToMmaPass> {
  using AttentionToMmaBase::AttentionToMmaBase;

  void runOnOperation() override {
    // 512 rows: 32 warps, the most a block has.
    if (qTile < 0 || qTile % 16 != 0 || qTile > 512 || kvTile < 0 ||
        kvTile % 16 != 0 || kvTile > 256 || bands < 0 || bands > 2 ||
        (bands > 0 && qTile % (16 * bands) != 0)) {
      getOperation()->emitError()
          << "attn-attention-to-mma: q-tile must be a multiple of 16 up to "
             "512 (of 32 with bands=2), kv-tile a multiple of 16 up to 256 "
             "and bands 1 or 2 (0: chosen), got "
          << qTile.getValue() << ", " << kvTile.getValue() << " and "
          << bands.getValue();
      return signalPassFailure();
    }
    if (warps < 0 || warps > 32 || stages < 0 || stages > 2 ||
        (warps > 0 && qTile > 0 &&
         (qTile % (16 * warps) != 0 || qTile / (16 * warps) > 2))) {
      getOperation()->emitError()
          << "attn-attention-to-mma: warps must be up to 32, with q-tile "
             "given one or two 16-row bands each, and stages 1 or 2 (0: "
             "chosen), got "
          << warps.getValue() << " warps for q-tile " << qTile.getValue()
          << " and " << stages.getValue() << " stages";
      return signalPassFailure();
    }
    if (!warpgroupMma && (strategy == KernelStrategy::Wgmma ||
                          strategy == KernelStrategy::WgmmaWs)) {
      getOperation()->emitError()
          << "attn-attention-to-mma: strategy "
          << stringifyKernelStrategy(strategy)
          << " needs a chip with wgmma (sm_90a; wgmma=true)";
      return signalPassFailure();
    }
    if (strategy == KernelStrategy::Simt)
      return;
    // Ops inside kernels are parts of other kernels.
    SmallVector<AttentionOp> ops;
    WalkResult walk = getOperation()->walk([&](AttentionOp op) {
      if (inGpuKernel(op))
        return WalkResult::advance();
      std::string why = whyNotServed(op);
      if (why.empty()) {
        ops.push_back(op);
        return WalkResult::advance();
      }
      if (strategy == KernelStrategy::Auto)
        return WalkResult::advance();
      op.emitOpError() << "cannot run on strategy "
                       << stringifyKernelStrategy(strategy) << ": " << why;
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops)
      if (failed(lower(rewriter, op)))
        return signalPassFailure();
  }

  LogicalResult lower(RewriterBase &rewriter, AttentionOp op);
};

} // namespace

LogicalResult AttentionToMmaPass::lower(RewriterBase &rewriter,
                                        AttentionOp op) {
  Location loc = op.getLoc();
  auto outType = op.getOutputType();
  Type outElement = outType.getElementType();
  MmaShape shape{op.getHeadDim(), op.getValueHeadDim(),
                 outElement.getIntOrFloatBitWidth() / 8,
                 op.hasMaskMod() || op.hasScoreMod()};
  if (op.hasMaskMod() && !op.hasScoreMod()) {
    int64_t reads = 0;
    op.getMaskMod().walk([&](tensor::ExtractOp) { ++reads; });
    shape.lightMask = reads <= 2;
  }
  BlockMaskLists lists;
  if (op.getBlockMask()) {
    FailureOr<BlockMaskLists> read = BlockMaskLists::of(op);
    if (failed(read))
      return failure();
    lists = *read;
  }
  MmaTiles given{qTile, kvTile, bands, stages};
  bool explicitWgmma =
      strategy == KernelStrategy::Wgmma || strategy == KernelStrategy::WgmmaWs;
  if (explicitWgmma && !servesWarpgroupMma(shape))
    return op.emitOpError()
           << "cannot run on strategy " << stringifyKernelStrategy(strategy)
           << ": wgmma serves head dims of 64, 128 and 256, not D = "
           << shape.headDim << ", Dv = " << shape.valueHeadDim;
  given.warpgroup =
      explicitWgmma || (strategy == KernelStrategy::Auto && warpgroupMma &&
                        servesWarpgroupMma(shape) && bands.getValue() <= 1);
  given.warpSpecialized = given.warpgroup && strategy != KernelStrategy::Wgmma;
  std::optional<MmaTiles> tiles =
      chooseTiles(shape, given, warps, sharedMemoryPerBlock);
  if (!tiles && explicitWgmma)
    return op.emitOpError()
           << "has no " << stringifyKernelStrategy(strategy)
           << " tiles that fit " << sharedMemoryPerBlock.getValue()
           << " bytes of shared memory per block (q-tile " << qTile.getValue()
           << ", a multiple of 64; kv-tile " << kvTile.getValue() << "; bands "
           << bands.getValue() << ", 1; stages " << stages.getValue()
           << ", 2; warps " << warps.getValue() << ")";
  // Under auto, tiles given for mma.sync (bands of 32 rows, 64-row
  // warpgroups cut, one K/V stage) keep it.
  if (!tiles && given.warpgroup) {
    given.warpgroup = false;
    given.warpSpecialized = false;
    tiles = chooseTiles(shape, given, warps, sharedMemoryPerBlock);
  }
  // A block reads one q-block's lists and walks each listed kv-block in
  // whole kv-tiles: chosen tiles are cut to divide the blocks.
  if (tiles && lists.counts &&
      (lists.qBlock % tiles->qTile != 0 ||
       lists.kvBlock % tiles->kvTile != 0)) {
    if (given.qTile == 0)
      given.qTile = std::gcd(tiles->qTile, lists.qBlock);
    if (given.kvTile == 0)
      given.kvTile = std::gcd(tiles->kvTile, lists.kvBlock);
    tiles = chooseTiles(shape, given, warps, sharedMemoryPerBlock);
    // Under auto, blocks of fewer than 64 rows go to mma.sync, whose
    // warps take 16 rows each.
    if (!tiles && given.warpgroup && strategy == KernelStrategy::Auto) {
      given.warpgroup = false;
      given.warpSpecialized = false;
      tiles = chooseTiles(shape, given, warps, sharedMemoryPerBlock);
    }
    if (!tiles)
      return op.emitOpError()
             << "has a block mask of " << lists.qBlock << " x " << lists.kvBlock
             << " blocks, which no "
             << (given.warpgroup ? stringifyKernelStrategy(strategy)
                                 : StringRef("mma.sync"))
             << " tiles divide (q-tile " << given.qTile << ", kv-tile "
             << given.kvTile << ")";
    if (lists.qBlock % tiles->qTile != 0 || lists.kvBlock % tiles->kvTile != 0)
      return op.emitOpError()
             << "has a block mask of " << lists.qBlock << " x " << lists.kvBlock
             << " blocks, which q-tile " << tiles->qTile << " and kv-tile "
             << tiles->kvTile << " do not divide";
  }
  if (!tiles)
    return op.emitOpError()
           << "has no mma.sync tiles that fit "
           << sharedMemoryPerBlock.getValue()
           << " bytes of shared memory per block (D = " << shape.headDim
           << ", Dv = " << shape.valueHeadDim << ", q-tile " << qTile.getValue()
           << ", kv-tile " << kvTile.getValue() << ", bands "
           << bands.getValue() << ", warps " << warps.getValue() << ")";
  SharedLayout layout = sharedLayout(*tiles, shape);

  rewriter.setInsertionPoint(op);
  auto bufferOf = [&](Value tensor, bool readOnly) -> Value {
    auto type = cast<RankedTensorType>(tensor.getType());
    return bufferization::ToBufferOp::create(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
        tensor, readOnly);
  };
  Value query = bufferOf(op.getQuery(), true);
  Value key = bufferOf(op.getKey(), true);
  Value value = bufferOf(op.getValue(), true);
  Value output = bufferOf(op.getOutputs()[0], false);
  Value lse =
      op.getLogsumexpInit() ? bufferOf(op.getLogsumexpInit(), false) : Value();
  // The lists may be views of the workspace: any strided layout.
  auto listBuffer = [&](Value tensor) -> Value {
    if (!tensor)
      return tensor;
    auto type = cast<RankedTensorType>(tensor.getType());
    auto layout = StridedLayoutAttr::get(
        rewriter.getContext(), ShapedType::kDynamic,
        SmallVector<int64_t>(type.getRank(), ShapedType::kDynamic));
    return bufferization::ToBufferOp::create(
        rewriter, loc,
        MemRefType::get(type.getShape(), type.getElementType(), layout), tensor,
        /*readOnly=*/true);
  };
  lists.counts = listBuffer(lists.counts);
  lists.indices = listBuffer(lists.indices);
  lists.fullCounts = listBuffer(lists.fullCounts);
  lists.fullIndices = listBuffer(lists.fullIndices);

  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value rows = memref::DimOp::create(rewriter, loc, query, 2);
  Value qBlocks =
      arith::CeilDivUIOp::create(rewriter, loc, rows, index(tiles->qTile));
  Value heads = memref::DimOp::create(rewriter, loc, query, 1);
  Value batches = memref::DimOp::create(rewriter, loc, query, 0);
  Value sharedSize = arith::ConstantIntOp::create(
      rewriter, loc, rewriter.getI32Type(), layout.total);
  Value one = index(1);
  Value gridX = qBlocks, gridY = heads, gridZ = batches, workspace;
  SmallVector<Value, 3> maps;
  if (tiles->warpSpecialized) {
    // One block per SM takes tiles until none are left.
    Value total = arith::MulIOp::create(
        rewriter, loc, arith::MulIOp::create(rewriter, loc, qBlocks, heads),
        batches);
    gridX = arith::MinUIOp::create(
        rewriter, loc, total,
        MultiprocessorCountOp::create(rewriter, loc, rewriter.getIndexType()));
    gridY = gridZ = one;
    workspace = WorkspaceOp::create(
        rewriter, loc,
        MemRefType::get({ShapedType::kDynamic}, rewriter.getI32Type()),
        index(2));
    // The producer copies a tile's rows with TMA, one box per 64-column
    // swizzled tile.
    auto tensorMap = [&](Value buffer, int64_t rows) {
      return TensorMapOp::create(
          rewriter, loc, LLVM::LLVMPointerType::get(rewriter.getContext()),
          buffer, ArrayRef<int64_t>{1, 1, rows, kSwizzleColumns});
    };
    maps = {tensorMap(query, tiles->qTile), tensorMap(key, tiles->kvTile),
            tensorMap(value, tiles->kvTile)};
  }
  auto launch =
      gpu::LaunchOp::create(rewriter, loc, gridX, gridY, gridZ,
                            index(tiles->threads()), one, one, sharedSize);
  // The choice, for attn-opt readers and lit tests.
  launch->setAttr(
      "attn.mma_tiles",
      rewriter.getDictionaryAttr(
          {rewriter.getNamedAttr("q_tile",
                                 rewriter.getI64IntegerAttr(tiles->qTile)),
           rewriter.getNamedAttr("kv_tile",
                                 rewriter.getI64IntegerAttr(tiles->kvTile)),
           rewriter.getNamedAttr("warps",
                                 rewriter.getI64IntegerAttr(tiles->warps())),
           rewriter.getNamedAttr("bands",
                                 rewriter.getI64IntegerAttr(tiles->bands)),
           rewriter.getNamedAttr("stages",
                                 rewriter.getI64IntegerAttr(tiles->stages)),
           rewriter.getNamedAttr("shared_bytes",
                                 rewriter.getI64IntegerAttr(layout.total))}));
  if (tiles->warpgroup)
    launch->setAttr("attn.wgmma", rewriter.getUnitAttr());
  if (tiles->warpSpecialized)
    launch->setAttr("attn.warp_specialized", rewriter.getUnitAttr());

  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&launch.getBody().front());
    auto workgroup = gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                                gpu::AddressSpace::Workgroup);
    Value shared = gpu::DynamicSharedMemoryOp::create(
        rewriter, loc,
        MemRefType::get({ShapedType::kDynamic}, rewriter.getI8Type(),
                        MemRefLayoutAttrInterface{}, workgroup));
    Type element = op.getQueryType().getElementType();
    // wgmma reads swizzled tiles from a 1024-byte-aligned base.
    Value base = index(0);
    if (tiles->warpgroup) {
      Value address = memref::ExtractAlignedPointerAsIndexOp::create(
          rewriter, loc, rewriter.getIndexType(), shared);
      Value alignment = index(kSwizzleAlignment);
      Value misaligned =
          arith::RemUIOp::create(rewriter, loc, address, alignment);
      base = arith::RemUIOp::create(
          rewriter, loc,
          arith::SubIOp::create(rewriter, loc, alignment, misaligned),
          alignment);
    }
    auto view = [&](int64_t byteOffset, ArrayRef<int64_t> dims, Type type) {
      Value offset =
          arith::AddIOp::create(rewriter, loc, base, index(byteOffset));
      return memref::ViewOp::create(
          rewriter, loc,
          MemRefType::get(dims, type, MemRefLayoutAttrInterface{}, workgroup),
          shared, offset, ValueRange{});
    };
    int64_t pad = 16 / 2;
    int64_t outPad = 16 / shape.outputBytes;
    int64_t stages = tiles->stages;
    // A row of D elements: padded, or split into swizzled 64-column tiles.
    auto tileDims = [&](ArrayRef<int64_t> lead, int64_t rows, int64_t width) {
      SmallVector<int64_t> dims(lead);
      if (tiles->warpgroup)
        dims.append({width / kSwizzleColumns, rows, kSwizzleColumns});
      else
        dims.append({rows, width + pad});
      return dims;
    };
    MmaKernel kernel{rewriter, loc, op, *tiles,
                     RegionInliner(op, boundsChecks ? RegionChecks::DeviceTrap
                                                    : RegionChecks::None)};
    kernel.query = query;
    kernel.key = key;
    kernel.value = value;
    kernel.output = output;
    kernel.lse = lse;
    kernel.lists = lists;
    kernel.queryStage =
        view(0,
             tileDims(tiles->warpSpecialized
                          ? SmallVector<int64_t>{tiles->queryBuffers}
                          : SmallVector<int64_t>{},
                      tiles->qTile, shape.headDim),
             element);
    kernel.outputStage =
        view(0, {tiles->qTile, shape.valueHeadDim + outPad}, outElement);
    kernel.keyStage = view(
        layout.key, tileDims({stages}, tiles->kvTile, shape.headDim), element);
    kernel.valueStage =
        view(layout.value,
             tileDims({stages}, tiles->kvTile, shape.valueHeadDim), element);
    kernel.blockX = launch.getBlockIds().x;
    kernel.gridX = launch.getGridSize().x;
    kernel.head = launch.getBlockIds().y;
    kernel.batch = launch.getBlockIds().z;
    kernel.tid = launch.getThreadIds().x;
    if (tiles->warpSpecialized) {
      kernel.barriers =
          view(layout.barriers, {kBarriers}, rewriter.getI64Type());
      kernel.tileSlots = view(layout.tileSlots, {2}, rewriter.getI32Type());
      kernel.workspace = workspace;
      kernel.queryMap = maps[0];
      kernel.keyMap = maps[1];
      kernel.valueMap = maps[2];
    }
    kernel.build();
    gpu::TerminatorOp::create(rewriter, loc);
  }

  auto asTensor = [&](Value buffer, Type type) -> Value {
    return bufferization::ToTensorOp::create(rewriter, loc, type, buffer,
                                             rewriter.getUnitAttr(),
                                             rewriter.getUnitAttr());
  };
  SmallVector<Value> results = {asTensor(output, outType)};
  if (lse)
    results.push_back(asTensor(lse, op.getLogsumexpInit().getType()));
  Value blockMask = op.getBlockMask();
  rewriter.replaceOp(op, results);
  // The kernel reads the lists; the block mask value is dead.
  if (Operation *make = blockMask ? blockMask.getDefiningOp() : nullptr)
    if (make->use_empty())
      rewriter.eraseOp(make);
  return success();
}
