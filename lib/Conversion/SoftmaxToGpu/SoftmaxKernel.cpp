//===- SoftmaxKernel.cpp - attn.softmax's kernel body ---------------------===//
//
// What a block does: locate its row (or its part of a split row), stage
// its tile in shared memory (StageTile.cpp), reduce the tile to (max,
// sum), merge those of its row's other blocks when the row is split, and
// write the probabilities. docs/Softmax.md describes the design.
//
//===----------------------------------------------------------------------===//

#include "SoftmaxKernel.h"

#include "AttnDialect/Target/NVVM/CrossBlockExchange.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <tuple>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::softmax;

/// Polls of a row's arrival counter after which a waiting block traps: far
/// more than any real wait (each poll sleeps, and takes a round trip to
/// L2), so only a GPU that broke the start order would get there.
static constexpr int64_t kMostPolls = int64_t(1) << 26;

/// exp(x - m) as exp2((x - m) * log2(e)); 0 where x is -inf (also when m
/// is: a row of -inf).
Value SoftmaxKernel::expMinus(Value x, Value m) {
  Value e = expFrom(x, m);
  Value masked =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, f32(kNegInf));
  return arith::SelectOp::create(b, loc, masked, f32(0), e);
}

/// The max to subtract from a thread's elements: 0 when they are all
/// -inf, so that x - max is -inf, not NaN.
Value SoftmaxKernel::finiteMax(Value m) {
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m, f32(kNegInf));
  return arith::SelectOp::create(b, loc, empty, f32(0), m);
}

/// exp(x - m) for the elements, with m from finiteMax: three instructions
/// (ex2 of -inf is 0).
Value SoftmaxKernel::expFrom(Value x, Value m) {
  Value log2e = f32(kLog2E);
  return math::Exp2Op::create(
      b, loc,
      arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, x, m),
                            log2e));
}

/// (max, sum) merged with another (max, sum).
std::pair<Value, Value> SoftmaxKernel::merge(Value m, Value l, Value m2,
                                             Value l2) {
  Value newMax = arith::MaximumFOp::create(b, loc, m, m2);
  Value other = arith::MulFOp::create(b, loc, l2, expMinus(m2, newMax));
  Value sum = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, l, expMinus(m, newMax)), other);
  return {newMax, sum};
}

/// Emits `body` in an scf.if on `condition` (no results).
void SoftmaxKernel::onlyIf(Value condition, llvm::function_ref<void()> body) {
  auto op = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op.thenBlock()->getTerminator());
  body();
}

/// An scf.if yielding `types` from `then` and `otherwise`.
ValueRange
SoftmaxKernel::select(Value condition, TypeRange types,
                      llvm::function_ref<SmallVector<Value>()> then,
                      llvm::function_ref<SmallVector<Value>()> otherwise) {
  auto op = scf::IfOp::create(b, loc, types, condition,
                              /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  // Without results, the branches have their terminators already.
  for (auto [block, build] : {std::make_pair(op.thenBlock(), then),
                              std::make_pair(op.elseBlock(), otherwise)}) {
    if (types.empty()) {
      b.setInsertionPoint(block->getTerminator());
      build();
      continue;
    }
    b.setInsertionPointToStart(block);
    scf::YieldOp::create(b, loc, build());
  }
  return op.getResults();
}

/// Elements of a buffer's address, modulo `modulus` elements (the
/// vector width by default).
Value SoftmaxKernel::phase(Value buffer, int64_t modulus) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, b.getIndexType(), buffer);
  Value modulusValue = c(modulus ? modulus : width);
  return rem(div(address, c(element.getIntOrFloatBitWidth() / 8)),
             modulusValue);
}

