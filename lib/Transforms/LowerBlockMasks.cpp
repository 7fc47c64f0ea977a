//===- LowerBlockMasks.cpp - the kv-block lists of create_block_mask ------===//
//
// attn.create_block_mask -> host loops that scan each block with the
// mask_mod and append it to the partial or full list -> attn.make_block_mask
// of the lists. attn-block-masks-to-gpu builds the same lists in a kernel
// (Conversion/BlockMasksToGpu). See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/BlockMaskLists.h"
#include "AttnDialect/Transforms/FlashLoop.h"
#include "AttnDialect/Transforms/MaskBounds.h"
#include "AttnDialect/Transforms/Passes.h"
#include "AttnDialect/Transforms/RegionInliner.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERBLOCKMASKS
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::block_masks;

// Operands that build ops are built one per statement in this file: C++
// leaves the order of argument evaluation open, and the IR must not depend
// on the compiler.

namespace {

/// Box rows up to this many positions are unrolled.
constexpr int64_t kUnrolledColumns = 16;
/// Columns a bounded box's scan evaluates at once. The scan is rare, but its
/// registers set those of the whole kernel, whose occupancy is its speed.
constexpr int64_t kBoxScanColumns = 4;

} // namespace

void ListBuilder::sizes() {
  batch = op.getBatch();
  heads = op.getHeads();
  qLen = op.getQLen();
  kvLen = op.getKvLen();
  qBlocks = arith::CeilDivUIOp::create(b, loc, qLen, c(qBlock));
  kvBlocks = arith::CeilDivUIOp::create(b, loc, kvLen, c(kvBlock));
}

std::pair<Value, Value> ListBuilder::scanBox(Value bi, Value hi, Value qStart,
                                             Value qLimit, int64_t rows,
                                             Value kvStart, Value kvLimit,
                                             int64_t cols, Value first,
                                             int64_t step, int64_t unrollRows) {
  Value lastQ = arith::SubIOp::create(b, loc, qLimit, c(1));
  Value lastKv = arith::SubIOp::create(b, loc, kvLimit, c(1));
  Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  auto less = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  };
  // Row by row, the columns first, first + step, ...: neighbouring threads
  // read neighbouring kv positions, as a captured tensor is laid out. The
  // trip counts are the box's static sizes, whatever the limits, so that
  // rows unroll and their reads overlap. In a box that crosses a limit,
  // positions past it are clamped to the last one inside (the mask_mod sees
  // only positions inside the problem) and do not count; the other boxes
  // skip that arithmetic.
  auto scanRows = [&](bool atEdge) -> scf::ForOp {
    Value rowStep = c(1);
    Value rowEnd = c(rows);
    auto rowLoop =
        scf::ForOp::create(b, loc, c(0), rowEnd, rowStep, ValueRange{no, no});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(rowLoop.getBody());
      Value row = add(qStart, rowLoop.getInductionVar());
      Value q = atEdge ? arith::MinUIOp::create(b, loc, row, lastQ) : row;
      Value columnStep = c(step);
      auto columnLoop = scf::ForOp::create(b, loc, first, c(cols), columnStep,
                                           rowLoop.getRegionIterArgs());
      b.setInsertionPointToStart(columnLoop.getBody());
      Value column = add(kvStart, columnLoop.getInductionVar());
      Value kv =
          atEdge ? arith::MinUIOp::create(b, loc, column, lastKv) : column;
      Value keep = regions.maskMod(b, loc, bi, hi, q, kv);
      Value drop = arith::XOrIOp::create(b, loc, keep, yes);
      Value inside = yes;
      if (atEdge) {
        Value columnInside = less(column, kvLimit);
        inside = arith::AndIOp::create(b, loc, less(row, qLimit), columnInside);
      }
      ValueRange seen = columnLoop.getRegionIterArgs();
      auto seenIf = [&](Value seenSoFar, Value now) -> Value {
        return arith::OrIOp::create(b, loc, seenSoFar,
                                    arith::AndIOp::create(b, loc, now, inside));
      };
      scf::YieldOp::create(
          b, loc, ValueRange{seenIf(seen[0], keep), seenIf(seen[1], drop)});
      b.setInsertionPointAfter(columnLoop);
      scf::YieldOp::create(b, loc, columnLoop.getResults());
      // Whole rows of a narrow box at once: its captured reads overlap.
      if (cols <= kUnrolledColumns && step == 1 && isConstantIntValue(first, 0))
        (void)loopUnrollByFactor(columnLoop, cols);
    }
    if (unrollRows > 1)
      (void)loopUnrollByFactor(rowLoop, unrollRows);
    return rowLoop;
  };
  Value columnsInterior = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ule, add(kvStart, c(cols)), kvLimit);
  Value interior = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                            add(qStart, c(rows)), qLimit),
      columnsInterior);
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{b.getI1Type(), b.getI1Type()},
                                interior, /*withElseRegion=*/true);
  for (bool atEdge : {false, true}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(atEdge ? ifOp.elseBlock() : ifOp.thenBlock());
    scf::YieldOp::create(b, loc, scanRows(atEdge).getResults());
  }
  return {ifOp.getResult(0), ifOp.getResult(1)};
}

