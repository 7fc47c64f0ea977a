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
#include "AttnDialect/Transforms/Passes.h"
#include "AttnDialect/Transforms/RegionInliner.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERBLOCKMASKS
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kThreads = 128;

/// Builds the lists of one attn.create_block_mask.
class ListBuilder {
public:
  ListBuilder(RewriterBase &b, CreateBlockMaskOp op, RegionChecks checks)
      : b(b), loc(op.getLoc()), op(op), regions(op, checks),
        qBlock(op.getType().getQBlock()), kvBlock(op.getType().getKvBlock()),
        i32(b.getI32Type()) {}

  /// Replaces the op by host loops that fill freshly allocated lists.
  void buildOnHost();
  /// Replaces the op by kernels that fill lists in the workspace, and
  /// zeroes them before `end`.
  void buildOnDevice(Operation *end);

private:
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
  /// Whether mask_mod keeps (any) and drops (any) positions of block
  /// (qb, kb) of (bi, hi), over its elements first, first + step, ... inside
  /// the problem.
  std::pair<Value, Value> scanBlock(Value bi, Value hi, Value qb, Value kb,
                                    Value first, int64_t step);
  /// Appends kv-block `kb` to the partial or full list of its row, as
  /// `keep` and `drop` say; `store(list, position, value)` writes a list.
  /// Returns the new (partial, full) counts.
  std::pair<Value, Value>
  append(Value keep, Value drop, Value kb, Value partial, Value full,
         function_ref<void(int64_t, Value, Value)> store);
  /// The result: make_block_mask of the four lists, and the field reads
  /// replaced by them.
  void replace(ArrayRef<Value> lists);

  RewriterBase &b;
  Location loc;
  CreateBlockMaskOp op;
  RegionInliner regions;
  int64_t qBlock, kvBlock;
  Type i32;
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

std::pair<Value, Value> ListBuilder::scanBlock(Value bi, Value hi, Value qb,
                                               Value kb, Value first,
                                               int64_t step) {
  Value q0 = mul(qb, c(qBlock)), kv0 = mul(kb, c(kvBlock));
  Value rows = arith::MinUIOp::create(b, loc, c(qBlock),
                                      arith::SubIOp::create(b, loc, qLen, q0));
  Value cols = arith::MinUIOp::create(
      b, loc, c(kvBlock), arith::SubIOp::create(b, loc, kvLen, kv0));
  Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  // Consecutive elements run along kv, as a captured tensor is laid out.
  auto loop = scf::ForOp::create(b, loc, first, mul(rows, cols), c(step),
                                 ValueRange{no, no});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value e = loop.getInductionVar();
  Value q = add(q0, arith::DivUIOp::create(b, loc, e, cols));
  Value kv = add(kv0, arith::RemUIOp::create(b, loc, e, cols));
  Value keep = regions.maskMod(b, loc, bi, hi, q, kv);
  Value drop = arith::XOrIOp::create(b, loc, keep, yes);
  ValueRange seen = loop.getRegionIterArgs();
  scf::YieldOp::create(
      b, loc,
      ValueRange{arith::OrIOp::create(b, loc, seen[0], keep).getResult(),
                 arith::OrIOp::create(b, loc, seen[1], drop).getResult()});
  return {loop.getResult(0), loop.getResult(1)};
}

std::pair<Value, Value>
ListBuilder::append(Value keep, Value drop, Value kb, Value partial, Value full,
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
    store(list, count, asI32(kb));
  }
  return {inc(partial, isPartial), inc(full, isFull)};
}

void ListBuilder::replace(ArrayRef<Value> lists) {
  auto make = MakeBlockMaskOp::create(b, loc, op.getType(), lists[0], lists[1],
                                      lists[2], lists[3]);
  for (Operation *user : llvm::make_early_inc_range(op->getUsers())) {
    auto field = dyn_cast<BlockMaskFieldOp>(user);
    if (!field || static_cast<int64_t>(field.getField()) > 3)
      continue;
    Value list = lists[static_cast<int64_t>(field.getField())];
    b.setInsertionPoint(field);
    b.replaceOp(field, tensor::CastOp::create(b, loc, field.getType(), list));
  }
  b.replaceOp(op, make.getResult());
}

