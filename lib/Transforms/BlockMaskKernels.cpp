//===- BlockMaskKernels.cpp - create_block_mask's lists on the GPU --------===//
//
// The GPU side of attn-lower-block-masks: a scan kernel that decides every
// block (keep/drop bits in the runtime's workspace), a compaction kernel
// per side that turns a line's bits into its lists, and a kernel that
// zeroes the lists after the function's last use, as the workspace's
// contract asks.
//
//===----------------------------------------------------------------------===//

#include "BlockMaskLists.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::block_masks;

namespace {

constexpr int64_t kThreads = 128;
/// Rows of a block each scan thread evaluates at once: their captured reads
/// are in flight together.
constexpr int64_t kUnrollScanRows = 8;
/// With bounds, a block is cut into one box per thread of a smaller block
/// of threads (a box's bounds cost a few reads whatever its size): this
/// many boxes across its columns (16 columns each in a 128-wide block), the
/// rest down its rows.
constexpr int64_t kBoxThreads = 64;
constexpr int64_t kBoxColumnParts = 8;

} // namespace

void ListBuilder::compactOnDevice(Side side, Value workspace,
                                  const ListWords &at, bool clearBits) {
  constexpr int64_t kWarps = kThreads / 32;
  Value one = c(1), zero = c(0);
  auto launch = gpu::LaunchOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, lines(side), c(kWarps)), heads,
      batch, c(kThreads), one, one);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&launch.getBody().front());
  Value tid = launch.getThreadIds().x;
  Value lane = arith::RemUIOp::create(b, loc, tid, c(32));
  Value line = add(mul(launch.getBlockIds().x, c(kWarps)),
                   arith::DivUIOp::create(b, loc, tid, c(32)));
  Value bh = add(mul(launch.getBlockIds().z, heads), launch.getBlockIds().y);
  Value length = lineLength(side);
  // The same for every lane of a warp: the ballots below see all 32.
  auto inside =
      scf::IfOp::create(b, loc,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                              line, lines(side)));
  b.setInsertionPointToStart(inside.thenBlock());
  Value lineAt = add(mul(bh, lines(side)), line);
  auto i32Const = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  Value allLanes = i32Const(-1);
  // Bits of the lanes below this one.
  Value below = arith::SubIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, i32Const(1), asI32(lane)),
      i32Const(1));
  auto chunkLoop =
      scf::ForOp::create(b, loc, zero, length, c(32), ValueRange{zero, zero});
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(chunkLoop.getBody());
    Value block = add(chunkLoop.getInductionVar(), lane);
    // The keep/drop words are laid out [b, h, q-block, kv-block].
    Value word = side == Side::Kv
                     ? add(mul(lineAt, kvBlocks), block)
                     : add(mul(add(mul(bh, qBlocks), block), kvBlocks), line);
    auto valid = scf::IfOp::create(
        b, loc, TypeRange{i32},
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, block, length),
        /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard branch(b);
      b.setInsertionPointToStart(valid.thenBlock());
      Value bits = memref::LoadOp::create(b, loc, workspace, word);
      if (clearBits)
        memref::StoreOp::create(b, loc, i32Const(0), workspace, word);
      scf::YieldOp::create(b, loc, bits);
      b.setInsertionPointToStart(valid.elseBlock());
      scf::YieldOp::create(b, loc, i32Const(0));
    }
    Value bits = valid.getResult(0);
    // Bit 0: the mask_mod kept a position; bit 1: it dropped one.
    auto is = [&](int64_t value) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, bits,
                                   i32Const(value))
          .getResult();
    };
    auto popCount = [&](Value x) {
      return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                        LLVM::CtPopOp::create(b, loc, x));
    };
    SmallVector<Value> counts;
    for (auto [list, flag] : {std::pair{0, is(3)}, std::pair{1, is(1)}}) {
      Value count = chunkLoop.getRegionIterArgs()[list];
      Value ballot = NVVM::VoteSyncOp::create(b, loc, i32, allLanes, flag,
                                              NVVM::VoteSyncKind::ballot);
      auto ifOp = scf::IfOp::create(b, loc, flag);
      {
        OpBuilder::InsertionGuard branch(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        Value position =
            add(count, popCount(arith::AndIOp::create(b, loc, ballot, below)));
        memref::StoreOp::create(
            b, loc, asI32(block), workspace,
            ValueRange{
                add(at.indices[list], add(mul(lineAt, length), position))});
      }
      counts.push_back(add(count, popCount(ballot)));
    }
    scf::YieldOp::create(b, loc, counts);
  }
  auto first = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero));
  b.setInsertionPointToStart(first.thenBlock());
  for (int64_t list : {0, 1})
    memref::StoreOp::create(b, loc, asI32(chunkLoop.getResult(list)), workspace,
                            ValueRange{add(at.counts[list], lineAt)});
  b.setInsertionPointAfter(inside);
  gpu::TerminatorOp::create(b, loc);
}