/// The block's (row, split) and the flat ranges they cover: a row's
/// splits are consecutive blocks (docs/Softmax.md says why).
void SoftmaxKernel::locate(Value blockId) {
  if (splitRow) {
    row = div(blockId, splits);
    split = rem(blockId, splits);
  } else {
    row = blockId;
    split = c(0);
  }
  rowStart = mul(row, n);
  rowEnd = add(rowStart, n);
  // Vectors are aligned to 16 bytes: the row's first vector starts up to
  // width - 1 elements before the row (N not a multiple of the width).
  // A buffer that is not 16-byte aligned (a view into another) is read or
  // written element by element, its vectors starting at the row's start.
  // (Ops are built one per statement: C++ leaves the order of argument
  // evaluation open, and the IR must not depend on the compiler.)
  Value zero = c(0);
  vectorIn = cmp(arith::CmpIPredicate::eq, phase(in), zero);
  Value outAligned = cmp(arith::CmpIPredicate::eq, phase(out), zero);
  vectorOut = both(vectorIn, outAligned);
  Value rowHead = rem(rowStart, c(width));
  Value head = arith::SelectOp::create(b, loc, vectorIn, rowHead, zero);
  // Better: tiles that start on a 128-byte line, where the row's tiles
  // have room for the longer head. A warp's cp.async copies then cover
  // whole 32-byte sectors, where from a 16-byte boundary L2 serves more
  // sector reads for the same bytes.
  int64_t lineElements =
      128 / (cast<MemRefType>(in.getType()).getElementTypeBitWidth() / 8);
  Value lineElementsValue = c(lineElements);
  Value linePhase = add(phase(in, lineElements), rowStart);
  Value lineHead = rem(linePhase, lineElementsValue);
  Value rowSpan = mul(splits, mul(sliceTiles, tile()));
  Value lineEnd = add(lineHead, n);
  Value room = cmp(arith::CmpIPredicate::ule, lineEnd, rowSpan);
  head = arith::SelectOp::create(b, loc, both(vectorIn, room), lineHead, head);
  Value splitOffset = mul(split, mul(sliceTiles, tile()));
  sliceStart = add(sub(rowStart, head), splitOffset);
}

/// Whether [p, p + width) lies in the row, as one aligned input vector.
Value SoftmaxKernel::whole(Value p) {
  Value endsInRow = cmp(arith::CmpIPredicate::sle, add(p, c(width)), rowEnd);
  Value startsInRow = cmp(arith::CmpIPredicate::sge, p, rowStart);
  return both(vectorIn, both(startsInRow, endsInRow));
}

/// Whether [p, p + width) has elements of the row.
Value SoftmaxKernel::touches(Value p) {
  Value startsBeforeEnd = cmp(arith::CmpIPredicate::slt, p, rowEnd);
  Value endsAfterStart =
      cmp(arith::CmpIPredicate::sgt, add(p, c(width)), rowStart);
  return both(endsAfterStart, startsBeforeEnd);
}

Value SoftmaxKernel::insideRow(Value p) {
  Value beforeEnd = cmp(arith::CmpIPredicate::slt, p, rowEnd);
  return both(cmp(arith::CmpIPredicate::sge, p, rowStart), beforeEnd);
}

Value SoftmaxKernel::widen(Value x) {
  return x.getType().isF32()
             ? x
             : arith::ExtFOp::create(b, loc, b.getF32Type(), x).getResult();
}

/// The 16-byte vector of `buffer` at `index`, widened to f32.
SmallVector<Value> SoftmaxKernel::loadVector(Value buffer, Value index) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  Value v = vector::LoadOp::create(b, loc, VectorType::get({width}, element),
                                   buffer, ValueRange{index},
                                   /*nontemporal=*/false, llvm::Align(16));
  SmallVector<Value> xs;
  for (int64_t i = 0; i < width; ++i)
    xs.push_back(widen(vector::ExtractOp::create(b, loc, v, i)));
  return xs;
}

