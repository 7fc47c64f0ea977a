//===- AttentionToMma.cpp - f16/bf16 attention on mma.sync tensor cores ---===//
//
// The pass: builds, for each op whose kernel is a tensor-core one, the
// gpu.launch (grid, shared memory views) whose body MmaKernel builds. See
// the pass description in Passes.td.
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

namespace mlir::attn {
#define GEN_PASS_DEF_ATTENTIONTOMMA
#include "AttnDialect/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

namespace {

struct AttentionToMmaPass : attn::impl::AttentionToMmaBase<AttentionToMmaPass> {
  using AttentionToMmaBase::AttentionToMmaBase;

  void runOnOperation() override {
    // Ops inside kernels are parts of other kernels.
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) {
      KernelAttr kernel = op.getKernelAttr();
      if (kernel && kernel.isTensorCore() && !inGpuKernel(op))
        ops.push_back(op);
    });
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
  MmaShape shape = MmaShape::of(op);
  BlockMaskLists lists;
  if (op.getBlockMask()) {
    FailureOr<BlockMaskLists> read = BlockMaskLists::of(op);
    if (failed(read))
      return failure();
    lists = *read;
  }
  MmaTiles tiles = MmaTiles::of(op.getKernelAttr());
  SharedLayout layout = sharedLayout(tiles, shape);

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
      arith::CeilDivUIOp::create(rewriter, loc, rows, index(tiles.qTile));
  Value heads = memref::DimOp::create(rewriter, loc, query, 1);
  Value batches = memref::DimOp::create(rewriter, loc, query, 0);
  Value sharedSize = arith::ConstantIntOp::create(
      rewriter, loc, rewriter.getI32Type(), layout.total);
  Value one = index(1);
  Value gridX = qBlocks, gridY = heads, gridZ = batches, workspace;
  SmallVector<Value, 3> maps;
  if (tiles.warpSpecialized) {
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
    // The producer copies a tile's rows with TMA, one box per swizzled
    // tile.
    auto tensorMap = [&](Value buffer, int64_t rows, int64_t width) {
      return TensorMapOp::create(
          rewriter, loc, LLVM::LLVMPointerType::get(rewriter.getContext()),
          buffer,
          ArrayRef<int64_t>{1, 1, rows, Swizzle::forWidth(width).columns()});
    };
    maps = {tensorMap(query, tiles.qTile, shape.headDim),
            tensorMap(key, tiles.kvTile, shape.headDim),
            tensorMap(value, tiles.kvTile, shape.valueHeadDim)};
  }
  auto launch =
      gpu::LaunchOp::create(rewriter, loc, gridX, gridY, gridZ,
                            index(tiles.threads()), one, one, sharedSize);
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
    Value base =
        tiles.swizzled() ? swizzleAlignedBase(rewriter, loc, shared) : index(0);
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
    int64_t stages = tiles.stages;
    // A row of D elements: padded, or split into swizzled tiles.
    auto tileDims = [&](ArrayRef<int64_t> lead, int64_t rows, int64_t width) {
      SmallVector<int64_t> dims(lead);
      int64_t columns = Swizzle::forWidth(width).columns();
      if (tiles.swizzled())
        dims.append({width / columns, rows, columns});
      else
        dims.append({rows, width + pad});
      return dims;
    };
    MmaKernel kernel{rewriter, loc, op, tiles,
                     RegionInliner(op,
                                   boundsChecks ? RegionChecks::DeviceTrap
                                                : RegionChecks::None,
                                   /*approximateMath=*/true)};
    kernel.query = query;
    kernel.key = key;
    kernel.value = value;
    kernel.output = output;
    kernel.lse = lse;
    kernel.lists = lists;
    kernel.queryStage =
        view(0,
             tileDims(tiles.warpSpecialized
                          ? SmallVector<int64_t>{tiles.queryBuffers}
                          : SmallVector<int64_t>{},
                      tiles.qTile, shape.headDim),
             element);
    kernel.outputStage =
        view(0, {tiles.qTile, shape.valueHeadDim + outPad}, outElement);
    kernel.keyStage = view(
        layout.key, tileDims({stages}, tiles.kvTile, shape.headDim), element);
    kernel.valueStage =
        view(layout.value, tileDims({stages}, tiles.kvTile, shape.valueHeadDim),
             element);
    kernel.blockX = launch.getBlockIds().x;
    kernel.gridX = launch.getGridSize().x;
    kernel.head = launch.getBlockIds().y;
    kernel.batch = launch.getBlockIds().z;
    kernel.tid = launch.getThreadIds().x;
    if (tiles.warpSpecialized) {
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
