//===- KvBlockSchedule.cpp - which kv-blocks a q-tile visits --------------===//

#include "AttnDialect/Transforms/KvBlockSchedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::attn;

FailureOr<BlockMaskLists> BlockMaskLists::of(AttentionOp op) {
  auto make = op.getBlockMask().getDefiningOp<MakeBlockMaskOp>();
  if (!make)
    return op.emitOpError()
           << "has a block mask that is not an attn.make_block_mask in its "
              "function (run attn-lower-block-masks or attn-block-masks-to-gpu "
              "first)";
  auto type = cast<BlockMaskType>(make.getType());
  return BlockMaskLists{make.getKvNumBlocks(),     make.getKvIndices(),
                        make.getFullKvNumBlocks(), make.getFullKvIndices(),
                        type.getQBlock(),          type.getKvBlock()};
}

FailureOr<KvBlockSchedule> KvBlockSchedule::forOp(AttentionOp op) {
  if (!op.getBlockMask())
    return KvBlockSchedule{op.getCausal() ? Kind::Causal : Kind::Dense, {}};
  FailureOr<BlockMaskLists> lists = BlockMaskLists::of(op);
  if (failed(lists))
    return failure();
  return KvBlockSchedule{Kind::Lists, *lists};
}

SmallVector<KvSegment> KvBlockSchedule::segments(OpBuilder &b, Location loc,
                                                 Value offQ, Value offKV,
                                                 Value rows, Value n,
                                                 int64_t kvTile) const {
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value zero = index(0);
  if (kind == Kind::Dense)
    return {{zero, n, /*applyCausal=*/false}};
  // Row q (whole problem) sees kv <= q: local kv < offQ + rows - offKV.
  Value bound = arith::SubIOp::create(
      b, loc, arith::AddIOp::create(b, loc, offQ, rows), offKV);
  Value kvEnd = arith::MinSIOp::create(
      b, loc, n, arith::MaxSIOp::create(b, loc, zero, bound));
  // The block [j, j + kvTile) is below the diagonal for every row when
  // offKV + j + kvTile - 1 <= offQ: the first
  // floor((offQ - offKV + 1) / kvTile) blocks need no mask.
  // One op-building operand per call, for a compiler-independent order.
  Value oneMore = index(1);
  Value firstVisible = arith::AddIOp::create(
      b, loc, arith::SubIOp::create(b, loc, offQ, offKV), oneMore);
  Value tile = index(kvTile);
  Value fullBlocks = arith::DivSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, zero, firstVisible), tile);
  Value fullEnd = arith::MinSIOp::create(
      b, loc, kvEnd, arith::MulIOp::create(b, loc, fullBlocks, index(kvTile)));
  return {{zero, fullEnd, /*applyCausal=*/false},
          {fullEnd, kvEnd, /*applyCausal=*/true}};
}