/// The input's vector at flat position `p` as f32, -inf outside the row:
/// one 16-byte load inside, element loads where it straddles an end.
SmallVector<Value> SoftmaxKernel::load(Value p) {
  SmallVector<Type> types(width, b.getF32Type());
  ValueRange xs = select(
      whole(p), types, [&] { return loadVector(in, p); },
      [&] {
        return llvm::to_vector(select(
            touches(p), types,
            [&] {
              SmallVector<Value> xs;
              for (int64_t i = 0; i < width; ++i) {
                Value inside = insideRow(add(p, c(i)));
                xs.push_back(select(
                    inside, b.getF32Type(),
                    [&]() -> SmallVector<Value> {
                      return {widen(
                          memref::LoadOp::create(b, loc, in, add(p, c(i))))};
                    },
                    [&]() -> SmallVector<Value> { return {f32(kNegInf)}; })[0]);
              }
              return xs;
            },
            [&] { return SmallVector<Value>(width, f32(kNegInf)); }));
      });
  return llvm::to_vector(xs);
}

/// Writes softmax values `ys` (f32) of the vector at `p`: one 16-byte
/// store when it lies in the row and the output is aligned like the
/// input, element stores otherwise.
void SoftmaxKernel::store(Value p, ArrayRef<Value> ys, bool wholeVector) {
  Type element = cast<MemRefType>(out.getType()).getElementType();
  SmallVector<Value> narrow;
  for (Value y : ys)
    narrow.push_back(
        element.isF32() ? y : arith::TruncFOp::create(b, loc, element, y));
  if (wholeVector) {
    Value v = vector::FromElementsOp::create(
        b, loc, VectorType::get({width}, element), narrow);
    vector::StoreOp::create(b, loc, v, out, ValueRange{p},
                            /*nontemporal=*/false, llvm::Align(16));
    return;
  }
  auto op = scf::IfOp::create(b, loc, both(whole(p), vectorOut),
                              /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op.thenBlock()->getTerminator());
  Value v = vector::FromElementsOp::create(
      b, loc, VectorType::get({width}, element), narrow);
  vector::StoreOp::create(b, loc, v, out, ValueRange{p},
                          /*nontemporal=*/false, llvm::Align(16));
  b.setInsertionPoint(op.elseBlock()->getTerminator());
  for (int64_t i = 0; i < width; ++i) {
    Value q = add(p, c(i));
    onlyIf(insideRow(q),
           [&] { memref::StoreOp::create(b, loc, narrow[i], out, q); });
  }
}

/// The row's max and sum over the block, from each thread's: each warp
/// merges its lanes' (a butterfly of shuffles), lane 0 puts the warp's
/// pair in `scratch`, and after one barrier every thread merges the
/// warps' pairs in the same order (so all get the same bits). Two
/// gpu.all_reduce (max, then the rescaled sum) took four barriers, and
/// their 768 bytes of shared memory moved the tile off its 128-byte line
/// when anything was added to them.
std::pair<Value, Value> SoftmaxKernel::blockReduce(Value m, Value l) {
  // Not structured bindings: the lambda below captures them.
  Value warpMax, warpSum;
  std::tie(warpMax, warpSum) = warpMerge(m, l);
  Value warp = div(tid, c(32));
  Value zero = c(0);
  onlyIf(cmp(arith::CmpIPredicate::eq, rem(tid, c(32)), zero), [&] {
    memref::StoreOp::create(b, loc, warpMax, scratch, mul(warp, c(2)));
    Value one = c(1);
    memref::StoreOp::create(b, loc, warpSum, scratch,
                            add(mul(warp, c(2)), one));
  });
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> empty = noStatistics();
  Value step = c(1);
  Value warpCount = div(threads, c(32));
  auto warps = scf::ForOp::create(b, loc, c(0), warpCount, step, empty);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(warps.getBody());
  Value at = mul(warps.getInductionVar(), c(2));
  Value otherSum = memref::LoadOp::create(b, loc, scratch, add(at, c(1)));
  auto [rowMax, rowSum] =
      merge(warps.getRegionIterArgs()[0], warps.getRegionIterArgs()[1],
            memref::LoadOp::create(b, loc, scratch, at), otherSum);
  scf::YieldOp::create(b, loc, ValueRange{rowMax, rowSum});
  return {warps.getResult(0), warps.getResult(1)};
}

void SoftmaxKernel::storeWord(Value word, Value value) {
  memref::StoreOp::create(b, loc, value, workspace, word);
}

