//===- BlockMasksToGpu.cpp - create_block_mask's lists on the GPU ---------===//
//
// attn-block-masks-to-gpu: one kernel that decides every
// block (a warp each) into a keep/drop word, and in which the warp that
// decides a line's last block turns the line's words into its lists. The
// words and lists live in the runtime's scratch buffer, which needs no
// clearing afterwards; the lines' counters in its workspace, which the
// compacting warps leave zeroed. Deciding a box of positions is shared
// with the host's lists (attn-lower-block-masks, BlockMaskLists.h).
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/Target/NVVM/CrossBlockExchange.h"
#include "AttnDialect/Transforms/BlockMaskLists.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <functional>

namespace mlir::attn {
#define GEN_PASS_DEF_BLOCKMASKSTOGPU
#include "AttnDialect/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::block_masks;

// Operands that build ops are built one per statement in this file: C++
// leaves the order of argument evaluation open, and the IR must not depend
// on the compiler.

namespace {

/// Rows of a block each scan lane evaluates at once: their captured reads
/// are in flight together.
constexpr int64_t kUnrollScanRows = 8;
/// Warps in a block of threads of the GPU kernel, each deciding one of a
/// line's kv-blocks. 32 hold a warp to 64 registers, with which ptxas
/// spills a mask_mod of more than two captured reads (jagged); those keep
/// a warp per block of threads, whose registers ptxas chooses freely.
constexpr int64_t kWarpsPerLine = 32;
constexpr int64_t kWarpsPerLineHeavy = 1;
/// Where the bounds of a whole block cannot tell, it is cut into this many
/// boxes (a box's bounds cost a few reads whatever its size), 32 at a time:
/// this many across its columns (16 columns each in a 128-wide block), the
/// rest down its rows.
constexpr int64_t kBoxesPerBlock = 64;
constexpr int64_t kBoxColumnParts = 8;

/// The lists of one attn.create_block_mask, built by a kernel on the
/// runtime's scratch buffer.
class GpuListBuilder : public ListBuilder {
public:
  using ListBuilder::ListBuilder;

  /// Replaces the op by the kernel that fills its lists in the scratch
  /// buffer from word `scratchBase` on; returns the word after its last.
  Value build(Value scratchBase);

private:
  /// Where one side's lists start in the scratch buffer, in words.
  struct ListWords {
    Value counts[2], indices[2]; // partial, full
  };