void ListBuilder::buildOnHost() {
  b.setInsertionPoint(op);
  sizes();
  Value zero = c(0), one = c(1);
  Value zeroI32 = arith::ConstantIntOp::create(b, loc, i32, 0);
  SmallVector<Value> countDims = {batch, heads, qBlocks};
  SmallVector<Value> indexDims = {batch, heads, qBlocks, kvBlocks};
  auto alloc = [&](ArrayRef<Value> dims) -> Value {
    auto type = MemRefType::get(
        SmallVector<int64_t>(dims.size(), ShapedType::kDynamic), i32);
    Value buffer = memref::AllocOp::create(b, loc, type, dims);
    // Entries past a row's count are 0, as FlexAttention's.
    linalg::FillOp::create(b, loc, zeroI32, buffer);
    return buffer;
  };
  SmallVector<Value> buffers = {alloc(countDims), alloc(indexDims),
                                alloc(countDims), alloc(indexDims)};
  {
    OpBuilder::InsertionGuard guard(b);
    auto batchLoop = scf::ForOp::create(b, loc, zero, batch, one);
    b.setInsertionPointToStart(batchLoop.getBody());
    auto headLoop = scf::ForOp::create(b, loc, zero, heads, one);
    b.setInsertionPointToStart(headLoop.getBody());
    auto rowLoop = scf::ForOp::create(b, loc, zero, qBlocks, one);
    b.setInsertionPointToStart(rowLoop.getBody());
    Value bi = batchLoop.getInductionVar(), hi = headLoop.getInductionVar(),
          qb = rowLoop.getInductionVar();
    auto blockLoop =
        scf::ForOp::create(b, loc, zero, kvBlocks, one, ValueRange{zero, zero});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(blockLoop.getBody());
      Value kb = blockLoop.getInductionVar();
      auto [keep, drop] = scanBlock(bi, hi, qb, kb, zero, 1);
      ValueRange counts = blockLoop.getRegionIterArgs();
      auto [partial, full] =
          append(keep, drop, kb, counts[0], counts[1],
                 [&](int64_t list, Value position, Value value) {
                   memref::StoreOp::create(b, loc, value, buffers[2 * list + 1],
                                           ValueRange{bi, hi, qb, position});
                 });
      scf::YieldOp::create(b, loc, ValueRange{partial, full});
    }
    for (int64_t list : {0, 1})
      memref::StoreOp::create(b, loc, asI32(blockLoop.getResult(list)),
                              buffers[2 * list], ValueRange{bi, hi, qb});
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

void ListBuilder::buildOnDevice(Operation *end) {
  b.setInsertionPoint(op);
  sizes();
  // Workspace words: a keep/drop word per block, then the counts and the
  // indices of the partial and of the full lists.
  Value rows = mul(mul(batch, heads), qBlocks);
  Value blocks = mul(rows, kvBlocks);
  Value listWords = mul(c(2), add(rows, blocks));
  Value countsAt[2] = {blocks, add(blocks, add(rows, blocks))};
  Value indicesAt[2] = {add(countsAt[0], rows), add(countsAt[1], rows)};
  Value words = add(blocks, listWords);
  Value workspace = WorkspaceOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, i32), words);
  Value one = c(1);
  auto ceilDiv = [&](Value x, int64_t y) {
    return arith::CeilDivUIOp::create(b, loc, x, c(y)).getResult();
  };
  auto atomicOr = [&](Value bits, Value at) {
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::ori, bits,
                                workspace, ValueRange{at});
  };

  // Scan: one block of threads per (kv-block, q-block, b * h).
  {
    auto launch = gpu::LaunchOp::create(
        b, loc, kvBlocks, qBlocks, mul(batch, heads), c(kThreads), one, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value kb = launch.getBlockIds().x, qb = launch.getBlockIds().y;
    Value bh = launch.getBlockIds().z, tid = launch.getThreadIds().x;
    Value bi = arith::DivUIOp::create(b, loc, bh, heads);
    Value hi = arith::RemUIOp::create(b, loc, bh, heads);
    auto [keep, drop] = scanBlock(bi, hi, qb, kb, tid, kThreads);
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
      atomicOr(bits, add(mul(add(mul(bh, qBlocks), qb), kvBlocks), kb));
    }
    gpu::TerminatorOp::create(b, loc);
  }

  // Compact: one thread per (b, h, q-block) walks its row of blocks,
  // appending them and clearing their words.
  {
    auto launch = gpu::LaunchOp::create(b, loc, ceilDiv(qBlocks, kThreads),
                                        heads, batch, c(kThreads), one, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value qb =
        add(mul(launch.getBlockIds().x, c(kThreads)), launch.getThreadIds().x);
    Value bi = launch.getBlockIds().z, hi = launch.getBlockIds().y;
    auto inside = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, qb, qBlocks));
    b.setInsertionPointToStart(inside.thenBlock());
    Value row = add(mul(add(mul(bi, heads), hi), qBlocks), qb);
    Value zero = c(0);
    auto blockLoop =
        scf::ForOp::create(b, loc, zero, kvBlocks, one, ValueRange{zero, zero});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(blockLoop.getBody());
      Value kb = blockLoop.getInductionVar();
      Value at = add(mul(row, kvBlocks), kb);
      Value bits = memref::LoadOp::create(b, loc, workspace, at);
      memref::StoreOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, i32, 0), workspace, at);
      auto bit = [&](int64_t mask) {
        return arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ne,
            arith::AndIOp::create(
                b, loc, bits, arith::ConstantIntOp::create(b, loc, i32, mask)),
            arith::ConstantIntOp::create(b, loc, i32, 0));
      };
      ValueRange counts = blockLoop.getRegionIterArgs();
      auto [partial, full] =
          append(bit(1), bit(2), kb, counts[0], counts[1],
                 [&](int64_t list, Value position, Value value) {
                   memref::StoreOp::create(
                       b, loc, value, workspace,
                       ValueRange{add(indicesAt[list],
                                      add(mul(row, kvBlocks), position))});
                 });
      scf::YieldOp::create(b, loc, ValueRange{partial, full});
    }
    for (int64_t list : {0, 1})
      memref::StoreOp::create(b, loc, asI32(blockLoop.getResult(list)),
                              workspace, ValueRange{add(countsAt[list], row)});
    b.setInsertionPointAfter(inside);
    gpu::TerminatorOp::create(b, loc);
  }

  // The lists as tensors over the workspace.
  SmallVector<Value> lists;
  for (int64_t list : {0, 1}) {
    for (bool isIndices : {false, true}) {
      SmallVector<OpFoldResult> shape = {batch, heads, qBlocks};
      if (isIndices)
        shape.push_back(kvBlocks);
      SmallVector<OpFoldResult> strides(shape.size());
      Value stride = one;
      for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = stride;
        stride = mul(stride, getValueOrCreateConstantIndexOp(b, loc, shape[d]));
      }
      auto view = memref::ReinterpretCastOp::create(
          b, loc,
          MemRefType::get(
              SmallVector<int64_t>(shape.size(), ShapedType::kDynamic), i32,
              StridedLayoutAttr::get(
                  b.getContext(), ShapedType::kDynamic,
                  SmallVector<int64_t>(shape.size(), ShapedType::kDynamic))),
          workspace, isIndices ? indicesAt[list] : countsAt[list], shape,
          strides);
      lists.push_back(bufferization::ToTensorOp::create(
          b, loc,
          RankedTensorType::get(
              SmallVector<int64_t>(shape.size(), ShapedType::kDynamic), i32),
          view, /*restrict=*/b.getUnitAttr(), /*writable=*/UnitAttr()));
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
    for (CreateBlockMaskOp op : ops) {
      for (Operation *user : op->getUsers())
        if (auto field = dyn_cast<BlockMaskFieldOp>(user))
          if (static_cast<int64_t>(field.getField()) > 3) {
            field.emitOpError() << "reads a q-side field, which "
                                   "attn-lower-block-masks does not compute";
            return signalPassFailure();
          }
      if (onHost) {
        ListBuilder(rewriter, op, checks).buildOnHost();
        continue;
      }
      // The lists live until the function returns.
      auto func = dyn_cast<func::FuncOp>(op->getParentOp());
      if (!func) {
        op.emitOpError() << "must be at the top level of a function to be "
                            "built on the GPU";
        return signalPassFailure();
      }
      ListBuilder(rewriter, op, checks)
          .buildOnDevice(op->getBlock()->getTerminator());
    }
  }
};

} // namespace