std::pair<Value, Value> ListBuilder::scanInside(Value bi, Value hi,
                                                Value qStart, Value qEnd,
                                                Value kvStart, Value kvEnd) {
  Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  auto rowLoop =
      scf::ForOp::create(b, loc, qStart, qEnd, c(1), ValueRange{no, no});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rowLoop.getBody());
  auto columnLoop = scf::ForOp::create(b, loc, kvStart, kvEnd, c(1),
                                       rowLoop.getRegionIterArgs());
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(columnLoop.getBody());
    Value keep = regions.maskMod(b, loc, bi, hi, rowLoop.getInductionVar(),
                                 columnLoop.getInductionVar());
    ValueRange seen = columnLoop.getRegionIterArgs();
    scf::YieldOp::create(
        b, loc,
        ValueRange{
            arith::OrIOp::create(b, loc, seen[0], keep),
            arith::OrIOp::create(b, loc, seen[1],
                                 arith::XOrIOp::create(b, loc, keep, yes))});
  }
  scf::YieldOp::create(b, loc, columnLoop.getResults());
  (void)loopUnrollByFactor(columnLoop, kBoxScanColumns);
  return {rowLoop.getResult(0), rowLoop.getResult(1)};
}

std::pair<Value, Value> ListBuilder::decideBox(Value bi, Value hi, Value qStart,
                                               Value qLimit, int64_t rows,
                                               Value kvStart, Value kvLimit,
                                               int64_t cols,
                                               const SharedReads *shared) {
  Type i1 = b.getI1Type();
  auto less = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  };
  auto both = [&](Value x, Value y) {
    return arith::AndIOp::create(b, loc, x, y).getResult();
  };
  Value no = arith::ConstantIntOp::create(b, loc, i1, 0);
  Value yes = arith::ConstantIntOp::create(b, loc, i1, 1);
  auto negate = [&](Value x) {
    return arith::XOrIOp::create(b, loc, x, yes).getResult();
  };
  // An empty box keeps and drops nothing, exactly.
  Value columns = less(kvStart, kvLimit);
  Value nonEmpty = both(less(qStart, qLimit), columns);
  Value qLast = arith::SubIOp::create(b, loc, qLimit, c(1));
  Value kvLast = arith::SubIOp::create(b, loc, kvLimit, c(1));
  Value mayKeep, mayDrop, exact;
  if (shared) {
    // Every lane bounds a box, so that the lanes can share their reads: an
    // empty one (past the problem's edge) its block's last row or column,
    // whose result it then drops. The limits of a block are at least 1.
    Value kvFirst = arith::MinUIOp::create(b, loc, kvStart, kvLast);
    Value qFirst = arith::MinUIOp::create(b, loc, qStart, qLast);
    MaskBounds bounds =
        boundMaskMod(b, loc, op.getMaskMod(), bi, hi, qFirst, qLast, kvFirst,
                     kvLast, rows * cols, shared);
    mayKeep = both(nonEmpty, bounds.mayKeep);
    mayDrop = both(nonEmpty, bounds.mayDrop);
    exact = arith::OrIOp::create(b, loc, negate(nonEmpty), bounds.exact);
  } else {
    auto boxBounds = scf::IfOp::create(b, loc, TypeRange{i1, i1, i1}, nonEmpty,
                                       /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(boxBounds.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{no, no, yes});
    b.setInsertionPointToStart(boxBounds.thenBlock());
    MaskBounds bounds = boundMaskMod(b, loc, op.getMaskMod(), bi, hi, qStart,
                                     qLast, kvStart, kvLast, rows * cols);
    scf::YieldOp::create(
        b, loc, ValueRange{bounds.mayKeep, bounds.mayDrop, bounds.exact});
    mayKeep = boxBounds.getResult(0);
    mayDrop = boxBounds.getResult(1);
    exact = boxBounds.getResult(2);
  }
  // Position by position only when the bounds cannot tell.
  Value unknown = both(mayKeep, mayDrop);
  Value scanIt = unknown;
  if (shared) {
    Value known = negate(unknown);
    Value warpDrops = warpAny(both(known, mayDrop));
    Value warpKeeps = warpAny(both(known, mayKeep));
    Value warpPartial = both(warpKeeps, warpDrops);
    // Boxes the bounds gave up on are scanned all the same, so that their
    // reads are checked.
    Value undecided = negate(warpPartial);
    Value gaveUp = negate(exact);
    scanIt = both(unknown, arith::OrIOp::create(b, loc, gaveUp, undecided));
  }
  auto scan = scf::IfOp::create(b, loc, TypeRange{i1, i1}, scanIt,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(scan.thenBlock());
  auto [keep, drop] = scanInside(bi, hi, qStart, qLimit, kvStart, kvLimit);
  scf::YieldOp::create(b, loc, ValueRange{keep, drop});
  b.setInsertionPointToStart(scan.elseBlock());
  scf::YieldOp::create(b, loc, ValueRange{mayKeep, mayDrop});
  b.setInsertionPointAfter(scan);
  return {scan.getResult(0), scan.getResult(1)};
}

std::pair<Value, Value> ListBuilder::scanBlock(Value bi, Value hi, Value qb,
                                               Value kb) {
  Value q0 = mul(qb, c(qBlock)), kv0 = mul(kb, c(kvBlock));
  Value qLimit = arith::MinUIOp::create(b, loc, add(q0, c(qBlock)), qLen);
  Value kvLimit = arith::MinUIOp::create(b, loc, add(kv0, c(kvBlock)), kvLen);
  if (bounded)
    return decideBox(bi, hi, q0, qLimit, qBlock, kv0, kvLimit, kvBlock);
  return scanBox(bi, hi, q0, qLimit, qBlock, kv0, kvLimit, kvBlock, c(0), 1);
}

std::pair<Value, Value>
ListBuilder::append(Value keep, Value drop, Value block, Value partial,
                    Value full,
                    function_ref<void(int64_t, Value, Value)> store) {
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  Value isPartial = arith::AndIOp::create(b, loc, keep, drop);
  Value isFull = arith::AndIOp::create(
      b, loc, keep, arith::XOrIOp::create(b, loc, drop, yes));
  for (auto [list, flag, count] :
       {std::tuple{0, isPartial, partial}, std::tuple{1, isFull, full}}) {
    auto ifOp = scf::IfOp::create(b, loc, flag);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    store(list, count, asI32(block));
  }
  return {inc(partial, isPartial), inc(full, isFull)};
}

void ListBuilder::replace(ArrayRef<Value> lists) {
  // The q side where some field read asks for it.
  auto qList = [&](int64_t i) { return lists.size() > 4 ? lists[i] : Value(); };
  auto make = MakeBlockMaskOp::create(b, loc, op.getType(), lists[0], lists[1],
                                      lists[2], lists[3], qList(4), qList(5),
                                      qList(6), qList(7));
  for (Operation *user : llvm::make_early_inc_range(op->getUsers())) {
    auto field = dyn_cast<BlockMaskFieldOp>(user);
    if (!field)
      continue;
    Value list = lists[static_cast<int64_t>(field.getField())];
    b.setInsertionPoint(field);
    b.replaceOp(field, tensor::CastOp::create(b, loc, field.getType(), list));
  }
  b.replaceOp(op, make.getResult());
}

void ListBuilder::fillOnHost(Side side, ArrayRef<Value> buffers) {
  OpBuilder::InsertionGuard guard(b);
  Value zero = c(0), one = c(1);
  auto batchLoop = scf::ForOp::create(b, loc, zero, batch, one);
  b.setInsertionPointToStart(batchLoop.getBody());
  auto headLoop = scf::ForOp::create(b, loc, zero, heads, one);
  b.setInsertionPointToStart(headLoop.getBody());
  auto lineLoop = scf::ForOp::create(b, loc, zero, lines(side), one);
  b.setInsertionPointToStart(lineLoop.getBody());
  Value bi = batchLoop.getInductionVar(), hi = headLoop.getInductionVar(),
        line = lineLoop.getInductionVar();
  auto blockLoop = scf::ForOp::create(b, loc, zero, lineLength(side), one,
                                      ValueRange{zero, zero});
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(blockLoop.getBody());
    Value block = blockLoop.getInductionVar();
    auto [keep, drop] = side == Side::Kv ? scanBlock(bi, hi, line, block)
                                         : scanBlock(bi, hi, block, line);
    ValueRange counts = blockLoop.getRegionIterArgs();
    auto [partial, full] =
        append(keep, drop, block, counts[0], counts[1],
               [&](int64_t list, Value position, Value value) {
                 memref::StoreOp::create(b, loc, value, buffers[2 * list + 1],
                                         ValueRange{bi, hi, line, position});
               });
    scf::YieldOp::create(b, loc, ValueRange{partial, full});
  }
  for (int64_t list : {0, 1})
    memref::StoreOp::create(b, loc, asI32(blockLoop.getResult(list)),
                            buffers[2 * list], ValueRange{bi, hi, line});
}

