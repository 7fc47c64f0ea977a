//===- SoftmaxToGpu.cpp - attn.softmax as a GPU kernel --------------------===//
//
// A memory-bound kernel reaches copy speed only if it reads every element
// once and keeps enough bytes in flight on every SM. So a block copies a
// tile of its row into shared memory with cp.async, reduces it from there
// and writes it from there. A row that fits one tile is one block; a
// longer row is split across up to one block per SM, which exchange their
// (max, sum) through a workspace in global memory and each write the tile
// they still hold. Rows longer than that give each block a slice of
// several tiles, swept twice from global memory.
//
// This file is the pass: it checks the options, plans the launch
// (SoftmaxLaunchPlan.h) and builds the gpu.launch whose body SoftmaxKernel
// builds. docs/Softmax.md describes the design, including the start-order
// assumption that a split row's blocks rely on.
//
//===----------------------------------------------------------------------===//

#include "SoftmaxKernel.h"

#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/Conversion/SoftmaxLaunchPlan.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SOFTMAXTOGPU
#include "AttnDialect/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::softmax;

namespace {

struct SoftmaxToGpuPass : attn::impl::SoftmaxToGpuBase<SoftmaxToGpuPass> {
  using SoftmaxToGpuBase::SoftmaxToGpuBase;

  LaunchOptions launchOptions() const {
    LaunchOptions options;
    options.threads = threads;
    options.splitThreads = splitThreads;
    options.elementsPerThread = elementsPerThread;
    options.splitVectors = splitVectors;
    options.sharedMemoryPerSm = sharedMemoryPerSm;
    options.firstWaveStagger = firstWaveStagger;
    return options;
  }

  void runOnOperation() override {
    LaunchOptions options = launchOptions();
    if (std::optional<std::string> error = checkOptions(options)) {
      getOperation()->emitError() << "attn-softmax-to-gpu: " << *error;
      return signalPassFailure();
    }
    SmallVector<SoftmaxOp> ops;
    getOperation()->walk([&](SoftmaxOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (SoftmaxOp op : ops)
      if (failed(lower(rewriter, op, options)))
        return signalPassFailure();
  }

  LogicalResult lower(RewriterBase &rewriter, SoftmaxOp op,
                      const LaunchOptions &options);
};

} // namespace

LogicalResult SoftmaxToGpuPass::lower(RewriterBase &rewriter, SoftmaxOp op,
                                      const LaunchOptions &options) {
  Location loc = op.getLoc();
  auto inType = cast<RankedTensorType>(op.getInput().getType());
  auto outType = cast<RankedTensorType>(op.getOutput().getType());
  if (inType.getRank() != 2)
    return op.emitOpError()
           << "lowers to the GPU for rank 2 ([rows, N]) only, got rank "
           << inType.getRank() << "; collapse the outer dims first";
  if (!asyncCopy)
    return op.emitOpError()
           << "lowers to the GPU with cp.async, which the target does not "
              "have (sm_80 or newer)";
  int64_t elementBytes = inType.getElementTypeBitWidth() / 8;
  std::optional<KernelShape> shape = getKernelShape(options, elementBytes);
  if (!shape) {
    int64_t width = kVectorBytes / elementBytes;
    return op.emitOpError()
           << "cannot copy " << options.elementsPerThread
           << " elements per thread in 16-byte vectors of " << width
           << " (elements-per-thread must be a multiple of " << width << ")";
  }

  rewriter.setInsertionPoint(op);
  IndexBuilder h{rewriter, loc};
  auto bufferOf = [&](Value tensor, RankedTensorType type, bool readOnly) {
    return bufferization::ToBufferOp::create(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
        tensor, readOnly);
  };
  Value in = bufferOf(op.getInput(), inType, true);
  Value out = bufferOf(op.getOutput(), outType, false);
  Value rows = memref::DimOp::create(rewriter, loc, in, 0);
  Value n = memref::DimOp::create(rewriter, loc, in, 1);
  LaunchPlan<Value> plan = planLaunch(h, options, *shape, rows, n);
  Value workspace = WorkspaceOp::create(
      rewriter, loc,
      MemRefType::get({ShapedType::kDynamic}, rewriter.getI32Type()),
      plan.workspaceWords);
  Value stageBytes = arith::IndexCastOp::create(
      rewriter, loc, rewriter.getI32Type(), tileBytes(h, *shape, plan));

  auto workgroup = gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                              gpu::AddressSpace::Workgroup);
  Value one = h.c(1);
  auto launch = gpu::LaunchOp::create(rewriter, loc, plan.blocks, one, one,
                                      plan.blockThreads, one, one, stageBytes);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&launch.getBody().front());
  // Flat [rows * N] views (in the kernel: the bundle passes the arguments'
  // buffers as they are).
  auto flat = [&](Value buffer) {
    return memref::CollapseShapeOp::create(
        rewriter, loc, buffer, ArrayRef<ReassociationIndices>{{0, 1}});
  };
  SoftmaxKernel kernel{{rewriter, loc}};
  kernel.in = flat(in);
  kernel.out = flat(out);
  kernel.workspace = workspace;
  Value shared = gpu::DynamicSharedMemoryOp::create(
      rewriter, loc,
      MemRefType::get({ShapedType::kDynamic}, rewriter.getI8Type(),
                      MemRefLayoutAttrInterface{}, workgroup));
  kernel.stage = memref::ViewOp::create(
      rewriter, loc,
      MemRefType::get({ShapedType::kDynamic}, inType.getElementType(),
                      MemRefLayoutAttrInterface{}, workgroup),
      shared, h.c(0),
      ValueRange{
          h.mul(h.mul(launch.getBlockSizeX(), plan.used), h.c(shape->width))});
  // 256 bytes: the dynamic tile after it stays on a 128-byte line.
  kernel.scratch = launch.addWorkgroupAttribution(
      MemRefType::get({64}, rewriter.getF32Type(), MemRefLayoutAttrInterface{},
                      workgroup),
      loc);
  kernel.rows = rows;
  kernel.n = n;
  kernel.tid = launch.getThreadIds().x;
  kernel.threads = launch.getBlockSizeX();
  kernel.splits = plan.splits;
  kernel.sliceTiles = plan.sliceTiles;
  kernel.naps = shape->naps;
  kernel.napNs = shape->napNs;
  kernel.firstWave = plan.firstWave.value_or(Value());
  kernel.width = shape->width;
  kernel.used = plan.used;
  kernel.build(launch.getBlockIds().x, plan.split, shape->vectors,
               shape->splitVectors);
  gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPointAfter(launch);
  Value result = bufferization::ToTensorOp::create(rewriter, loc, outType, out,
                                                   rewriter.getUnitAttr(),
                                                   rewriter.getUnitAttr());
  rewriter.replaceOp(op, result);
  return success();
}