/// (max, sum) merged across the 32 lanes of a warp (a butterfly: every
/// lane ends with the same bits, since each step's merge is symmetric).
std::pair<Value, Value> SoftmaxKernel::warpMerge(Value m, Value l) {
  for (int32_t offset = 1; offset < 32; offset *= 2) {
    auto across = [&](Value v) {
      return gpu::ShuffleOp::create(b, loc, v, offset, /*width=*/32,
                                    gpu::ShuffleMode::XOR)
          .getShuffleResult();
    };
    Value otherL = across(l);
    Value otherM = across(m);
    std::tie(m, l) = merge(m, l, otherM, otherL);
  }
  return {m, l};
}

/// The row's (max, sum) from every split's: publish this block's, wait
/// until the row's blocks have all published, merge theirs.
std::array<Value, 3> SoftmaxKernel::mergeSplits(Value m, Value l) {
  Value arrived = arrivedWord();
  Value expected = arith::IndexCastOp::create(b, loc, b.getI32Type(), splits);
  onlyIf(isThreadZero(), [&] {
    Value slot = partialWord(split);
    storeWord(slot, arith::BitcastOp::create(b, loc, b.getI32Type(), m));
    Value sumBits = arith::BitcastOp::create(b, loc, b.getI32Type(), l);
    storeWord(add(slot, c(1)), sumBits);
    // The partial is visible to whoever sees the arrival count.
    nvvm::releaseIncrement(b, loc, workspace, arrived);
    nvvm::waitForCount(b, loc, workspace, arrived, expected, kMostPolls);
  });
  // The acquiring load of thread 0, then the barrier, order every
  // thread's reads of the partials after their writes.
  gpu::BarrierOp::create(b, loc);
  // Each warp merges the row's partials itself (lane j those of splits j,
  // j + 32, ..., then shuffles), so no block-wide reduction, with its
  // barriers, follows. Every warp gets the same bits (same partials per
  // lane, same order).
  SmallVector<Value> empty = noStatistics();
  Value step = c(32);
  auto gather =
      scf::ForOp::create(b, loc, rem(tid, c(32)), splits, step, empty);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(gather.getBody());
    Value slot = partialWord(gather.getInductionVar());
    auto word = [&](Value w) {
      return arith::BitcastOp::create(
          b, loc, b.getF32Type(), memref::LoadOp::create(b, loc, workspace, w));
    };
    Value otherSum = word(add(slot, c(1)));
    auto [mm, ll] = merge(gather.getRegionIterArgs()[0],
                          gather.getRegionIterArgs()[1], word(slot), otherSum);
    scf::YieldOp::create(b, loc, ValueRange{mm, ll});
  }
  auto [rowMax, rowSum] = warpMerge(gather.getResult(0), gather.getResult(1));
  // Every thread's reads come before thread 0's count below: a barrier
  // (the shuffles order only each warp's).
  gpu::BarrierOp::create(b, loc);
  // Thread 0 counts the block out now and looks at the count after the
  // block's writes (see `leave`), so the atomic's latency is hidden.
  Value left = select(
      isThreadZero(), b.getI32Type(),
      [&]() -> SmallVector<Value> {
        return {nvvm::relaxedFetchAdd(b, loc, workspace, departedWord())};
      },
      [&]() -> SmallVector<Value> {
        return {arith::ConstantIntOp::create(b, loc, -1, 32)};
      })[0];
  return {rowMax, rowSum, left};
}

/// The last block of a split row to leave (`left`, from mergeSplits, is
/// the row's departures before this block's, on thread 0) zeroes the
/// row's words: another launch may lay the workspace out for other
/// sizes.
void SoftmaxKernel::leave(Value left) {
  if (!splitRow)
    return;
  Value lastOne =
      arith::IndexCastOp::create(b, loc, b.getI32Type(), sub(splits, c(1)));
  onlyIf(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, left, lastOne),
         [&] {
           Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
           storeWord(arrivedWord(), zero);
           storeWord(departedWord(), zero);
           Value first = partialWord(c(0));
           Value step = c(1);
           auto clear = scf::ForOp::create(b, loc, first,
                                           add(first, mul(splits, c(2))), step);
           OpBuilder::InsertionGuard guard(b);
           b.setInsertionPoint(clear.getBody()->getTerminator());
           storeWord(clear.getInductionVar(), zero);
         });
}

