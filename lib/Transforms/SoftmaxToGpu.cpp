//===- SoftmaxToGpu.cpp - attn.softmax as a GPU kernel --------------------===//
//
// One thread block per row of a [M, N] softmax (N any length): the block's
// threads stride through the row with 16-byte vector loads (scalar ones when
// N is not a multiple of the vector width, so a row may start unaligned),
// keeping an online (max, sum) each; two block-wide reductions
// (gpu.all_reduce, warp shuffles) merge them; exp2((x - max) * log2(e)) / sum
// is written with 16-byte stores. Rows of at most two vectors per thread
// (the block is sized for that, up to `threads` threads) stay in registers and
// are read once; longer rows are swept twice, the second read hitting L2
// when the resident blocks' rows fit there. Rows that are all -inf give 0.
//
//===----------------------------------------------------------------------===//

#include "ArithUtils.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SOFTMAXTOGPU
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Vectors per thread that a row may have and stay in registers; the block
/// size aims at this many.
constexpr int64_t kResidentVectors = 2;

/// Builds the kernel body for one row with vectors of `width` elements.
struct RowKernel {
  OpBuilder &b;
  Location loc;
  Value in, out, row, n, tid, threads;
  int64_t width;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) { return f32Constant(b, loc, v); }

  /// The `width` elements at column `c`, widened to f32.
  SmallVector<Value> load(Value c) {
    Type element = cast<MemRefType>(in.getType()).getElementType();
    SmallVector<Value> xs;
    if (width == 1) {
      xs.push_back(memref::LoadOp::create(b, loc, in, ValueRange{row, c}));
    } else {
      Value v = vector::LoadOp::create(
          b, loc, VectorType::get({width}, element), in, ValueRange{row, c},
          /*nontemporal=*/false, llvm::Align(16));
      for (int64_t i = 0; i < width; ++i)
        xs.push_back(vector::ExtractOp::create(b, loc, v, i));
    }
    for (Value &x : xs)
      if (!x.getType().isF32())
        x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    return xs;
  }

  /// exp(x - m) as exp2((x - m) * log2(e)); 0 where x is -inf.
  Value expMinus(Value x, Value m) {
    Value e = math::Exp2Op::create(
        b, loc,
        arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, x, m),
                              f32(kLog2E)));
    Value masked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                         f32(kNegInf));
    return arith::SelectOp::create(b, loc, masked, f32(0), e);
  }

  /// The block-wide max and 1 / sum, from this thread's (max, sum).
  std::pair<Value, Value> reduce(Value m, Value l) {
    Value rowMax = gpu::AllReduceOp::create(
        b, loc, m,
        gpu::AllReduceOperationAttr::get(b.getContext(),
                                         gpu::AllReduceOperation::MAXIMUMF),
        b.getUnitAttr());
    Value scaled = arith::MulFOp::create(b, loc, l, expMinus(m, rowMax));
    Value rowSum = gpu::AllReduceOp::create(
        b, loc, scaled,
        gpu::AllReduceOperationAttr::get(b.getContext(),
                                         gpu::AllReduceOperation::ADD),
        b.getUnitAttr());
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                           rowSum, f32(0));
    Value inverse = arith::SelectOp::create(
        b, loc, positive, arith::DivFOp::create(b, loc, f32(1), rowSum),
        f32(0));
    return {rowMax, inverse};
  }

  /// Writes the probabilities of `xs` (f32) at column `c`, rounded to the
  /// output type.
  void store(Value c, ArrayRef<Value> xs, Value rowMax, Value inverse) {
    Type outElement = cast<MemRefType>(out.getType()).getElementType();
    SmallVector<Value> ys;
    for (Value x : xs) {
      Value y = arith::MulFOp::create(b, loc, expMinus(x, rowMax), inverse);
      if (!outElement.isF32())
        y = arith::TruncFOp::create(b, loc, outElement, y);
      ys.push_back(y);
    }
    if (width == 1) {
      memref::StoreOp::create(b, loc, ys[0], out, ValueRange{row, c});
      return;
    }
    auto type = VectorType::get({width}, outElement);
    Value v = vector::FromElementsOp::create(b, loc, type, ys);
    vector::StoreOp::create(b, loc, v, out, ValueRange{row, c},
                            /*nontemporal=*/false, llvm::Align(16));
  }

  /// Rows of at most `vectors` vectors per thread: read once, kept in
  /// registers between the reduction and the write.
  void buildResident(int64_t vectors) {
    Value start = arith::MulIOp::create(b, loc, tid, index(width));
    Value step = arith::MulIOp::create(b, loc, threads, index(width));
    SmallVector<Value> columns, inRange;
    SmallVector<SmallVector<Value>> chunks;
    Value m = f32(kNegInf);
    for (int64_t j = 0; j < vectors; ++j) {
      Value c = arith::AddIOp::create(
          b, loc, start, arith::MulIOp::create(b, loc, step, index(j)));
      Value inside =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, c, n);
      SmallVector<Type> types(width, b.getF32Type());
      auto loaded = scf::IfOp::create(b, loc, types, inside,
                                      /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loaded.thenBlock());
        scf::YieldOp::create(b, loc, load(c));
        b.setInsertionPointToStart(loaded.elseBlock());
        scf::YieldOp::create(b, loc, SmallVector<Value>(width, f32(kNegInf)));
      }
      columns.push_back(c);
      inRange.push_back(inside);
      chunks.emplace_back(loaded.getResults().begin(),
                          loaded.getResults().end());
      for (Value x : chunks.back())
        m = arith::MaximumFOp::create(b, loc, m, x);
    }
    Value l = f32(0);
    for (ArrayRef<Value> xs : chunks)
      for (Value x : xs)
        l = arith::AddFOp::create(b, loc, l, expMinus(x, m));
    auto [rowMax, inverse] = reduce(m, l);
    for (auto [c, inside, xs] : llvm::zip_equal(columns, inRange, chunks)) {
      auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      store(c, xs, rowMax, inverse);
    }
  }

  /// Rows of any length: an online sweep, then a second sweep that re-reads
  /// the row and writes it.
  void buildStreaming() {
    Value start = arith::MulIOp::create(b, loc, tid, index(width));
    Value step = arith::MulIOp::create(b, loc, threads, index(width));

    // Sweep 1: this thread's online (max, sum) over its vectors.
    auto sweep = scf::ForOp::create(b, loc, start, n, step,
                                    ValueRange{f32(kNegInf), f32(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sweep.getBody());
      Value m = sweep.getRegionIterArgs()[0], l = sweep.getRegionIterArgs()[1];
      SmallVector<Value> xs = load(sweep.getInductionVar());
      Value newMax = m;
      for (Value x : xs)
        newMax = arith::MaximumFOp::create(b, loc, newMax, x);
      // A chunk of -inf leaves (max, sum) = (-inf, 0): expMinus gives 0.
      Value sum = arith::MulFOp::create(b, loc, l, expMinus(m, newMax));
      for (Value x : xs)
        sum = arith::AddFOp::create(b, loc, sum, expMinus(x, newMax));
      scf::YieldOp::create(b, loc, ValueRange{newMax, sum});
    }
    auto [rowMax, inverse] = reduce(sweep.getResult(0), sweep.getResult(1));

    // Sweep 2: the probabilities.
    auto write = scf::ForOp::create(b, loc, start, n, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(write.getBody());
    Value c = write.getInductionVar();
    store(c, load(c), rowMax, inverse);
  }
};

struct SoftmaxToGpuPass : attn::impl::SoftmaxToGpuBase<SoftmaxToGpuPass> {
  using SoftmaxToGpuBase::SoftmaxToGpuBase;

  void runOnOperation() override {
    if (threads < 32 || threads > 1024 || threads % 32 != 0) {
      getOperation()->emitError()
          << "attn-softmax-to-gpu: threads must be a multiple of 32 in [32, "
             "1024], got "
          << static_cast<int64_t>(threads);
      return signalPassFailure();
    }
    SmallVector<SoftmaxOp> ops;
    getOperation()->walk([&](SoftmaxOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (SoftmaxOp op : ops)
      if (failed(lower(rewriter, op)))
        return signalPassFailure();
  }

  LogicalResult lower(RewriterBase &b, SoftmaxOp op) {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    auto outType = cast<RankedTensorType>(op.getOutput().getType());
    if (inType.getRank() != 2)
      return op.emitOpError()
             << "lowers to the GPU for rank 2 ([rows, N]) only, got rank "
             << inType.getRank() << "; collapse the outer dims first";
    b.setInsertionPoint(op);
    auto bufferOf = [&](Value tensor, RankedTensorType type, bool readOnly) {
      return bufferization::ToBufferOp::create(
          b, loc, MemRefType::get(type.getShape(), type.getElementType()),
          tensor, readOnly);
    };
    Value in = bufferOf(op.getInput(), inType, true);
    Value out = bufferOf(op.getOutput(), outType, false);
    Value rows = memref::DimOp::create(b, loc, in, 0);
    Value n = memref::DimOp::create(b, loc, in, 1);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // Threads: about kResidentVectors vectors each, whole warps, 64 to
    // `threads`: short rows do not leave most of a large block idle.
    int64_t vectorWidth = 16 / (inType.getElementTypeBitWidth() / 8);
    auto constant = [&](int64_t v) {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    Value warps = arith::CeilDivUIOp::create(
        b, loc, n, constant(kResidentVectors * vectorWidth * 32));
    Value blockSize = arith::MinUIOp::create(
        b, loc,
        arith::MaxUIOp::create(
            b, loc, arith::MulIOp::create(b, loc, warps, constant(32)),
            constant(64)),
        constant(threads));
    auto launch =
        gpu::LaunchOp::create(b, loc, rows, one, one, blockSize, one, one);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&launch.getBody().front());
      // 16-byte vectors when every row starts 16-byte aligned (N a
      // multiple of the width), scalars otherwise.
      int64_t width = vectorWidth;
      Value aligned = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          arith::RemUIOp::create(b, loc, n,
                                 arith::ConstantIndexOp::create(b, loc, width)),
          arith::ConstantIndexOp::create(b, loc, 0));
      auto choice = scf::IfOp::create(b, loc, aligned, /*withElse=*/true);
      auto kernel = [&](int64_t w) {
        return RowKernel{b,
                         loc,
                         in,
                         out,
                         launch.getBlockIds().x,
                         n,
                         launch.getThreadIds().x,
                         launch.getBlockSizeX(),
                         w};
      };
      // Aligned rows of at most kResidentVectors vectors per thread stay in
      // registers (read once); longer rows stream twice.
      b.setInsertionPoint(choice.thenBlock()->getTerminator());
      Value capacity = arith::MulIOp::create(
          b, loc, launch.getBlockSizeX(),
          arith::ConstantIndexOp::create(b, loc, kResidentVectors * width));
      Value fits =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, n, capacity);
      auto resident = scf::IfOp::create(b, loc, fits, /*withElse=*/true);
      b.setInsertionPoint(resident.thenBlock()->getTerminator());
      kernel(width).buildResident(kResidentVectors);
      b.setInsertionPoint(resident.elseBlock()->getTerminator());
      kernel(width).buildStreaming();
      b.setInsertionPoint(choice.elseBlock()->getTerminator());
      kernel(1).buildStreaming();
      b.setInsertionPointToEnd(&launch.getBody().front());
      gpu::TerminatorOp::create(b, loc);
    }
    Value result = bufferization::ToTensorOp::create(
        b, loc, outType, out, b.getUnitAttr(), b.getUnitAttr());
    b.replaceOp(op, result);
    return success();
  }
};

} // namespace
