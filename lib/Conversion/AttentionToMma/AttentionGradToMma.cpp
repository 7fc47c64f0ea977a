//===- AttentionGradToMma.cpp - attention_grad on tensor cores ------------===//
//
// The pass: builds, for each attn.attention_grad with a tensor-core kernel,
// the dQ and dK/dV gpu.launches (grids, shared memory views, the Delta
// buffer) whose bodies BackwardKernel builds. See the pass description in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernel.h"
#include "WarpgroupMma.h"

#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/Target/NVVM/Passes.h"
#include "AttnDialect/Transforms/DeriveBlockMasks.h"
#include "AttnDialect/Transforms/FlashLoop.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

namespace mlir::attn {
#define GEN_PASS_DEF_ATTENTIONGRADTOMMA
#include "AttnDialect/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

namespace {

/// Threads of a block of the launch that zeroes Delta again.
constexpr int64_t kZeroThreads = 256;

struct AttentionGradToMmaPass
    : attn::impl::AttentionGradToMmaBase<AttentionGradToMmaPass> {
  using AttentionGradToMmaBase::AttentionGradToMmaBase;

  void runOnOperation() override {
    SmallVector<AttentionGradOp> ops;
    getOperation()->walk([&](AttentionGradOp op) {
      if (op.getKernelAttr() && !inGpuKernel(op))
        ops.push_back(op);
    });
    for (AttentionGradOp op : ops)
      if (failed(checkBlockMask(op)))
        return signalPassFailure();
    IRRewriter rewriter(&getContext());
    for (AttentionGradOp op : ops)
      lower(rewriter, op);
  }

  /// The kernels read all eight lists of a given block mask: the dQ
  /// kernel the kv side, the dK/dV kernel the q side.
  LogicalResult checkBlockMask(AttentionGradOp op) {
    Value blockMask = op.getBlockMask();
    if (!blockMask || blockMask.getDefiningOp<CreateBlockMaskOp>())
      return success();
    auto make = blockMask.getDefiningOp<MakeBlockMaskOp>();
    if (!make)
      return op.emitOpError()
             << "has a block mask that is neither an attn.create_block_mask "
                "nor an attn.make_block_mask in its function";
    for (int64_t i = 0; i < 8; ++i) {
      auto field = static_cast<BlockMaskField>(i);
      if (!make.getList(field))
        return op.emitOpError()
               << "has a block mask made without "
               << stringifyBlockMaskField(field)
               << ": the backward's kernels walk both sides' partial and "
                  "full lists";
    }
    return success();
  }

  void lower(RewriterBase &rewriter, AttentionGradOp op);
};

} // namespace

/// A launch of kZeroThreads threads a block, one per element of `count`,
/// whose in-range threads run `body` on their element.
static void buildPerElementLaunch(RewriterBase &rewriter, Location loc,
                                  Value count,
                                  function_ref<void(Value element)> body) {
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value one = index(1);
  Value blocks =
      arith::CeilDivUIOp::create(rewriter, loc, count, index(kZeroThreads));
  auto launch = gpu::LaunchOp::create(rewriter, loc, blocks, one, one,
                                      index(kZeroThreads), one, one);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&launch.getBody().front());
  Value element = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, launch.getBlockIds().x,
                            index(kZeroThreads)),
      launch.getThreadIds().x);
  auto inside = scf::IfOp::create(
      rewriter, loc,
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, element,
                            count));
  rewriter.setInsertionPointToStart(inside.thenBlock());
  body(element);
  rewriter.setInsertionPointToEnd(&launch.getBody().front());
  gpu::TerminatorOp::create(rewriter, loc);
}