void ListBuilder::buildOnHost() {
  b.setInsertionPoint(op);
  sizes();
  Value zeroI32 = arith::ConstantIntOp::create(b, loc, i32, 0);
  auto alloc = [&](ArrayRef<Value> dims) -> Value {
    auto type = MemRefType::get(
        SmallVector<int64_t>(dims.size(), ShapedType::kDynamic), i32);
    Value buffer = memref::AllocOp::create(b, loc, type, dims);
    // Entries past a line's count are 0, as FlexAttention's.
    linalg::FillOp::create(b, loc, zeroI32, buffer);
    return buffer;
  };
  SmallVector<Value> buffers;
  for (Side side : {Side::Kv, Side::Q}) {
    if (side == Side::Q && !qSide)
      break;
    SmallVector<Value> countDims = {batch, heads, lines(side)};
    SmallVector<Value> indexDims = {batch, heads, lines(side),
                                    lineLength(side)};
    SmallVector<Value> sideBuffers = {alloc(countDims), alloc(indexDims),
                                      alloc(countDims), alloc(indexDims)};
    fillOnHost(side, sideBuffers);
    buffers.append(sideBuffers);
  }
  SmallVector<Value> lists;
  for (Value buffer : buffers) {
    auto type = cast<MemRefType>(buffer.getType());
    lists.push_back(bufferization::ToTensorOp::create(
        b, loc, RankedTensorType::get(type.getShape(), type.getElementType()),
        buffer,
        /*restrict=*/b.getUnitAttr(), /*writable=*/b.getUnitAttr()));
  }
  replace(lists);
}