  /// The lists of `line` of `side` of (b * heads + h) `bh`, by the 32 lanes
  /// of a warp (`lane` is this one's): reads the line's keep/drop words,
  /// one per block from word `bitsAt` of `scratch`, 32 blocks at a time,
  /// and appends its partial and full blocks in order: a ballot and a
  /// population count give each lane its place in the list.
  void compactLine(Side side, Value line, Value bh, Value lane, Value scratch,
                   Value bitsAt, const ListWords &at);
  /// (keep, drop) of the block [q0, qLimit) x [kv0, kvLimit) of (bi, hi),
  /// by the 32 lanes of a warp (`lane` is this one's), to be combined by
  /// warp votes: the bounds of the whole block where they tell, the reads
  /// shared by all lanes; otherwise boxes of it, a lane's each, by
  /// decideBox.
  std::pair<Value, Value> decideBlockInWarp(Value bi, Value hi, Value lane,
                                            Value q0, Value qLimit, Value kv0,
                                            Value kvLimit);
};

} // namespace

void GpuListBuilder::compactLine(Side side, Value line, Value bh, Value lane,
                                 Value scratch, Value bitsAt,
                                 const ListWords &at) {
  OpBuilder::InsertionGuard guard(b);
  Value zero = c(0);
  Value lineAt = add(mul(bh, lines(side)), line);
  Value length = lineLength(side);
  Value allLanes = i32Const(-1);
  // Bits of the lanes below this one.
  Value belowOne = i32Const(1);
  Value laneBits = asI32(lane);
  Value below = arith::SubIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, i32Const(1), laneBits), belowOne);
  // The word of block `block` of the line, 0 past its end. Read at the
  // GPU's scope: other warps wrote the words, and L1 may hold a stale copy
  // of a neighbouring line's.
  auto readWord = [&](Value block) -> Value {
    // The keep/drop words are laid out [b, h, q-block, kv-block].
    Value word = side == Side::Kv
                     ? add(mul(lineAt, kvBlocks), block)
                     : add(mul(add(mul(bh, qBlocks), block), kvBlocks), line);
    auto valid = scf::IfOp::create(
        b, loc, TypeRange{i32},
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, block, length),
        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard branch(b);
    b.setInsertionPointToStart(valid.thenBlock());
    Value wordIndex = add(bitsAt, word);
    scf::YieldOp::create(
        b, loc,
        memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                    i32Const(0), scratch, ValueRange{wordIndex})
            .getResult());
    b.setInsertionPointToStart(valid.elseBlock());
    scf::YieldOp::create(b, loc, i32Const(0));
    return valid.getResult(0);
  };
  // Each chunk's words are read two chunks ahead, so that a line of two
  // chunks waits for one round trip.
  SmallVector<Value> chunkInits = {zero, zero, readWord(lane),
                                   readWord(add(lane, c(32)))};
  auto chunkLoop = scf::ForOp::create(b, loc, zero, length, c(32), chunkInits);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(chunkLoop.getBody());
    Value block = add(chunkLoop.getInductionVar(), lane);
    Value ahead = readWord(add(block, c(64)));
    Value bits = chunkLoop.getRegionIterArgs()[2];
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
        Value index = add(at.indices[list], add(mul(lineAt, length), position));
        memref::StoreOp::create(b, loc, asI32(block), scratch,
                                ValueRange{index});
      }
      counts.push_back(add(count, popCount(ballot)));
    }
    counts.append({chunkLoop.getRegionIterArgs()[3], ahead});
    scf::YieldOp::create(b, loc, counts);
  }
  // Past its count, a list holds zeros (the scratch buffer holds anything).
  for (int64_t list : {0, 1}) {
    Value tailStep = c(32);
    auto tail = scf::ForOp::create(b, loc, add(chunkLoop.getResult(list), lane),
                                   length, tailStep);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(tail.getBody());
    Value index =
        add(at.indices[list], add(mul(lineAt, length), tail.getInductionVar()));
    memref::StoreOp::create(b, loc, i32Const(0), scratch, ValueRange{index});
  }
  auto first = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero));
  b.setInsertionPointToStart(first.thenBlock());
  for (int64_t list : {0, 1}) {
    Value index = add(at.counts[list], lineAt);
    memref::StoreOp::create(b, loc, asI32(chunkLoop.getResult(list)), scratch,
                            ValueRange{index});
  }
}