/// A launch that turns each of `elements` exact sums, kCaptureWords i64
/// words from i32 word `first` of `workspace` (GradCaptures.cpp), into an
/// f32 of `grad` (row-major), and zeroes the words again.
static void finishCaptureGrad(RewriterBase &rewriter, Location loc,
                              Value workspace, Value first, Value elements,
                              Value grad) {
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  buildPerElementLaunch(rewriter, loc, elements, [&](Value element) {
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type(),
         f64 = rewriter.getF64Type();
    Value zeroWord = arith::ConstantIntOp::create(rewriter, loc, i32, 0);
    Value words =
        arith::AddIOp::create(rewriter, loc, first,
                              arith::MulIOp::create(rewriter, loc, element,
                                                    index(2 * kCaptureWords)));
    // Word w counts units of 2^(8w - 150) (a significand's last bit at the
    // group's smallest exponent); summed in f64 from the smallest.
    Value sum = arith::ConstantFloatOp::create(
        rewriter, loc, cast<FloatType>(f64), APFloat(0.0));
    Value nonFinite;
    for (int64_t w = 0; w < kCaptureWords; ++w) {
      Value low = index(2 * w), high = index(2 * w + 1);
      Value lowIndex = arith::AddIOp::create(rewriter, loc, words, low);
      Value highIndex = arith::AddIOp::create(rewriter, loc, words, high);
      Value lowWord =
          memref::LoadOp::create(rewriter, loc, workspace, lowIndex);
      Value highWord =
          memref::LoadOp::create(rewriter, loc, workspace, highIndex);
      Value word = arith::OrIOp::create(
          rewriter, loc, arith::ExtUIOp::create(rewriter, loc, i64, lowWord),
          arith::ShLIOp::create(
              rewriter, loc,
              arith::ExtUIOp::create(rewriter, loc, i64, highWord),
              arith::ConstantIntOp::create(rewriter, loc, i64, 32)));
      memref::StoreOp::create(rewriter, loc, zeroWord, workspace, lowIndex);
      memref::StoreOp::create(rewriter, loc, zeroWord, workspace, highIndex);
      if (w == kCaptureWords - 1) {
        nonFinite = arith::CmpIOp::create(
            rewriter, loc, arith::CmpIPredicate::ne, word,
            arith::ConstantIntOp::create(rewriter, loc, i64, 0));
        continue;
      }
      Value unit = arith::ConstantFloatOp::create(
          rewriter, loc, cast<FloatType>(f64),
          APFloat(std::ldexp(1.0, static_cast<int>(8 * w - 150))));
      sum = arith::AddFOp::create(
          rewriter, loc, sum,
          arith::MulFOp::create(
              rewriter, loc, arith::SIToFPOp::create(rewriter, loc, f64, word),
              unit));
    }
    Value grad32 = arith::SelectOp::create(
        rewriter, loc, nonFinite,
        arith::ConstantFloatOp::create(rewriter, loc, rewriter.getF32Type(),
                                       APFloat::getQNaN(APFloat::IEEEsingle())),
        arith::TruncFOp::create(rewriter, loc, rewriter.getF32Type(), sum));
    // Row-major indices of the element in `grad`.
    auto type = cast<MemRefType>(grad.getType());
    SmallVector<Value> indices(type.getRank());
    Value rest = element;
    for (int64_t i = type.getRank() - 1; i >= 0; --i) {
      Value size = memref::DimOp::create(rewriter, loc, grad, i);
      indices[i] = arith::RemUIOp::create(rewriter, loc, rest, size);
      rest = arith::DivUIOp::create(rewriter, loc, rest, size);
    }
    memref::StoreOp::create(rewriter, loc, grad32, grad, indices);
  });
}

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
  // Delta, one f32 per query row, passed from the dQ kernel to the other
  // in the zeroed workspace (the scratch buffer may hold the block mask's
  // lists), which a third launch zeroes again. After it (from an even
  // word), the wrt tensors' accumulators: kCaptureWords i64 words per
  // element, which the launch that turns them into gradients zeroes again.
  Value words = arith::MulIOp::create(
      rewriter, loc, arith::MulIOp::create(rewriter, loc, batches, heads),
      rows);
  Value workspaceWords = words;
  if (!op.getWrt().empty())
    workspaceWords = arith::MulIOp::create(
        rewriter, loc,
        arith::CeilDivUIOp::create(rewriter, loc, words, index(2)), index(2));
  SmallVector<Value> captureElements, captureWords;
  for (Value wrt : op.getWrt()) {
    Value elements = index(1);
    for (int64_t i = 0, e = cast<RankedTensorType>(wrt.getType()).getRank();
         i < e; ++i)
      elements = arith::MulIOp::create(
          rewriter, loc, elements,
          tensor::DimOp::create(rewriter, loc, wrt, i).getResult());
    captureElements.push_back(elements);
    captureWords.push_back(workspaceWords);
    workspaceWords =
        arith::AddIOp::create(rewriter, loc, workspaceWords,
                              arith::MulIOp::create(rewriter, loc, elements,
                                                    index(2 * kCaptureWords)));
  }
  Value deltaBuffer = WorkspaceOp::create(
      rewriter, loc,
      MemRefType::get({ShapedType::kDynamic}, rewriter.getI32Type()),
      workspaceWords);

  // The op's block mask, or with a mask_mod that of its tiles: the kv
  // side lists the dQ blocks' steps, the q side the dK/dV blocks'.
  SmallVector<Value> lists;
  Value blockMask = op.getBlockMask();
  if (!blockMask && op.hasMaskMod() && blockMasks) {
    Value sizes[] = {batches, heads, rows, keys};
    blockMask = deriveBlockMask(
        rewriter, loc, op.getMaskMod(), op.getCausal(),
        BlockMaskType::get(rewriter.getContext(), qTile, kvTile),
        [&](int64_t i) { return sizes[i]; });
  }
  if (blockMask) {
    // The lists may be views of the scratch buffer: any strided layout.
    for (BlockMaskField field :
         {BlockMaskField::kv_num_blocks, BlockMaskField::kv_indices,
          BlockMaskField::full_kv_num_blocks, BlockMaskField::full_kv_indices,
          BlockMaskField::q_num_blocks, BlockMaskField::q_indices,
          BlockMaskField::full_q_num_blocks, BlockMaskField::full_q_indices}) {
      int64_t rank = static_cast<int64_t>(field) % 2 ? 4 : 3;
      SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
      Value tensor = BlockMaskFieldOp::create(
          rewriter, loc, RankedTensorType::get(shape, rewriter.getI32Type()),
          blockMask, field);
      auto layout = StridedLayoutAttr::get(rewriter.getContext(),
                                           ShapedType::kDynamic, shape);
      lists.push_back(bufferization::ToBufferOp::create(
          rewriter, loc, MemRefType::get(shape, rewriter.getI32Type(), layout),
          tensor,
          /*readOnly=*/true));
    }
  }

  RegionInliner regions(op, boundsChecks ? RegionChecks::DeviceTrap
                                         : RegionChecks::None);
  BackwardKernel base(rewriter, loc, op, regions);
  base.query = query;
  base.key = key;
  base.value = value;
  base.output = output;
  base.gradOutput = gradOutput;
  base.lse = lse;
  base.delta = deltaBuffer;
  base.dq = grads[0];
  base.dk = grads[1];
  base.dv = grads[2];
  for (Value first : captureWords)
    base.captureOffsets.push_back(
        arith::MulIOp::create(rewriter, loc, first, index(4)));
  Type element = op.getQuery().getType().getElementType();
  auto workgroup = gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                              gpu::AddressSpace::Workgroup);

  bool swizzled = kernel.isWarpgroupMma();
  // One launch: `own` rows per block (own / 16 warps), `streamed` rows
  // per step, the grid's x extent `blocks` over (heads, batches), each
  // tile's gradients in `slices` column slices.
  auto launch = [&](int64_t own, int64_t streamed, Value blocks,
                    Value launchHeads, int64_t slices, bool queryGrad) {
    GradSharedLayout layout =
        GradSharedLayout::of(own, streamed, stages, d, dv, queryGrad, swizzled);
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
    // wgmma's dK/dV kernel of 64-row tiles (128 threads, under a third of
    // the shared memory) at head dims up to 64 runs faster with three
    // blocks an SM than with the two its registers allow, for a few spilled
    // words.
    if (!queryGrad && swizzled && own == 64 && streamed == 64 && d <= 64 &&
        dv <= 64)
      shared.getDefiningOp()->setAttr(kMinBlocksPerSmAttrName,
                                      rewriter.getI32IntegerAttr(3));
    // wgmma reads swizzled tiles from a 1024-byte-aligned base.
    Value alignedBase =
        swizzled ? swizzleAlignedBase(rewriter, loc, shared) : index(0);
    auto view = [&](int64_t byteOffset, ArrayRef<int64_t> dims, Type type) {
      return memref::ViewOp::create(
          rewriter, loc,
          MemRefType::get(dims, type, MemRefLayoutAttrInterface{}, workgroup),
          shared,
          arith::AddIOp::create(rewriter, loc, alignedBase, index(byteOffset)),
          ValueRange{});
    };
    // A tile of `rows` rows of `width` elements (after `lead` buffers):
    // rows padded by 16 bytes, or split into swizzled tiles.
    auto tileDims = [&](ArrayRef<int64_t> lead, int64_t rows, int64_t width) {
      SmallVector<int64_t> dims(lead);
      int64_t columns = Swizzle::forWidth(width).columns();
      if (swizzled)
        dims.append({width / columns, rows, columns});
      else
        dims.append({rows, width + 8});
      return dims;
    };
    BackwardKernel kernel = base;
    // The first of each pair is d wide (Q or K), the second dv (dO or V).
    kernel.ownFirst = view(0, tileDims({}, own, d), element);
    kernel.ownSecond = view(layout.ownSecond, tileDims({}, own, dv), element);
    kernel.streamedFirst =
        view(layout.streamedFirst, tileDims({stages}, streamed, d), element);
    kernel.streamedSecond =
        view(layout.streamedSecond, tileDims({stages}, streamed, dv), element);
    if (queryGrad) {
      kernel.deltaStage = view(layout.delta, {own}, rewriter.getF32Type());
    } else {
      kernel.deltaStage =
          view(layout.delta, {stages, streamed}, rewriter.getI32Type());
      kernel.lseStage =
          view(layout.lse, {stages, streamed}, rewriter.getF32Type());
    }
    kernel.block = launchOp.getBlockIds().x;
    kernel.slices = slices;
    if (slices > 1) {
      // A tile's slices are neighbours, sharing the tiles they stream.
      Value x = kernel.block;
      kernel.block =
          arith::DivUIOp::create(rewriter, loc, x, index(slices)).getResult();
      kernel.slice =
          arith::RemUIOp::create(rewriter, loc, x, index(slices)).getResult();
    }
    kernel.head = launchOp.getBlockIds().y;
    kernel.batch = launchOp.getBlockIds().z;
    kernel.tid = launchOp.getThreadIds().x;
    if (!lists.empty()) {
      ArrayRef<Value> side = ArrayRef<Value>(lists).slice(queryGrad ? 0 : 4, 4);
      kernel.counts = side[0];
      kernel.indices = side[1];
      kernel.fullCounts = side[2];
      kernel.fullIndices = side[3];
    }
    if (queryGrad)
      kernel.buildQueryGrad();
    else
      kernel.buildKeyValueGrad();
    gpu::TerminatorOp::create(rewriter, loc);
  };
  // Each tile's blocks: one per column slice. The dQ kernel's slices split
  // dQ alone, the dK/dV kernel's both dK and dV.
  auto blocksOf = [&](Value length, int64_t tile, int64_t slices) -> Value {
    Value tiles =
        arith::CeilDivUIOp::create(rewriter, loc, length, index(tile));
    if (slices == 1)
      return tiles;
    return arith::MulIOp::create(rewriter, loc, tiles, index(slices));
  };
  int64_t querySlices = AttentionGradOp::gradColumnSlices(d, d);
  Value queryBlocks = blocksOf(rows, qTile, querySlices);
  launch(qTile, kvTile, queryBlocks, heads, querySlices, /*queryGrad=*/true);
  int64_t keySlices = AttentionGradOp::gradColumnSlices(d, dv);
  Value keyBlocks = blocksOf(keys, kvTile, keySlices);
  launch(kvTile, qTile, keyBlocks, kvHeads, keySlices, /*queryGrad=*/false);

  // Zero the Delta words again, a word per thread.
  buildPerElementLaunch(rewriter, loc, words, [&](Value word) {
    memref::StoreOp::create(
        rewriter, loc,
        arith::ConstantIntOp::create(rewriter, loc, rewriter.getI32Type(), 0),
        deltaBuffer, word);
  });

  for (auto [w, elements] : llvm::enumerate(captureElements))
    finishCaptureGrad(rewriter, loc, deltaBuffer, captureWords[w], elements,
                      grads[3 + w]);

  SmallVector<Value> results;
  for (auto [buffer, init] : llvm::zip(grads, op.getOutputs()))
    results.push_back(bufferization::ToTensorOp::create(
        rewriter, loc, init.getType(), buffer, rewriter.getUnitAttr(),
        rewriter.getUnitAttr()));
  rewriter.replaceOp(op, results);
}