void ListBuilder::buildOnDevice(Operation *end) {
  b.setInsertionPoint(op);
  sizes();
  // Workspace words: a keep/drop word per block, then each side's counts
  // and indices of the partial and of the full lists.
  SmallVector<Side> sides = {Side::Kv};
  if (qSide)
    sides.push_back(Side::Q);
  Value blocks = mul(mul(mul(batch, heads), qBlocks), kvBlocks);
  SmallVector<ListWords> at;
  Value next = blocks;
  for (Side side : sides) {
    Value lineCount = mul(mul(batch, heads), lines(side));
    ListWords words;
    for (int64_t list : {0, 1}) {
      words.counts[list] = next;
      words.indices[list] = add(next, lineCount);
      next = add(words.indices[list], blocks);
    }
    at.push_back(words);
  }
  Value listWords = arith::SubIOp::create(b, loc, next, blocks);
  Value workspace = WorkspaceOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, i32), next);
  Value one = c(1);
  auto ceilDiv = [&](Value x, int64_t y) {
    return arith::CeilDivUIOp::create(b, loc, x, c(y)).getResult();
  };

  // Scan: one block of threads per (kv-block, q-block, b * h).
  {
    auto launch =
        gpu::LaunchOp::create(b, loc, kvBlocks, qBlocks, mul(batch, heads),
                              c(bounded ? kBoxThreads : kThreads), one, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value kb = launch.getBlockIds().x, qb = launch.getBlockIds().y;
    Value bh = launch.getBlockIds().z, tid = launch.getThreadIds().x;
    Value bi = arith::DivUIOp::create(b, loc, bh, heads);
    Value hi = arith::RemUIOp::create(b, loc, bh, heads);
    Value q0 = mul(qb, c(qBlock)), kv0 = mul(kb, c(kvBlock));
    Value qLimit = arith::MinUIOp::create(b, loc, add(q0, c(qBlock)), qLen);
    Value kvLimit = arith::MinUIOp::create(b, loc, add(kv0, c(kvBlock)), kvLen);
    std::pair<Value, Value> seen;
    if (bounded) {
      // Each thread decides its own box of the block: most boxes by their
      // bounds alone, a few (those a mask's edge crosses) position by
      // position, unless their warp already found the block partial.
      int64_t kvParts = std::min(kBoxColumnParts, kvBlock);
      int64_t qParts = kBoxThreads / kvParts;
      int64_t rows = llvm::divideCeil(qBlock, qParts);
      int64_t cols = llvm::divideCeil(kvBlock, kvParts);
      Value qStart = add(
          q0, mul(arith::DivUIOp::create(b, loc, tid, c(kvParts)), c(rows)));
      Value kvStart = add(
          kv0, mul(arith::RemUIOp::create(b, loc, tid, c(kvParts)), c(cols)));
      // A warp's lanes that bound the same rows are kvParts apart-by-one
      // neighbours; those of the same columns are kvParts apart. Where
      // kvParts is not a power of two, every lane reads on its own.
      SharedReads shared;
      shared.rows = {c(0), {}, rows};
      shared.columns = {c(0), {}, cols};
      if (llvm::isPowerOf2_64(kvParts) && kvParts <= 32) {
        Value lane = arith::RemUIOp::create(b, loc, tid, c(32));
        shared.rows.rank = arith::RemUIOp::create(b, loc, lane, c(kvParts));
        shared.columns.rank = arith::DivUIOp::create(b, loc, lane, c(kvParts));
        for (int64_t mask = 1; mask < 32; mask *= 2)
          (mask < kvParts ? shared.rows : shared.columns)
              .xorMasks.push_back(mask);
      }
      seen = decideBox(
          bi, hi, qStart,
          arith::MinUIOp::create(b, loc, add(qStart, c(rows)), qLimit), rows,
          kvStart,
          arith::MinUIOp::create(b, loc, add(kvStart, c(cols)), kvLimit), cols,
          &shared);
    } else {
      seen = scanBox(bi, hi, q0, qLimit, qBlock, kv0, kvLimit, kvBlock, tid,
                     kThreads, kUnrollScanRows);
    }
    auto [keep, drop] = seen;
    Value all = arith::ConstantIntOp::create(b, loc, i32, -1);
    auto vote = [&](Value flag) {
      return NVVM::VoteSyncOp::create(b, loc, b.getI1Type(), all, flag,
                                      NVVM::VoteSyncKind::any)
          .getResult();
    };
    Value bits = arith::OrIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i32, vote(keep)),
        arith::ShLIOp::create(b, loc,
                              arith::ExtUIOp::create(b, loc, i32, vote(drop)),
                              arith::ConstantIntOp::create(b, loc, i32, 1)));
    Value leader =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                              arith::RemUIOp::create(b, loc, tid, c(32)), c(0));
    auto ifOp = scf::IfOp::create(b, loc, leader);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      memref::AtomicRMWOp::create(
          b, loc, arith::AtomicRMWKind::ori, bits, workspace,
          ValueRange{add(mul(add(mul(bh, qBlocks), qb), kvBlocks), kb)});
    }
    gpu::TerminatorOp::create(b, loc);
  }

  // Compact each side; the last one clears the keep/drop words.
  for (auto [i, side] : llvm::enumerate(sides))
    compactOnDevice(side, workspace, at[i], i + 1 == sides.size());

  // The lists as tensors over the workspace.
  SmallVector<Value> lists;
  for (auto [i, side] : llvm::enumerate(sides)) {
    for (int64_t list : {0, 1}) {
      for (bool isIndices : {false, true}) {
        SmallVector<OpFoldResult> shape = {batch, heads, lines(side)};
        if (isIndices)
          shape.push_back(lineLength(side));
        SmallVector<OpFoldResult> strides(shape.size());
        Value stride = one;
        for (size_t d = shape.size(); d-- > 0;) {
          strides[d] = stride;
          stride =
              mul(stride, getValueOrCreateConstantIndexOp(b, loc, shape[d]));
        }
        auto view = memref::ReinterpretCastOp::create(
            b, loc,
            MemRefType::get(
                SmallVector<int64_t>(shape.size(), ShapedType::kDynamic), i32,
                StridedLayoutAttr::get(
                    b.getContext(), ShapedType::kDynamic,
                    SmallVector<int64_t>(shape.size(), ShapedType::kDynamic))),
            workspace, isIndices ? at[i].indices[list] : at[i].counts[list],
            shape, strides);
        lists.push_back(bufferization::ToTensorOp::create(
            b, loc,
            RankedTensorType::get(
                SmallVector<int64_t>(shape.size(), ShapedType::kDynamic), i32),
            view, /*restrict=*/b.getUnitAttr(), /*writable=*/UnitAttr()));
      }
    }
  }

  // Zero the lists once everything has read them.
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(end);
    auto launch = gpu::LaunchOp::create(b, loc, ceilDiv(listWords, kThreads),
                                        one, one, c(kThreads), one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value word =
        add(mul(launch.getBlockIds().x, c(kThreads)), launch.getThreadIds().x);
    auto inside = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, word,
                              listWords));
    b.setInsertionPointToStart(inside.thenBlock());
    memref::StoreOp::create(b, loc,
                            arith::ConstantIntOp::create(b, loc, i32, 0),
                            workspace, ValueRange{add(blocks, word)});
    b.setInsertionPointAfter(inside);
    gpu::TerminatorOp::create(b, loc);
  }
  replace(lists);
}