std::pair<Value, Value>
GpuListBuilder::decideBlockInWarp(Value bi, Value hi, Value lane, Value q0,
                                  Value qLimit, Value kv0, Value kvLimit) {
  Type i1 = b.getI1Type();
  auto both = [&](Value x, Value y) {
    return arith::AndIOp::create(b, loc, x, y).getResult();
  };
  auto either = [&](Value x, Value y) {
    return arith::OrIOp::create(b, loc, x, y).getResult();
  };
  Value yes = arith::ConstantIntOp::create(b, loc, i1, 1);
  // The whole block, every read split across all 32 lanes. A read that
  // depends on both q and kv spans more than a side and gives up: its
  // block goes to the boxes.
  SharedReads whole;
  SmallVector<int64_t> allLanes = {1, 2, 4, 8, 16};
  whole.rows = {lane, allLanes, qBlock};
  whole.columns = {lane, allLanes, kvBlock};
  Value one = c(1);
  Value kvLast = arith::SubIOp::create(b, loc, kvLimit, one);
  Value qLast = arith::SubIOp::create(b, loc, qLimit, one);
  MaskBounds block =
      boundMaskMod(b, loc, op.getMaskMod(), bi, hi, q0, qLast, kv0, kvLast,
                   std::max(qBlock, kvBlock), &whole);
  // The same on every lane: the bounds are the warp's.
  Value decided = both(
      block.exact,
      arith::XOrIOp::create(b, loc, both(block.mayKeep, block.mayDrop), yes));
  auto ifDecided = scf::IfOp::create(b, loc, TypeRange{i1, i1}, decided,
                                     /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifDecided.thenBlock());
  scf::YieldOp::create(b, loc, ValueRange{block.mayKeep, block.mayDrop});

  // Otherwise, first, one position per lane on a grid with the corners:
  // where a mask's edge crosses the block (a causal diagonal, a window's
  // end), they hold kept and dropped positions, and the block is partial
  // without its boxes.
  b.setInsertionPointToStart(ifDecided.elseBlock());
  {
    auto spread = [&](Value first, Value limit, Value step, int64_t steps) {
      Value span = arith::SubIOp::create(
          b, loc, arith::SubIOp::create(b, loc, limit, first), one);
      Value stepCount = c(steps);
      return add(first,
                 arith::DivUIOp::create(b, loc, mul(span, step), stepCount));
    };
    Value q = spread(q0, qLimit, arith::DivUIOp::create(b, loc, lane, c(8)),
                     32 / 8 - 1);
    Value kv =
        spread(kv0, kvLimit, arith::RemUIOp::create(b, loc, lane, c(8)), 8 - 1);
    Value kept = regions.maskMod(b, loc, bi, hi, q, kv);
    Value anyDropped = warpAny(arith::XOrIOp::create(b, loc, kept, yes));
    Value anyKept = warpAny(kept);
    Value probedPartial = both(anyKept, anyDropped);
    auto ifProbed = scf::IfOp::create(b, loc, TypeRange{i1, i1}, probedPartial,
                                      /*withElseRegion=*/true);
    scf::YieldOp::create(b, loc, ifProbed.getResults());
    b.setInsertionPointToStart(ifProbed.thenBlock());
    scf::YieldOp::create(b, loc, ValueRange{yes, yes});
    b.setInsertionPointToStart(ifProbed.elseBlock());
  }
  // Otherwise kBoxesPerBlock boxes, a lane's each, 32 at a time. A warp's
  // lanes that bound the same rows are kvParts apart-by-one neighbours;
  // those of the same columns are kvParts apart. Where kvParts is not a
  // power of two, every lane reads on its own.
  int64_t kvParts = std::min(kBoxColumnParts, kvBlock);
  int64_t qParts = kBoxesPerBlock / kvParts;
  int64_t rows = llvm::divideCeil(qBlock, qParts);
  int64_t cols = llvm::divideCeil(kvBlock, kvParts);
  SharedReads shared;
  shared.rows = {c(0), {}, rows};
  shared.columns = {c(0), {}, cols};
  if (llvm::isPowerOf2_64(kvParts) && kvParts <= 32) {
    shared.rows.rank = arith::RemUIOp::create(b, loc, lane, c(kvParts));
    shared.columns.rank = arith::DivUIOp::create(b, loc, lane, c(kvParts));
    for (int64_t mask = 1; mask < 32; mask *= 2)
      (mask < kvParts ? shared.rows : shared.columns).xorMasks.push_back(mask);
  }
  // Boxes first to first + 31, a lane's each, then the next 32 unless the
  // warp has found the block partial already (the rest cannot change that);
  // but all of them where a read of the block gave up, which their scans
  // report.
  std::function<std::pair<Value, Value>(int64_t, Value, Value)> boxesFrom =
      [&](int64_t first, Value keep, Value drop) -> std::pair<Value, Value> {
    Value box = add(c(first), lane);
    Value rowsValue = c(rows);
    Value qStart = add(
        q0, mul(arith::DivUIOp::create(b, loc, box, c(kvParts)), rowsValue));
    Value colsValue = c(cols);
    Value kvStart = add(
        kv0, mul(arith::RemUIOp::create(b, loc, box, c(kvParts)), colsValue));
    Value kvEnd =
        arith::MinUIOp::create(b, loc, add(kvStart, c(cols)), kvLimit);
    Value qEnd = arith::MinUIOp::create(b, loc, add(qStart, c(rows)), qLimit);
    auto [boxKeep, boxDrop] =
        decideBox(bi, hi, qStart, qEnd, rows, kvStart, kvEnd, cols, &shared);
    keep = keep ? either(keep, boxKeep) : boxKeep;
    drop = drop ? either(drop, boxDrop) : boxDrop;
    if (first + 32 >= kBoxesPerBlock)
      return {keep, drop};
    Value anyDrop = warpAny(drop);
    Value anyKeep = warpAny(keep);
    Value partial = both(block.exact, both(anyKeep, anyDrop));
    auto ifPartial = scf::IfOp::create(b, loc, TypeRange{i1, i1}, partial,
                                       /*withElseRegion=*/true);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(ifPartial.thenBlock());
    scf::YieldOp::create(b, loc, ValueRange{keep, drop});
    b.setInsertionPointToStart(ifPartial.elseBlock());
    auto [restKeep, restDrop] = boxesFrom(first + 32, keep, drop);
    scf::YieldOp::create(b, loc, ValueRange{restKeep, restDrop});
    return {ifPartial.getResult(0), ifPartial.getResult(1)};
  };
  auto [keep, drop] = boxesFrom(0, Value(), Value());
  scf::YieldOp::create(b, loc, ValueRange{keep, drop});
  return {ifDecided.getResult(0), ifDecided.getResult(1)};
}

