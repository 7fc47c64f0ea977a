//===- AttentionGradToMma.cpp - attention_grad on mma.sync tensor cores ---===//
//
// The pass: builds, for each attn.attention_grad with an mma_sync kernel,
// the dQ and dK/dV gpu.launches (grids, shared memory views, the Delta
// buffer) whose bodies BackwardKernel builds. See the pass description in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernel.h"

#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/Transforms/FlashLoop.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTENTIONGRADTOMMA
#include "AttnDialect/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

namespace {

struct AttentionGradToMmaPass
    : attn::impl::AttentionGradToMmaBase<AttentionGradToMmaPass> {
  using AttentionGradToMmaBase::AttentionGradToMmaBase;

  void runOnOperation() override {
    SmallVector<AttentionGradOp> ops;
    getOperation()->walk([&](AttentionGradOp op) {
      if (op.getKernelAttr() && !inGpuKernel(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (AttentionGradOp op : ops)
      lower(rewriter, op);
  }

  void lower(RewriterBase &rewriter, AttentionGradOp op);
};

} // namespace

void AttentionGradToMmaPass::lower(RewriterBase &rewriter, AttentionGradOp op) {
  Location loc = op.getLoc();
  KernelAttr kernel = op.getKernelAttr();
  int64_t qTile = kernel.getQTile(), kvTile = kernel.getKvTile();
  int64_t stages = kernel.getStages();
  int64_t d = op.getHeadDim(), dv = op.getValueHeadDim();
  rewriter.setInsertionPoint(op);
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  auto bufferOf = [&](Value tensor, bool readOnly) -> Value {
    auto type = cast<RankedTensorType>(tensor.getType());
    return bufferization::ToBufferOp::create(
        rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
        tensor, readOnly);
  };
  Value query = bufferOf(op.getQuery(), true);
  Value key = bufferOf(op.getKey(), true);
  Value value = bufferOf(op.getValue(), true);
  Value output = bufferOf(op.getOutput(), true);
  Value gradOutput = bufferOf(op.getGradOutput(), true);
  Value lse = bufferOf(op.getLogsumexp(), true);
  SmallVector<Value> grads;
  for (Value init : op.getOutputs())
    grads.push_back(bufferOf(init, false));

  auto dim = [&](Value buffer, int64_t i) -> Value {
    return memref::DimOp::create(rewriter, loc, buffer, i);
  };
  Value batches = dim(query, 0), heads = dim(query, 1), rows = dim(query, 2);
  Value kvHeads = dim(key, 1), keys = dim(key, 2);
  // Delta, one f32 per query row, passed from the dQ kernel to the other.
  Value words = arith::MulIOp::create(
      rewriter, loc, arith::MulIOp::create(rewriter, loc, batches, heads),
      rows);
  auto deltaOp = WorkspaceOp::create(
      rewriter, loc,
      MemRefType::get({ShapedType::kDynamic}, rewriter.getI32Type()), words);
  deltaOp.setScratch(true);

  RegionInliner regions(op, boundsChecks ? RegionChecks::DeviceTrap
                                         : RegionChecks::None);
  BackwardKernel base{rewriter, loc, op, regions};
  base.query = query;
  base.key = key;
  base.value = value;
  base.output = output;
  base.gradOutput = gradOutput;
  base.lse = lse;
  base.delta = deltaOp;
  base.dq = grads[0];
  base.dk = grads[1];
  base.dv = grads[2];
  Type element = op.getQuery().getType().getElementType();
  auto workgroup = gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                              gpu::AddressSpace::Workgroup);

  // One launch: `own` rows per block (own / 16 warps), `streamed` rows
  // per step, the grid's x extent `blocks` over (heads, batches).
  auto launch = [&](int64_t own, int64_t streamed, Value blocks,
                    Value launchHeads, bool queryGrad) {
    GradSharedLayout layout =
        GradSharedLayout::of(own, streamed, stages, d, dv, queryGrad);
    Value sharedSize = arith::ConstantIntOp::create(
        rewriter, loc, rewriter.getI32Type(), layout.total);
    Value one = index(1);
    auto launchOp =
        gpu::LaunchOp::create(rewriter, loc, blocks, launchHeads, batches,
                              index(2 * own), one, one, sharedSize);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&launchOp.getBody().front());
    Value shared = gpu::DynamicSharedMemoryOp::create(
        rewriter, loc,
        MemRefType::get({ShapedType::kDynamic}, rewriter.getI8Type(),
                        MemRefLayoutAttrInterface{}, workgroup));
    auto view = [&](int64_t byteOffset, ArrayRef<int64_t> dims, Type type) {
      return memref::ViewOp::create(
          rewriter, loc,
          MemRefType::get(dims, type, MemRefLayoutAttrInterface{}, workgroup),
          shared, index(byteOffset), ValueRange{});
    };
    int64_t pad = 8;
    BackwardKernel kernel = base;
    // The first of each pair is d wide (Q or K), the second dv (dO or V).
    kernel.ownFirst = view(0, {own, d + pad}, element);
    kernel.ownSecond = view(layout.ownSecond, {own, dv + pad}, element);
    kernel.streamedFirst =
        view(layout.streamedFirst, {stages, streamed, d + pad}, element);
    kernel.streamedSecond =
        view(layout.streamedSecond, {stages, streamed, dv + pad}, element);
    if (queryGrad)
      kernel.deltaStage = view(layout.delta, {own}, rewriter.getF32Type());
    kernel.block = launchOp.getBlockIds().x;
    kernel.head = launchOp.getBlockIds().y;
    kernel.batch = launchOp.getBlockIds().z;
    kernel.tid = launchOp.getThreadIds().x;
    if (queryGrad)
      kernel.buildQueryGrad();
    else
      kernel.buildKeyValueGrad();
    gpu::TerminatorOp::create(rewriter, loc);
  };
  launch(qTile, kvTile,
         arith::CeilDivUIOp::create(rewriter, loc, rows, index(qTile)), heads,
         /*queryGrad=*/true);
  launch(kvTile, qTile,
         arith::CeilDivUIOp::create(rewriter, loc, keys, index(kvTile)),
         kvHeads, /*queryGrad=*/false);

  SmallVector<Value> results;
  for (auto [buffer, init] : llvm::zip(grads, op.getOutputs()))
    results.push_back(bufferization::ToTensorOp::create(
        rewriter, loc, init.getType(), buffer, rewriter.getUnitAttr(),
        rewriter.getUnitAttr()));
  rewriter.replaceOp(op, results);
}
