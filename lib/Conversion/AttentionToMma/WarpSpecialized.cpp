//===- WarpSpecialized.cpp - the persistent producer/consumer kernel ------===//
//
// FlashAttention-3's structure on the wgmma kernel: one block per SM walks
// the q-tiles it takes from a counter in the workspace. The producer
// warpgroup's first thread copies Q, K and V into shared memory with TMA,
// each buffer guarded by a pair of mbarriers (full: its bytes landed;
// empty: the consumers' wgmmas finished reading it), so the copies of the
// next tile's Q and first K overlap this tile's last steps and epilogue.
// The two consumer warpgroups run wgmma's loop with no block barrier, and
// setmaxnreg gives them the producer's registers.
//
//===----------------------------------------------------------------------===//

#include "BlockBuilder.h"
#include "WarpgroupMma.h"

#include "AttnDialect/Target/NVVM/InlinePtx.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

namespace {

/// The mbarriers in shared memory, by index into the barrier array.
enum Barrier : int64_t {
  kQueryFull = 0,   // and 1: per buffer
  kQueryEmpty = 2,  // and 3
  kKeyFull = 4,     // and 5
  kKeyEmpty = 6,    // and 7
  kValueFull = 8,   // and 9
  kValueEmpty = 10, // and 11
  kTileFull = 12,   // and 13: per tile slot
  kTileEmpty = 14,  // and 15
};
static_assert(kTileEmpty + 2 == kBarriers);

/// The mbarrier and TMA instructions as PTX on 32-bit shared addresses:
/// NVVM's ops for them take shared pointers, which the NVPTX backend keeps
/// in 64-bit registers; with only the initialization as an op, ptxas
/// spilled more (up to 88 bytes) in 17 of the kernels of make-bundles.sh.
void emitPtx(OpBuilder &b, Location loc, StringRef text, ValueRange inputs) {
  nvvm::inlinePtx(b, loc, text, inputs);
}

} // namespace