/// (max, sum) over all splits when the row is split, else the block's;
/// and what `leave` needs after the block's writes.
std::array<Value, 3> SoftmaxKernel::rowStatistics(Value m, Value l) {
  auto [blockMax, blockSum] = blockReduce(m, l);
  std::array<Value, 3> statistics = {blockMax, blockSum, Value()};
  if (splitRow)
    statistics = mergeSplits(blockMax, blockSum);
  return statistics;
}

Value SoftmaxKernel::inverse(Value sum) {
  Value positive =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, sum, f32(0));
  Value zero = f32(0);
  return arith::SelectOp::create(
      b, loc, positive, arith::DivFOp::create(b, loc, f32(1), sum), zero);
}

/// exp(x - rowMax) * scale, with rowMax from finiteMax.
SmallVector<Value> SoftmaxKernel::probabilities(ArrayRef<Value> xs,
                                                Value rowMax, Value scale) {
  SmallVector<Value> ys;
  for (Value x : xs)
    ys.push_back(arith::MulFOp::create(b, loc, expFrom(x, rowMax), scale));
  return ys;
}

/// Emits `body(p, xs, acc)` for each of this thread's vectors of the
/// staged tile, threading `init` through as acc; xs are f32, -inf outside
/// the row (copyTile staged them so). Unrolled: vectors past `used` are
/// skipped unless `kind` is Whole; Checked is a loop over `used`. The
/// first pass over the tile (unrolled) waits for each copy group before
/// its first vector (waitForGroup).
SmallVector<Value> SoftmaxKernel::forEachStaged(Vectors kind, ValueRange init,
                                                StagedBody body,
                                                bool firstPass) {
  if (kind == Vectors::Checked) {
    // A loop, as in copyTile (only the writes need the checked form).
    OpBuilder::InsertionGuard guard(b);
    Value step = c(1);
    auto loop = scf::ForOp::create(b, loc, c(0), used, step, init);
    if (init.empty())
      b.setInsertionPoint(loop.getBody()->getTerminator());
    else
      b.setInsertionPointToStart(loop.getBody());
    Value at = position(c(0), loop.getInductionVar());
    SmallVector<Value> vector = loadVector(stage, at);
    SmallVector<Value> next =
        body(add(sliceStart, at), vector, loop.getRegionIterArgs());
    if (!init.empty())
      scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(loop.getResults());
  }
  SmallVector<Value> acc(init);
  for (int64_t k = 0; k < vectors; ++k) {
    if (firstPass)
      waitForGroup(k);
    auto visit = [&]() -> SmallVector<Value> {
      Value at = position(c(0), k);
      SmallVector<Value> vector = loadVector(stage, at);
      return body(add(sliceStart, at), vector, acc);
    };
    if (k == 0 || kind == Vectors::Whole) {
      acc = visit();
      continue;
    }
    auto op = scf::IfOp::create(b, loc, TypeRange(ValueRange(acc)), inTile(k),
                                /*withElseRegion=*/!acc.empty());
    OpBuilder::InsertionGuard guard(b);
    if (acc.empty()) {
      b.setInsertionPoint(op.thenBlock()->getTerminator());
      visit();
      continue;
    }
    b.setInsertionPointToStart(op.thenBlock());
    scf::YieldOp::create(b, loc, visit());
    b.setInsertionPointToStart(op.elseBlock());
    scf::YieldOp::create(b, loc, acc);
    acc = SmallVector<Value>(op.getResults());
  }
  return acc;
}

