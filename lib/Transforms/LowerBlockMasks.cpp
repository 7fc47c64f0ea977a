//===- LowerBlockMasks.cpp - the kv-block lists of create_block_mask ------===//
//
// attn.create_block_mask -> code that scans each block with the mask_mod
// and appends it to the partial or full list -> attn.make_block_mask of the
// lists. On the CPU that code is host loops; on the GPU it is kernels on
// the runtime's workspace. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/FlashLoop.h"
#include "AttnDialect/Transforms/MaskBounds.h"
#include "AttnDialect/Transforms/Passes.h"
#include "AttnDialect/Transforms/RegionInliner.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERBLOCKMASKS
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

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
/// Box rows up to this many positions are unrolled.
constexpr int64_t kUnrolledColumns = 16;
/// Columns a bounded box's scan evaluates at once. The scan is rare, but its
/// registers set those of the whole kernel, whose occupancy is its speed.
constexpr int64_t kBoxScanColumns = 4;

/// The two sides of a block mask: rows of q-blocks that list kv-blocks (what
/// a forward pass walks) and columns of kv-blocks that list q-blocks (the
/// transposed lists a backward pass walks).
enum class Side { Kv, Q };

/// Builds the lists of one attn.create_block_mask.
class ListBuilder {
public:
  ListBuilder(RewriterBase &b, CreateBlockMaskOp op, RegionChecks checks,
              bool useBounds)
      : b(b), loc(op.getLoc()), op(op), regions(op, checks),
        qBlock(op.getType().getQBlock()), kvBlock(op.getType().getKvBlock()),
        i32(b.getI32Type()),
        bounded(useBounds && canBoundMaskMod(op.getMaskMod())) {
    for (Operation *user : op->getUsers())
      if (auto field = dyn_cast<BlockMaskFieldOp>(user))
        qSide |= static_cast<int64_t>(field.getField()) > 3;
  }

  /// Replaces the op by host loops that fill freshly allocated lists.
  void buildOnHost();
  /// Replaces the op by kernels that fill lists in the workspace, and
  /// zeroes them before `end`.
  void buildOnDevice(Operation *end);

private:
  /// Where one side's lists start in the workspace, in words.
  struct ListWords {
    Value counts[2], indices[2]; // partial, full
  };

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value asI32(Value v) { return arith::IndexCastOp::create(b, loc, i32, v); }
  Value inc(Value count, Value flag) {
    return add(count, arith::IndexCastOp::create(
                          b, loc, b.getIndexType(),
                          arith::ExtUIOp::create(b, loc, i32, flag)));
  }
  void sizes();
  /// Lines of a side per (b, h) (q-blocks for the kv side), and the blocks
  /// each line lists from (kv-blocks for the kv side).
  Value lines(Side side) { return side == Side::Kv ? qBlocks : kvBlocks; }
  Value lineLength(Side side) { return side == Side::Kv ? kvBlocks : qBlocks; }
  /// Whether mask_mod keeps (any) and drops (any) positions of the box
  /// [qStart, qLimit) x [kvStart, kvLimit) of (bi, hi), its limits inside
  /// the problem: rows qStart + 0, 1, ..., rows - 1 and columns kvStart +
  /// first, first + step, ..., below cols, positions past a limit clamped
  /// and not counted; the row loop unrolled by `unrollRows`.
  std::pair<Value, Value> scanBox(Value bi, Value hi, Value qStart,
                                  Value qLimit, int64_t rows, Value kvStart,
                                  Value kvLimit, int64_t cols, Value first,
                                  int64_t step, int64_t unrollRows = 1);
  /// The same for the box [qStart, qEnd) x [kvStart, kvEnd), not empty and
  /// inside the problem: dynamic trip counts, rows one at a time.
  std::pair<Value, Value> scanInside(Value bi, Value hi, Value qStart,
                                     Value qEnd, Value kvStart, Value kvEnd);
  /// The same for a box of at most rows x cols positions, possibly empty,
  /// decided by the mask_mod's bounds (MaskBounds.h) where they tell and
  /// position by position where they do not. With `inWarp` (a thread's box
  /// of a block, all lanes of the warp here), a box is not scanned when the
  /// warp's other boxes already keep and drop: the block is partial
  /// whatever it holds, and the result says it keeps and drops.
  std::pair<Value, Value> decideBox(Value bi, Value hi, Value qStart,
                                    Value qLimit, int64_t rows, Value kvStart,
                                    Value kvLimit, int64_t cols,
                                    bool inWarp = false);
  /// (keep, drop) of block (qb, kb) of (bi, hi), whole.
  std::pair<Value, Value> scanBlock(Value bi, Value hi, Value qb, Value kb);
  /// Appends `block` to the partial or full list of its line, as `keep` and
  /// `drop` say; `store(list, position, value)` writes a list. Returns the
  /// new (partial, full) counts.
  std::pair<Value, Value>
  append(Value keep, Value drop, Value block, Value partial, Value full,
         function_ref<void(int64_t, Value, Value)> store);
  /// Host loops that scan every block of `side`'s lines into `buffers`
  /// (counts, indices, full counts, full indices).
  void fillOnHost(Side side, ArrayRef<Value> buffers);
  /// A kernel of one warp per line of `side` that reads the line's
  /// keep/drop words 32 at a time (zeroing them when `clearBits`) and
  /// appends its partial and full blocks in order: a ballot and a
  /// population count give each lane its place in the list.
  void compactOnDevice(Side side, Value workspace, const ListWords &at,
                       bool clearBits);
  /// The result: make_block_mask of the kv-side lists, and the field reads
  /// replaced by their lists (kv side, then q side).
  void replace(ArrayRef<Value> lists);