void block_masks::forwardGivenLists(ModuleOp module, RewriterBase &rewriter) {
  module.walk([&](BlockMaskFieldOp field) {
    auto make = field.getBlockMask().getDefiningOp<MakeBlockMaskOp>();
    if (!make)
      return;
    // A list it was not given (the q side, or full lists) stays for
    // attn-check-decomposed to report.
    Value list = make.getList(field.getField());
    if (!list)
      return;
    rewriter.setInsertionPoint(field);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(field, field.getType(), list);
  });
}

namespace {

struct LowerBlockMasksPass
    : attn::impl::LowerBlockMasksBase<LowerBlockMasksPass> {
  using LowerBlockMasksBase::LowerBlockMasksBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<CreateBlockMaskOp> ops;
    module.walk([&](CreateBlockMaskOp op) { ops.push_back(op); });
    RegionChecks checks =
        boundsChecks ? RegionChecks::HostReport : RegionChecks::None;
    if (!ops.empty() && checks == RegionChecks::HostReport &&
        failed(declareRegionErrorFunction(module, getArgument())))
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    forwardGivenLists(module, rewriter);
    for (CreateBlockMaskOp op : ops)
      ListBuilder(rewriter, op, checks, boundBlocks).buildOnHost();
  }
};

} // namespace