/// Whether every vector of every thread of this warp lies in the row
/// (and the output is aligned like the input): a warp votes, so only the
/// warps at a row's ends check each vector, and no warp runs both paths.
Value SoftmaxKernel::warpVectorsWhole() {
  // A thread's vectors are increasing in position: its first and last
  // used ones bound them.
  Value first = position(sliceStart, 0);
  Value last = position(sliceStart, sub(used, c(1)));
  Value endsInRow = cmp(arith::CmpIPredicate::sle, add(last, c(width)), rowEnd);
  Value whole =
      both(vectorOut,
           both(cmp(arith::CmpIPredicate::sge, first, rowStart), endsInRow));
  Value everyLane = arith::ConstantIntOp::create(b, loc, -1, 32);
  return NVVM::VoteSyncOp::create(b, loc, b.getI1Type(), everyLane, whole,
                                  NVVM::VoteSyncKind::all);
}

/// Emits `phase(kind)` in a three-way choice on what this warp's vectors
/// need; returns its results. No barrier may be in `phase`.
SmallVector<Value> SoftmaxKernel::byVectors(
    Value warpWhole, TypeRange types,
    llvm::function_ref<SmallVector<Value>(Vectors)> phase) {
  Value full = cmp(arith::CmpIPredicate::eq, used, c(vectors));
  return llvm::to_vector(select(
      warpWhole, types,
      [&] {
        return llvm::to_vector(select(
            full, types, [&] { return phase(Vectors::Whole); },
            [&] { return phase(Vectors::WholeUsed); }));
      },
      [&] { return phase(Vectors::Checked); }));
}

/// Split rows of the launch's first wave start in three steps, by row
/// mod 3, `naps` x `napNs` apart: started at once, every block of an SM
/// reaches its exchange together and memory idles while they wait;
/// staggered, a third copies while the others exchange. The only blocks
/// that wait for a sleeping one are its row's, which sleep alike (or start
/// after the first wave anyway).
void SoftmaxKernel::staggerFirstWave() {
  if (!splitRow || naps <= 0)
    return;
  Value step = rem(row, c(3));
  Value lateRow = cmp(arith::CmpIPredicate::ne, step, c(0));
  Value item = add(mul(row, splits), split);
  Value inFirstWave = cmp(arith::CmpIPredicate::ult, item, firstWave);
  Value late = both(inFirstWave, lateRow);
  onlyIf(late, [&] {
    Value one = c(1);
    Value sleeps = mul(step, c(naps));
    auto sleep = scf::ForOp::create(b, loc, c(0), sleeps, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(sleep.getBody()->getTerminator());
    NVVM::NanosleepOp::create(b, loc,
                              arith::ConstantIntOp::create(b, loc, napNs, 32));
  });
}

/// A slice of one tile: read from memory once, into shared memory, and
/// reduced and written from there.
void SoftmaxKernel::buildResident() {
  staggerFirstWave();
  Value warpWhole = warpVectorsWhole();
  byVectors(warpWhole, {}, [&](Vectors kind) {
    copyTile(sliceStart, kind);
    return SmallVector<Value>();
  });
  // One online pass (a vector's max, then the running sum rescaled to
  // it): a second pass would let the compiler keep every vector of the
  // first in registers, which costs blocks per SM.
  // Every staged vector is whole (copyTile staged -inf outside the row),
  // so no warp needs the checked (looped) form here.
  Type f32Type = b.getF32Type();
  auto online = [&](Vectors kind) {
    return forEachStaged(
        kind, noStatistics(),
        [&](Value, ArrayRef<Value> xs, ValueRange acc) -> SmallVector<Value> {
          Value m = acc[0];
          for (Value x : xs)
            m = arith::MaximumFOp::create(b, loc, m, x);
          Value shift = finiteMax(m);
          Value l =
              arith::MulFOp::create(b, loc, acc[1], expFrom(acc[0], shift));
          for (Value x : xs)
            l = arith::AddFOp::create(b, loc, l, expFrom(x, shift));
          return {m, l};
        },
        /*firstPass=*/true);
  };
  SmallVector<Value> stats = llvm::to_vector(select(
      cmp(arith::CmpIPredicate::eq, used, c(vectors)), {f32Type, f32Type},
      [&] { return online(Vectors::Whole); },
      [&] { return online(Vectors::WholeUsed); }));
  auto [rowMax, rowSum, left] = rowStatistics(stats[0], stats[1]);
  Value scale = inverse(rowSum);
  Value rowShift = finiteMax(rowMax);
  byVectors(warpWhole, {}, [&](Vectors kind) {
    forEachStaged(kind, {}, [&](Value p, ArrayRef<Value> xs, ValueRange) {
      store(p, probabilities(xs, rowShift, scale), kind != Vectors::Checked);
      return SmallVector<Value>();
    });
    return SmallVector<Value>();
  });
  leave(left);
}

/// A slice of several tiles: an online (max, sum) sweep, then a second
/// sweep that reads the slice again and writes it.
void SoftmaxKernel::buildTwoSweeps() {
  SmallVector<Value> empty = noStatistics();
  Value step = c(1);
  auto sweep = scf::ForOp::create(b, loc, c(0), sliceTiles, step, empty);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(sweep.getBody());
    // Vector by vector through the slice: vector j of tile s is at
    // sliceStart + ((s * used + j) * threads + tid) * width.
    Value first = mul(sweep.getInductionVar(), used);
    Value innerStep = c(1);
    auto inner = scf::ForOp::create(b, loc, first, add(first, used), innerStep,
                                    sweep.getRegionIterArgs());
    b.setInsertionPointToStart(inner.getBody());
    Value m = inner.getRegionIterArgs()[0], l = inner.getRegionIterArgs()[1];
    SmallVector<Value> xs = load(position(sliceStart, inner.getInductionVar()));
    Value newMax = m;
    for (Value x : xs)
      newMax = arith::MaximumFOp::create(b, loc, newMax, x);
    // A vector of -inf leaves (max, sum) = (-inf, 0): expMinus gives 0.
    Value sum = arith::MulFOp::create(b, loc, l, expMinus(m, newMax));
    for (Value x : xs)
      sum = arith::AddFOp::create(b, loc, sum, expMinus(x, newMax));
    scf::YieldOp::create(b, loc, ValueRange{newMax, sum});
    b.setInsertionPointAfter(inner);
    scf::YieldOp::create(b, loc, inner.getResults());
  }
  auto [rowMax, rowSum, left] =
      rowStatistics(sweep.getResult(0), sweep.getResult(1));
  Value scale = inverse(rowSum);
  rowMax = finiteMax(rowMax);
  Value writeStep = c(1);
  Value writeEnd = mul(sliceTiles, used);
  auto write = scf::ForOp::create(b, loc, c(0), writeEnd, writeStep);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(write.getBody()->getTerminator());
    Value p = position(sliceStart, write.getInductionVar());
    store(p, probabilities(load(p), rowMax, scale));
  }
  leave(left);
}