Value GpuListBuilder::build(Value scratchBase) {
  b.setInsertionPoint(op);
  sizes();
  SmallVector<Side> sides = {Side::Kv};
  if (qSide)
    sides.push_back(Side::Q);
  Value one = c(1);
  Value bhCount = mul(batch, heads);
  // Scratch words from scratchBase on: a keep/drop word per block, then
  // each side's counts and indices of the partial and of the full lists.
  Value blocks = mul(mul(bhCount, qBlocks), kvBlocks);
  Value bitsAt = scratchBase;
  Value next = add(bitsAt, blocks);
  SmallVector<ListWords> at;
  for (Side side : sides) {
    Value lineCount = mul(bhCount, lines(side));
    ListWords words;
    for (int64_t list : {0, 1}) {
      words.counts[list] = next;
      words.indices[list] = add(next, lineCount);
      next = add(words.indices[list], blocks);
    }
    at.push_back(words);
  }
  auto words = MemRefType::get({ShapedType::kDynamic}, i32);
  auto scratchOp = WorkspaceOp::create(b, loc, words, next);
  scratchOp.setScratch(true);
  Value scratch = scratchOp;
  // Each side's counters of the blocks decided per line, kv side first.
  SmallVector<Value> countersAt = {c(0)};
  if (qSide)
    countersAt.push_back(mul(bhCount, qBlocks));
  Value counters = WorkspaceOp::create(
      b, loc, words, add(countersAt.back(), mul(bhCount, lines(sides.back()))));

  // A warp per (kv-block, q-block, b * h), 32 (or 1) of a q-block's
  // kv-blocks in a block of threads; lane 0 writes whether the block keeps
  // (bit 0) and drops (bit 1). After a barrier, the block of threads counts
  // its blocks in their line once, and the one that counts the line's last
  // compacts it: one atomic per block of threads and none where a line
  // fits one, as launching one-warp blocks and each warp's same-address
  // atomic cost more than deciding the blocks. The q side's lines
  // (columns) are counted warp by warp, and the warp that decides a
  // column's last block compacts it.
  {
    int64_t reads = 0;
    op.getMaskMod().walk([&](tensor::ExtractOp) { ++reads; });
    Value warps = c(reads <= 2 ? kWarpsPerLine : kWarpsPerLineHeavy);
    Value chunks = arith::CeilDivUIOp::create(b, loc, kvBlocks, warps);
    // At least one block along each side, so that the lines of a side
    // whose other has no blocks (a length of 0) are still written, empty.
    Value kvGrid = arith::MaxUIOp::create(b, loc, chunks, one);
    Value qGrid = arith::MaxUIOp::create(b, loc, qBlocks, one);
    auto launch = gpu::LaunchOp::create(b, loc, kvGrid, qGrid, bhCount,
                                        mul(c(32), warps), one, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value chunk = launch.getBlockIds().x, qb = launch.getBlockIds().y;
    Value bh = launch.getBlockIds().z;
    Value lane = arith::RemUIOp::create(b, loc, launch.getThreadIds().x, c(32));
    Value warp = arith::DivUIOp::create(b, loc, launch.getThreadIds().x, c(32));
    Value chunkStart = mul(chunk, warps);
    Value kb = add(chunkStart, warp);
    Value zero = c(0);
    auto cmp = [&](arith::CmpIPredicate predicate, Value x, Value y) {
      return arith::CmpIOp::create(b, loc, predicate, x, y).getResult();
    };
    auto both = [&](Value x, Value y) {
      return arith::AndIOp::create(b, loc, x, y).getResult();
    };
    using arith::CmpIPredicate;
    Value isLeader = cmp(CmpIPredicate::eq, lane, zero);
    Value isFirstWarp = cmp(CmpIPredicate::eq, warp, zero);
    // A block's line on each side: its q-block's row, its kv-block's column.
    auto lineOf = [&](Side side) { return side == Side::Kv ? qb : kb; };
    Value hasQBlocks = cmp(CmpIPredicate::ugt, qBlocks, zero);
    auto inside = scf::IfOp::create(
        b, loc, both(cmp(CmpIPredicate::ugt, kvBlocks, zero), hasQBlocks),
        /*withElseRegion=*/true);
    // Outside, one of the sides has no blocks: the other's lines are empty.
    b.setInsertionPointToStart(inside.elseBlock());
    for (auto [i, side] : llvm::enumerate(sides)) {
      Value line = lineOf(side);
      Value writes = cmp(CmpIPredicate::ult, line, lines(side));
      // A kv-side line is every warp's of its block of threads.
      if (side == Side::Kv)
        writes = both(writes, isFirstWarp);
      auto empty = scf::IfOp::create(b, loc, writes);
      OpBuilder::InsertionGuard branch(b);
      b.setInsertionPointToStart(empty.thenBlock());
      compactLine(side, line, bh, lane, scratch, bitsAt, at[i]);
    }
    b.setInsertionPointToStart(inside.thenBlock());
    Value lineAt = add(mul(bh, qBlocks), qb);
    // Where `counting` (on lane 0 only, or nowhere), lane 0 runs
    // `leaderWrites` and adds `amount` decided blocks (1 when null) to the
    // line's counter, releasing what it wrote. The count before is
    // broadcast, so that the warp whose count completes the line's `total`
    // blocks compacts it on every lane (the compaction's ballots need all
    // 32) and then frees the counter for the next launch. Where no lane
    // counts, the line must be whole already.
    auto countInLine = [&](Side side, Value line, const ListWords &words,
                           Value counting, Value counter, Value amount,
                           Value total,
                           llvm::function_ref<void()> leaderWrites = {}) {
      auto count = scf::IfOp::create(b, loc, TypeRange{i32}, counting,
                                     /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard branch(b);
        b.setInsertionPointToStart(count.thenBlock());
        if (leaderWrites)
          leaderWrites();
        scf::YieldOp::create(
            b, loc,
            nvvm::acquireReleaseFetchAdd(b, loc, counters, counter, amount));
        b.setInsertionPointToStart(count.elseBlock());
        scf::YieldOp::create(b, loc, i32Const(0));
      }
      Value before = gpu::ShuffleOp::create(b, loc, count.getResult(0),
                                            /*offset=*/0, /*width=*/32,
                                            gpu::ShuffleMode::IDX)
                         .getShuffleResult();
      Value after =
          arith::AddIOp::create(b, loc, before, amount ? amount : i32Const(1));
      auto last = scf::IfOp::create(
          b, loc, cmp(CmpIPredicate::eq, after, asI32(total)));
      OpBuilder::InsertionGuard compact(b);
      b.setInsertionPointToStart(last.thenBlock());
      // Lane 0 acquired for the warp; as a grid barrier follows one
      // thread's acquire with a block barrier, a warp barrier orders every
      // lane's reads after it.
      NVVM::SyncWarpOp::create(b, loc, i32Const(-1));
      compactLine(side, line, bh, lane, scratch, bitsAt, words);
      auto reset = scf::IfOp::create(b, loc, counting);
      b.setInsertionPointToStart(reset.thenBlock());
      memref::StoreOp::create(b, loc, i32Const(0), counters,
                              ValueRange{counter});
    };
    auto decides =
        scf::IfOp::create(b, loc, cmp(CmpIPredicate::ult, kb, kvBlocks));
    {
      OpBuilder::InsertionGuard branch(b);
      b.setInsertionPointToStart(decides.thenBlock());
      Value bi = arith::DivUIOp::create(b, loc, bh, heads);
      Value hi = arith::RemUIOp::create(b, loc, bh, heads);
      Value q0 = mul(qb, c(qBlock)), kv0 = mul(kb, c(kvBlock));
      Value qLimit = arith::MinUIOp::create(b, loc, add(q0, c(qBlock)), qLen);
      Value kvLimit =
          arith::MinUIOp::create(b, loc, add(kv0, c(kvBlock)), kvLen);
      auto [keep, drop] =
          bounded ? decideBlockInWarp(bi, hi, lane, q0, qLimit, kv0, kvLimit)
                  : scanBox(bi, hi, q0, qLimit, qBlock, kv0, kvLimit, kvBlock,
                            lane, 32, kUnrollScanRows);
      auto vote = [&](Value flag) {
        return arith::ExtUIOp::create(b, loc, i32, warpAny(flag));
      };
      Value one = i32Const(1);
      Value dropBit = arith::ShLIOp::create(b, loc, vote(drop), one);
      Value bits = arith::OrIOp::create(b, loc, vote(keep), dropBit);
      // The leader writes the word and, with the q side, counts the block in
      // its column, releasing the word to the warp that will read it.
      Value wordAt = add(bitsAt, add(mul(lineAt, kvBlocks), kb));
      auto writeWord = [&] {
        memref::StoreOp::create(b, loc, bits, scratch, ValueRange{wordAt});
      };
      if (qSide) {
        Value column = add(countersAt[1], add(mul(bh, kvBlocks), kb));
        countInLine(Side::Q, kb, at[1], isLeader, column, /*amount=*/Value(),
                    qBlocks, writeWord);
      } else {
        auto leader = scf::IfOp::create(b, loc, isLeader);
        OpBuilder::InsertionGuard write(b);
        b.setInsertionPointToStart(leader.thenBlock());
        writeWord();
      }
    }
    // Every word of the block of threads is written.
    gpu::BarrierOp::create(b, loc);
    auto firstWarp = scf::IfOp::create(b, loc, isFirstWarp);
    {
      OpBuilder::InsertionGuard branch(b);
      b.setInsertionPointToStart(firstWarp.thenBlock());
      Value decided = arith::MinUIOp::create(
          b, loc, warps, arith::SubIOp::create(b, loc, kvBlocks, chunkStart));
      // A line of one block of threads is whole already; in a longer one,
      // lane 0 counts the block's kv-blocks in, releasing every word written
      // before the barrier.
      Value counting = both(isLeader, cmp(CmpIPredicate::ugt, chunks, one));
      Value counter = add(countersAt[0], lineAt);
      countInLine(Side::Kv, qb, at[0], counting, counter, asI32(decided),
                  kvBlocks);
    }
    b.setInsertionPointAfter(inside);
    gpu::TerminatorOp::create(b, loc);
  }

  // The lists as tensors over the scratch buffer.
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
            scratch, isIndices ? at[i].indices[list] : at[i].counts[list],
            shape, strides);
        lists.push_back(bufferization::ToTensorOp::create(
            b, loc,
            RankedTensorType::get(
                SmallVector<int64_t>(shape.size(), ShapedType::kDynamic), i32),
            view, /*restrict=*/b.getUnitAttr(), /*writable=*/UnitAttr()));
      }
    }
  }

  replace(lists);
  return next;
}

namespace {

struct BlockMasksToGpuPass
    : attn::impl::BlockMasksToGpuBase<BlockMasksToGpuPass> {
  using BlockMasksToGpuBase::BlockMasksToGpuBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<CreateBlockMaskOp> ops;
    module.walk([&](CreateBlockMaskOp op) { ops.push_back(op); });
    RegionChecks checks =
        boundsChecks ? RegionChecks::DeviceTrap : RegionChecks::None;
    IRRewriter rewriter(&getContext());
    forwardGivenLists(module, rewriter);
    // Each function's lists follow one another in the scratch buffer, and
    // live until the function returns.
    DenseMap<Operation *, Value> scratchEnd;
    for (CreateBlockMaskOp op : ops) {
      auto func = dyn_cast<func::FuncOp>(op->getParentOp());
      if (!func) {
        op.emitOpError() << "must be at the top level of a function to be "
                            "built on the GPU";
        return signalPassFailure();
      }
      Value &end = scratchEnd[func];
      if (!end) {
        rewriter.setInsertionPoint(op);
        end = arith::ConstantIndexOp::create(rewriter, op.getLoc(), 0);
      }
      end = GpuListBuilder(rewriter, op, checks, boundBlocks).build(end);
    }
  }
};

} // namespace