void BlockBuilder::buildWarpSpecialized() {
  const MmaTiles &tiles = k.tiles;
  setUpThread();
  // Before the roles split, so that both see them.
  setUpLanes();
  int64_t consumerThreads = 32 * tiles.warps();
  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                           k.tid, c(consumerThreads));
  copyThread = sub(k.tid, c(consumerThreads));

  // Shared addresses as the i32 the PTX operands take.
  Value barrierBase = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, b.getIndexType(), k.barriers);
  auto barrier = [&](int64_t first, Value offset = Value()) -> Value {
    Value address = add(barrierBase, c(8 * first));
    if (offset)
      address = add(address, mul(offset, c(8)));
    return asI32(address);
  };
  auto i32c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  // Waits for the completion of the barrier's phase of parity `parity`;
  // the phase before the first counts as complete for parity 1. (NVVM's
  // try_wait.parity also takes a suspend-time hint, which would replace
  // the hardware's own limit between tries.)
  auto wait = [&](Value address, Value parity) {
    emitPtx(b, loc,
            "{\n.reg .pred done;\nwait:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n"
            "@!done bra wait;\n}",
            {address, asI32(parity)});
  };
  auto arrive = [&](Value address) {
    emitPtx(b, loc, "mbarrier.arrive.shared::cta.b64 _, [$0];", {address});
  };
  // Copies `rows` rows of `map` from `row` of (batch, head) into `stage`'s
  // buffer, a box per swizzled tile, and arrives on `full` expecting their
  // bytes: the barrier's phase completes when they have landed. TMA and
  // wgmma both go through the async proxy, so no fence is needed between.
  auto copyTile = [&](Value map, Value stage, Value buffer, Value row,
                      Value head, int64_t rows, int64_t width, Value full) {
    Swizzle swizzle = Swizzle::forWidth(width);
    int64_t boxBytes = rows * swizzle.rowBytes;
    int64_t boxes = width / swizzle.columns();
    emitPtx(b, loc, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
            {full, i32c(boxes * boxBytes)});
    Value base = stageAddress(stage, buffer);
    for (int64_t tile = 0; tile < boxes; ++tile)
      emitPtx(b, loc,
              "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::"
              "complete_tx::bytes [$0], [$1, {$2, $3, $4, $5}], [$6];",
              {asI32(add(base, c(tile * boxBytes))), map,
               i32c(tile * swizzle.columns()), asI32(row), asI32(head),
               asI32(k.batch), full});
  };

  // Every full barrier completes when the producer's first thread has
  // arrived and its copies' bytes have landed; every empty one when each
  // consumer thread has arrived; a tile slot is full when the producer's
  // first thread wrote it and empty when every thread has read it.
  {
    auto first = scf::IfOp::create(b, loc, less(k.tid, c(1)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(first.thenBlock());
    auto init = [&](int64_t index, int64_t count) {
      emitPtx(b, loc, "mbarrier.init.shared::cta.b64 [$0], $1;",
              {barrier(index), i32c(count)});
    };
    for (int64_t i = 0; i < 2; ++i) {
      init(kQueryFull + i, 1);
      init(kQueryEmpty + i, consumerThreads);
      init(kKeyFull + i, 1);
      init(kKeyEmpty + i, consumerThreads);
      init(kValueFull + i, 1);
      init(kValueEmpty + i, consumerThreads);
      init(kTileFull + i, 1);
      init(kTileEmpty + i, consumerThreads + kProducerThreads);
    }
  }
  gpu::BarrierOp::create(b, loc);

  // Tile `count` uses Q buffer count % buffers for the (count /
  // buffers)-th time: its barriers' phases of that parity.
  auto queryBuffer = [&](Value count) -> std::pair<Value, Value> {
    return {rem(count, tiles.queryBuffers),
            rem(div(count, tiles.queryBuffers), 2)};
  };

  Value batches = memref::DimOp::create(b, loc, k.query, 0);
  Value heads = memref::DimOp::create(b, loc, k.query, 1);
  Value qBlocks = arith::CeilDivUIOp::create(b, loc, m, c(tiles.qTile));
  Value total = mul(mul(qBlocks, heads), batches);
  Type indexType = b.getIndexType();

  // A role's walk over the tiles its block takes. `tile` builds one tile
  // from the tile counter, the running kv step count and the tile's steps,
  // after setUpTile; it returns the running count after the tile.
  auto walkTiles = [&](bool producer,
                       llvm::function_ref<Value(Value, Value, Value)> tile) {
    auto takeTile = [&](OpBuilder &, Location, ValueRange counts) {
      Value count = counts[0];
      Value slot = rem(count, 2);
      Value parity = rem(div(count, 2), 2);
      if (producer) {
        // The producer's first thread takes the next tile for the block.
        auto first = scf::IfOp::create(b, loc, less(copyThread, c(1)));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(first.thenBlock());
        wait(barrier(kTileEmpty, slot), sub(c(1), parity));
        Value taken =
            memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi,
                                        i32c(1), k.workspace, ValueRange{c(0)});
        memref::StoreOp::create(b, loc, taken, k.tileSlots, ValueRange{slot});
        arrive(barrier(kTileFull, slot));
      }
      wait(barrier(kTileFull, slot), parity);
      Value taken = arith::IndexCastUIOp::create(
          b, loc, indexType,
          memref::LoadOp::create(b, loc, k.tileSlots, ValueRange{slot}));
      arrive(barrier(kTileEmpty, slot));
      scf::ConditionOp::create(b, loc, less(taken, total),
                               ValueRange{taken, count, counts[1]});
    };
    auto buildTile = [&](OpBuilder &, Location, ValueRange values) {
      Value taken = values[0];
      // Tile `taken`: the q-tiles of one (batch, head) in a row, so that
      // neighbouring blocks share K and V in L2; longest first when causal.
      Value rank = arith::RemUIOp::create(b, loc, taken, qBlocks);
      Value qBlock = op.getCausal() ? sub(sub(qBlocks, c(1)), rank) : rank;
      Value headBatch = arith::DivUIOp::create(b, loc, taken, qBlocks);
      k.head = arith::RemUIOp::create(b, loc, headBatch, heads);
      k.batch = arith::DivUIOp::create(b, loc, headBatch, heads);
      Value steps = setUpTile([&] { return qBlock; });
      Value stepCount = tile(values[1], values[2], steps);
      scf::YieldOp::create(b, loc, ValueRange{add(values[1], c(1)), stepCount});
    };
    scf::WhileOp::create(b, loc, TypeRange{indexType, indexType, indexType},
                         ValueRange{c(0), c(0)}, takeTile, buildTile);
  };

  auto roles = scf::IfOp::create(b, loc, isProducer, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(roles.thenBlock());
    NVVM::SetMaxRegisterOp::create(b, loc, tiles.producerRegisters,
                                   NVVM::SetMaxRegisterAction::decrease);
    walkTiles(
        /*producer=*/true, [&](Value count, Value stepCount, Value steps) {
          // One thread issues the tile's copies; the others only walk the
          // tiles.
          auto first = scf::IfOp::create(b, loc, less(copyThread, c(1)));
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(first.thenBlock());
          // TMA fills the rows past the end with zeros.
          auto [buffer, parity] = queryBuffer(count);
          wait(barrier(kQueryEmpty, buffer), sub(c(1), parity));
          copyTile(k.queryMap, k.queryStage, buffer, q0, k.head, tiles.qTile, d,
                   barrier(kQueryFull, buffer));
          auto loop = scf::ForOp::create(b, loc, c(0), steps, c(1));
          b.setInsertionPointToStart(loop.getBody());
          Value j = loop.getInductionVar();
          Value it = add(stepCount, j);
          Value slot = rem(it, 2);
          Value free = sub(c(1), rem(div(it, 2), 2));
          Value kv0 = kvStart(j);
          wait(barrier(kKeyEmpty, slot), free);
          copyTile(k.keyMap, k.keyStage, slot, kv0, kvHead, tiles.kvTile, d,
                   barrier(kKeyFull, slot));
          wait(barrier(kValueEmpty, slot), free);
          copyTile(k.valueMap, k.valueStage, slot, kv0, kvHead, tiles.kvTile,
                   dv, barrier(kValueFull, slot));
          b.setInsertionPointAfter(first);
          return add(stepCount, steps);
        });
    // The last block out leaves the workspace's counters at zero for the
    // next launch: every block has taken its last tile by then.
    auto first = scf::IfOp::create(b, loc, less(copyThread, c(1)));
    b.setInsertionPointToStart(first.thenBlock());
    Value finished = arith::IndexCastUIOp::create(
        b, loc, indexType,
        memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, i32c(1),
                                    k.workspace, ValueRange{c(1)}));
    auto last = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, finished,
                              sub(k.gridX, c(1))));
    b.setInsertionPointToStart(last.thenBlock());
    for (int64_t word : {0, 1})
      memref::StoreOp::create(b, loc, i32c(0), k.workspace,
                              ValueRange{c(word)});
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(roles.elseBlock());
  NVVM::SetMaxRegisterOp::create(b, loc, tiles.consumerRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  // Warpgroup w's rows start 64 w rows into each swizzled tile.
  Swizzle querySwizzle = Swizzle::forWidth(d);
  Value warpgroupRows = mul(div(k.tid, 128), c(64 * querySwizzle.rowBytes));
  walkTiles(/*producer=*/false, [&](Value count, Value stepCount, Value steps) {
    auto [buffer, parity] = queryBuffer(count);
    queryDescriptor = swizzledDescriptor(
        b, loc, querySwizzle,
        add(stageAddress(k.queryStage, buffer), warpgroupRows),
        /*leadingBytes=*/16, /*strideBytes=*/8 * querySwizzle.rowBytes);
    wait(barrier(kQueryFull, buffer), parity);
    TileStaging staging;
    staging.base = stepCount;
    auto waitFull = [&](int64_t full, Value it) {
      wait(barrier(full, rem(it, 2)), rem(div(it, 2), 2));
    };
    staging.beforeStep = [&](Value, Value it, Value, bool previous) {
      waitFull(kKeyFull, it);
      if (previous)
        waitFull(kValueFull, sub(it, c(1)));
    };
    staging.keysRead = [&](Value it) {
      arrive(barrier(kKeyEmpty, rem(it, 2)));
    };
    staging.valuesRead = [&](Value it) {
      arrive(barrier(kValueEmpty, rem(it, 2)));
    };
    staging.beforeLastAccumulate = [&](Value it) { waitFull(kValueFull, it); };
    staging.afterLoop = [] {};
    SmallVector<Value> results = warpgroupLoop(steps, staging);
    // Every S wgmma has finished: Q's buffer may take a later tile's.
    arrive(barrier(kQueryEmpty, buffer));
    finishTile(results, /*staged=*/false);
    return add(stepCount, steps);
  });
}