void SoftmaxKernel::build(Value blockId, Value rowSplit, int64_t rowVectors,
                          int64_t splitVectors) {
  auto buildIn = [&](scf::IfOp choice, bool then, bool splitRows,
                     int64_t unrolled, void (SoftmaxKernel::*body)()) {
    OpBuilder::InsertionGuard branch(b);
    b.setInsertionPoint(then ? choice.thenBlock()->getTerminator()
                             : choice.elseBlock()->getTerminator());
    splitRow = splitRows;
    vectors = unrolled;
    locate(blockId);
    (this->*body)();
  };
  auto byRow =
      scf::IfOp::create(b, loc, cmp(arith::CmpIPredicate::eq, rowSplit, c(0)),
                        /*withElseRegion=*/true);
  buildIn(byRow, true, false, rowVectors, &SoftmaxKernel::buildResident);
  OpBuilder::InsertionGuard branch(b);
  b.setInsertionPoint(byRow.elseBlock()->getTerminator());
  auto bySlice =
      scf::IfOp::create(b, loc, cmp(arith::CmpIPredicate::eq, sliceTiles, c(1)),
                        /*withElseRegion=*/true);
  buildIn(bySlice, true, true, splitVectors, &SoftmaxKernel::buildResident);
  buildIn(bySlice, false, true, splitVectors, &SoftmaxKernel::buildTwoSweeps);
}