  RewriterBase &b;
  Location loc;
  CreateBlockMaskOp op;
  RegionInliner regions;
  int64_t qBlock, kvBlock;
  Type i32;
  /// Whether blocks are decided by the mask_mod's bounds first.
  bool bounded;
  /// Whether a field read asks for the q-side lists.
  bool qSide = false;
  Value batch, heads, qLen, kvLen, qBlocks, kvBlocks;
};

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
    auto rowLoop =
        scf::ForOp::create(b, loc, c(0), c(rows), c(1), ValueRange{no, no});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(rowLoop.getBody());
      Value row = add(qStart, rowLoop.getInductionVar());
      Value q = atEdge ? arith::MinUIOp::create(b, loc, row, lastQ) : row;
      auto columnLoop = scf::ForOp::create(b, loc, first, c(cols), c(step),
                                           rowLoop.getRegionIterArgs());
      b.setInsertionPointToStart(columnLoop.getBody());
      Value column = add(kvStart, columnLoop.getInductionVar());
      Value kv =
          atEdge ? arith::MinUIOp::create(b, loc, column, lastKv) : column;
      Value keep = regions.maskMod(b, loc, bi, hi, q, kv);
      Value drop = arith::XOrIOp::create(b, loc, keep, yes);
      Value inside = atEdge ? arith::AndIOp::create(b, loc, less(row, qLimit),
                                                    less(column, kvLimit))
                            : yes;
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
  Value interior = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                            add(qStart, c(rows)), qLimit),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                            add(kvStart, c(cols)), kvLimit));
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
                                               int64_t cols, bool inWarp) {
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
  auto boxBounds =
      scf::IfOp::create(b, loc, TypeRange{i1, i1, i1},
                        both(less(qStart, qLimit), less(kvStart, kvLimit)),
                        /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(boxBounds.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{no, no, yes});
    b.setInsertionPointToStart(boxBounds.thenBlock());
    Value one = c(1);
    MaskBounds bounds =
        boundMaskMod(b, loc, op.getMaskMod(), bi, hi, qStart,
                     arith::SubIOp::create(b, loc, qLimit, one), kvStart,
                     arith::SubIOp::create(b, loc, kvLimit, one), rows * cols);
    scf::YieldOp::create(
        b, loc, ValueRange{bounds.mayKeep, bounds.mayDrop, bounds.exact});
  }
  Value mayKeep = boxBounds.getResult(0), mayDrop = boxBounds.getResult(1);
  // Position by position only when the bounds cannot tell.
  Value unknown = both(mayKeep, mayDrop);
  Value scanIt = unknown;
  if (inWarp) {
    Value all = arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1);
    auto warpAny = [&](Value flag) {
      return NVVM::VoteSyncOp::create(b, loc, i1, all, flag,
                                      NVVM::VoteSyncKind::any)
          .getResult();
    };
    Value known = negate(unknown);
    Value warpPartial =
        both(warpAny(both(known, mayKeep)), warpAny(both(known, mayDrop)));
    // Boxes the bounds gave up on are scanned all the same, so that their
    // reads are checked.
    scanIt = both(unknown,
                  arith::OrIOp::create(b, loc, negate(boxBounds.getResult(2)),
                                       negate(warpPartial)));
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
  auto make = MakeBlockMaskOp::create(b, loc, op.getType(), lists[0], lists[1],
                                      lists[2], lists[3]);
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
      seen = decideBox(
          bi, hi, qStart,
          arith::MinUIOp::create(b, loc, add(qStart, c(rows)), qLimit), rows,
          kvStart,
          arith::MinUIOp::create(b, loc, add(kvStart, c(cols)), kvLimit), cols,
          /*inWarp=*/true);
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

struct LowerBlockMasksPass
    : attn::impl::LowerBlockMasksBase<LowerBlockMasksPass> {
  using LowerBlockMasksBase::LowerBlockMasksBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool onHost = target == "cpu";
    if (!onHost && target != "gpu") {
      module.emitError() << "attn-lower-block-masks: target must be cpu or "
                            "gpu, not '"
                         << target.getValue() << "'";
      return signalPassFailure();
    }
    SmallVector<CreateBlockMaskOp> ops;
    module.walk([&](CreateBlockMaskOp op) { ops.push_back(op); });
    RegionChecks checks = !boundsChecks ? RegionChecks::None
                          : onHost      ? RegionChecks::HostReport
                                        : RegionChecks::DeviceTrap;
    if (!ops.empty() && checks == RegionChecks::HostReport &&
        failed(declareRegionErrorFunction(module, getArgument())))
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    // The kv-side fields of an attn.make_block_mask are the lists it was
    // given.
    module.walk([&](BlockMaskFieldOp field) {
      auto make = field.getBlockMask().getDefiningOp<MakeBlockMaskOp>();
      if (!make)
        return;
      Value given[] = {make.getKvNumBlocks(), make.getKvIndices(),
                       make.getFullKvNumBlocks(), make.getFullKvIndices()};
      auto index = static_cast<int64_t>(field.getField());
      // The q side (4 to 7) was not given.
      Value list = index < 4 ? given[index] : Value();
      if (!list)
        return;
      rewriter.setInsertionPoint(field);
      rewriter.replaceOpWithNewOp<tensor::CastOp>(field, field.getType(), list);
    });
    for (CreateBlockMaskOp op : ops) {
      if (onHost) {
        ListBuilder(rewriter, op, checks, boundBlocks).buildOnHost();
        continue;
      }
      // The lists live until the function returns.
      auto func = dyn_cast<func::FuncOp>(op->getParentOp());
      if (!func) {
        op.emitOpError() << "must be at the top level of a function to be "
                            "built on the GPU";
        return signalPassFailure();
      }
      ListBuilder(rewriter, op, checks, boundBlocks)
          .buildOnDevice(op->getBlock()->getTerminator());
    }
  }
};

} // namespace
