//===- SoftmaxToGpu.cpp - attn.softmax as a GPU kernel --------------------===//
//
// A memory-bound kernel reaches copy speed only if it reads every element
// once and keeps enough bytes in flight on every SM. So a block copies a
// tile of its row into shared memory with cp.async (16-byte copies that
// need no registers: many blocks fit on an SM, and their loads are all in
// flight at once), reduces it from there and writes it from there. A row
// that fits one tile is one block; a longer row is split across up to one
// block per SM, which exchange their (max, sum) through a workspace in
// global memory and each write the tile they still hold. Rows longer than
// that give each block a slice of several tiles, swept twice from global
// memory. See the pass description in Passes.td.
//
// Blocks of a split row wait for each other, so the kernel relies on what
// CUDA GPUs do in practice (the programming guide does not promise it):
// blocks start in the order of their index. A row's blocks are consecutive
// and at most one per SM, so the lowest unfinished row's blocks have all
// started or will start as blocks before them finish. (A ticket counter would
// not rely on it, but its round trip at each block's start cost 5-7% of the
// bandwidth; a block that waits far longer than any real wait traps instead of
// hanging.)
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <array>

namespace mlir::attn {
#define GEN_PASS_DEF_SOFTMAXTOGPU
#include "AttnDialect/Conversion/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

// Workspace layout, in 32-bit words: per row an arrival and a departure
// counter, then per (row, split) the split's (max, sum) as f32 bits.

/// Polls of a row's arrival counter after which a waiting block traps: far
/// more than any real wait (each poll sleeps, and takes a round trip to
/// L2), so only a GPU that broke the start order would get there.
constexpr int64_t kMostPolls = int64_t(1) << 26;

/// cp.async groups a tile's unrolled copies are committed in (copyTile).
constexpr int64_t kCopyGroups = 4;

/// Shared memory a split row's block takes besides its tile, for pricing
/// tiles (splitTileCount): what the system reserves per block (1 KiB) and
/// the kernel's static shared memory (blockReduce's 256 bytes), with room
/// to spare.
constexpr int64_t kBlockReserveBytes = 2048;

/// The `timeline` option's words per block (after the kernel's own words,
/// see bench/softmax_timeline.py): when the block starts, ends its first
/// pass, has its block's (max, sum), has published it and seen the row's
/// (split rows), passed the barrier after that, has the row's statistics
/// and ends; and its SM.
enum Stamp : int64_t {
  kStart,
  kFirstPassEnd,
  kMerged,
  kEnd,
  kReduced,
  kPolled,
  kPolledBarrier,
  kSm,
  kStampWords
};

/// Index arithmetic with less noise.
struct IndexBuilder {
  OpBuilder &b;
  Location loc;

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivUIOp::create(b, loc, x, y);
  }
  Value min(Value x, Value y) { return arith::MinUIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxUIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  /// `ifZero` when the 0/1 flag is 0, else `otherwise`: a select, which the
  /// kernel bundle keeps as one.
  Value choose(Value flag, Value ifZero, Value otherwise) {
    return arith::SelectOp::create(
        b, loc, cmp(arith::CmpIPredicate::ne, flag, c(0)), otherwise, ifZero);
  }
  Value negate(Value x) {
    return arith::XOrIOp::create(b, loc, x,
                                 arith::ConstantIntOp::create(b, loc, 1, 1));
  }
};

/// Builds the kernel body: the values are the kernel's view of the launch.
struct SoftmaxKernel : IndexBuilder {
  Value in, out;   // the [rows * N] buffers, flattened
  Value workspace; // memref<?xi32>
  Value scratch;   // memref<64xf32, workgroup>: blockReduce's warp pairs
  Value stage;     // memref<?xT, workgroup>: the block's tile
  Value rows, n, tid, threads, splits, sliceTiles;
  // Elements per vector, vectors per thread (unrolled), and how many of
  // them a tile uses (fewer for short rows, and for split rows whose tiles
  // are evened out).
  int64_t width, vectors;
  Value used;
  // Whether the code being built is for rows split across blocks.
  bool splitRow = false;
  // Set by `locate`: the block's row as a flat range, its slice, and
  // whether whole vectors may be read (the input is 16-byte aligned) and
  // written (the output too).
  Value row, split, rowStart, rowEnd, sliceStart, vectorIn, vectorOut;
  // With the `timeline` option: this block's first stamp word.
  Value stampBase;
  // Split rows: blocks in the launch's first wave (SMs x blocks per SM),
  // and the `first-wave-stagger` step in ns (0: none).
  Value firstWave;
  int64_t staggerNs = 0;

  /// With the `timeline` option, thread 0 writes the low 32 bits of
  /// %globaltimer (ns) to this block's word `stamp` (and its SM with the
  /// first).
  void stamp(Stamp stamp) {
    if (!stampBase)
      return;
    onlyIf(isThreadZero(), [&] {
      storeWord(add(stampBase, c(stamp)),
                NVVM::GlobalTimerLoOp::create(b, loc, b.getI32Type()));
      if (stamp == kStart)
        storeWord(add(stampBase, c(kSm)),
                  NVVM::SmIdOp::create(b, loc, b.getI32Type()));
    });
  }

  Value f32(double v) { return f32Constant(b, loc, v); }

  /// What a warp's vectors need: Whole, every vector of the tile lies in
  /// the row; WholeUsed, those the tile uses (`used`) do; Checked, each is
  /// copied and written checked against the row's ends (and `used`).
  enum class Vectors { Whole, WholeUsed, Checked };
  Value tile() { return mul(mul(threads, used), c(width)); }

  /// Whether this thread's vector `k` is part of the tile (uniform).
  Value inTile(int64_t k) { return cmp(arith::CmpIPredicate::ult, c(k), used); }

  /// exp(x - m) as exp2((x - m) * log2(e)); 0 where x is -inf (also when m
  /// is: a row of -inf).
  Value expMinus(Value x, Value m) {
    Value e = expFrom(x, m);
    Value masked = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x,
                                         f32(kNegInf));
    return arith::SelectOp::create(b, loc, masked, f32(0), e);
  }

  /// The max to subtract from a thread's elements: 0 when they are all
  /// -inf, so that x - max is -inf, not NaN.
  Value finiteMax(Value m) {
    Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                        f32(kNegInf));
    return arith::SelectOp::create(b, loc, empty, f32(0), m);
  }

  /// exp(x - m) for the elements, with m from finiteMax: three instructions
  /// (ex2 of -inf is 0).
  Value expFrom(Value x, Value m) {
    return math::Exp2Op::create(
        b, loc,
        arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, x, m),
                              f32(kLog2E)));
  }

  /// (max, sum) merged with another (max, sum).
  std::pair<Value, Value> merge(Value m, Value l, Value m2, Value l2) {
    Value newMax = arith::MaximumFOp::create(b, loc, m, m2);
    Value sum = arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, l, expMinus(m, newMax)),
        arith::MulFOp::create(b, loc, l2, expMinus(m2, newMax)));
    return {newMax, sum};
  }

  /// Emits `body` in an scf.if on `condition` (no results).
  void onlyIf(Value condition, llvm::function_ref<void()> body) {
    auto op = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(op.thenBlock()->getTerminator());
    body();
  }

  /// An scf.if yielding `types` from `then` and `otherwise`.
  ValueRange select(Value condition, TypeRange types,
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

  Value isThreadZero() { return cmp(arith::CmpIPredicate::eq, tid, c(0)); }

  /// Elements of a buffer's address, modulo `modulus` elements (the
  /// vector width by default).
  Value phase(Value buffer, int64_t modulus = 0) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(
        b, loc, b.getIndexType(), buffer);
    return rem(div(address, c(element.getIntOrFloatBitWidth() / 8)),
               c(modulus ? modulus : width));
  }

  /// The block's (row, split) and the flat ranges they cover: a row's
  /// splits are consecutive blocks (see the file comment).
  void locate(Value blockId) {
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
    Value zero = c(0);
    vectorIn = cmp(arith::CmpIPredicate::eq, phase(in), zero);
    vectorOut = both(vectorIn, cmp(arith::CmpIPredicate::eq, phase(out), zero));
    Value head = arith::SelectOp::create(b, loc, vectorIn,
                                         rem(rowStart, c(width)), zero);
    // Better: tiles that start on a 128-byte line, where the row's tiles
    // have room for the longer head. A warp's cp.async copies then cover
    // whole 32-byte sectors: from a 16-byte boundary, L2 served half again
    // as many sector reads (ncu, f16 N = 100003 against 100000).
    int64_t lineElements =
        128 / (cast<MemRefType>(in.getType()).getElementTypeBitWidth() / 8);
    Value lineHead =
        rem(add(phase(in, lineElements), rowStart), c(lineElements));
    Value room = cmp(arith::CmpIPredicate::ule, add(lineHead, n),
                     mul(splits, mul(sliceTiles, tile())));
    head =
        arith::SelectOp::create(b, loc, both(vectorIn, room), lineHead, head);
    sliceStart = add(sub(rowStart, head), mul(split, mul(sliceTiles, tile())));
  }

  /// Whether [p, p + width) lies in the row, as one aligned input vector.
  Value whole(Value p) {
    return both(vectorIn,
                both(cmp(arith::CmpIPredicate::sge, p, rowStart),
                     cmp(arith::CmpIPredicate::sle, add(p, c(width)), rowEnd)));
  }
  /// Whether [p, p + width) has elements of the row.
  Value touches(Value p) {
    return both(cmp(arith::CmpIPredicate::sgt, add(p, c(width)), rowStart),
                cmp(arith::CmpIPredicate::slt, p, rowEnd));
  }
  Value insideRow(Value p) {
    return both(cmp(arith::CmpIPredicate::sge, p, rowStart),
                cmp(arith::CmpIPredicate::slt, p, rowEnd));
  }

  Value widen(Value x) {
    return x.getType().isF32()
               ? x
               : arith::ExtFOp::create(b, loc, b.getF32Type(), x).getResult();
  }

  /// The 16-byte vector of `buffer` at `index`, widened to f32.
  SmallVector<Value> loadVector(Value buffer, Value index) {
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
  SmallVector<Value> load(Value p) {
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
                      [&]() -> SmallVector<Value> {
                        return {f32(kNegInf)};
                      })[0]);
                }
                return xs;
              },
              [&] { return SmallVector<Value>(width, f32(kNegInf)); }));
        });
    return llvm::to_vector(xs);
  }

  /// A pointer to element `index` of `buffer` in LLVM address space
  /// `space` (1 global, 3 shared), for cp.async and atomics.
  Value pointer(Value buffer, Value index, unsigned space) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    Value address = add(memref::ExtractAlignedPointerAsIndexOp::create(
                            b, loc, b.getIndexType(), buffer),
                        mul(index, c(element.getIntOrFloatBitWidth() / 8)));
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext(), space),
        arith::IndexCastOp::create(b, loc, b.getI64Type(), address)
            .getResult());
  }

  /// Copies this thread's vectors of the tile at `tileStart` into `stage`:
  /// cp.async for whole vectors (no registers held while they are in
  /// flight), committed in groups that the first pass waits for one at a
  /// time (waitForGroup), so it reduces the vectors that have landed while
  /// later groups are still in flight. Each thread later reads only what it
  /// copied, so waiting for its own copies is enough. The warps at a split
  /// row's ends (Checked) copy their whole vectors so too, each behind a
  /// check, and stage -inf for the others with one store each: they are in
  /// the blocks that the rest of the row waits for (staged in a loop after
  /// the copies, element by element, those blocks reached their first
  /// pass's end up to 2 us after the others: f16 N = 229379,
  /// bench/RESULTS.md).
  /// At a short row's ends they copy everything in stageChecked's loop and
  /// wait for all of it (f16 N = 1000: 0.96, 0.93 as split rows do).
  void copyTile(Value tileStart, Vectors kind) {
    if (kind == Vectors::Checked && !splitRow) {
      stageChecked(tileStart, /*copyWhole=*/true);
      NVVM::CpAsyncCommitGroupOp::create(b, loc);
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
      return;
    }
    for (int64_t k = 0; k < vectors; ++k) {
      if (k > 0 && groupOf(k) != groupOf(k - 1))
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
      OpBuilder::InsertionGuard guard(b);
      if (k > 0 && kind != Vectors::Whole) {
        auto used = scf::IfOp::create(b, loc, inTile(k), false);
        b.setInsertionPoint(used.thenBlock()->getTerminator());
      }
      Value at = position(c(0), k);
      Value p = add(tileStart, at);
      if (kind == Vectors::Checked) {
        // The others are staged -inf (one 16-byte store), and the row's
        // elements of those that straddle an end loaded after the copies.
        auto whole = scf::IfOp::create(b, loc, this->whole(p),
                                       /*withElseRegion=*/true);
        b.setInsertionPoint(whole.elseBlock()->getTerminator());
        stageNegInf(at);
        b.setInsertionPoint(whole.thenBlock()->getTerminator());
      }
      copyVector(at, p);
    }
    NVVM::CpAsyncCommitGroupOp::create(b, loc);
    if (kind != Vectors::Checked)
      return;
    // An input that is not 16-byte aligned is staged element by element.
    onlyIf(negate(vectorIn),
           [&] { stageChecked(tileStart, /*copyWhole=*/false); });
    loadStraddlingVectors(tileStart);
  }

  /// A vector of -inf into the stage at `at`.
  void stageNegInf(Value at) {
    Type element = cast<MemRefType>(in.getType()).getElementType();
    auto type = VectorType::get({width}, element);
    Value negInf = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(element, kNegInf)));
    vector::StoreOp::create(b, loc, negInf, stage, ValueRange{at},
                            /*nontemporal=*/false, llvm::Align(16));
  }

  /// One 16-byte cp.async of the input at `p` to the stage at `at`.
  void copyVector(Value at, Value p) {
    auto cacheGlobal = NVVM::LoadCacheModifierKindAttr::get(
        b.getContext(), NVVM::LoadCacheModifierKind::CG);
    NVVM::CpAsyncOp::create(b, loc, pointer(stage, at, 3), pointer(in, p, 1),
                            b.getI32IntegerAttr(16), cacheGlobal,
                            /*cpSize=*/Value());
  }

  /// Stages the vectors of the tile at `tileStart` that are not whole in
  /// the row element by element, -inf outside it, so that every staged
  /// vector is read whole; with `copyWhole` copies the whole ones too. For
  /// the warps at a short row's ends, and split rows of a misaligned input.
  /// A loop: unrolled, its per-element code was fetched cold into the
  /// instruction cache by the block that the rest of its row waits for.
  void stageChecked(Value tileStart, bool copyWhole) {
    OpBuilder::InsertionGuard guard(b);
    auto loop = scf::ForOp::create(b, loc, c(0), used, c(1));
    b.setInsertionPoint(loop.getBody()->getTerminator());
    Value at = position(c(0), loop.getInductionVar());
    Value p = add(tileStart, at);
    auto wholeOrNot =
        scf::IfOp::create(b, loc, whole(p), /*withElseRegion=*/true);
    if (copyWhole) {
      OpBuilder::InsertionGuard copying(b);
      b.setInsertionPoint(wholeOrNot.thenBlock()->getTerminator());
      copyVector(at, p);
    }
    b.setInsertionPoint(wholeOrNot.elseBlock()->getTerminator());
    Type element = cast<MemRefType>(in.getType()).getElementType();
    for (int64_t i = 0; i < width; ++i) {
      Value q = add(p, c(i));
      Value x = select(
          insideRow(q), element,
          [&]() -> SmallVector<Value> {
            return {memref::LoadOp::create(b, loc, in, q)};
          },
          [&]() -> SmallVector<Value> {
            return {arith::ConstantOp::create(
                b, loc, b.getFloatAttr(element, kNegInf))};
          })[0];
      memref::StoreOp::create(b, loc, x, stage, add(at, c(i)));
    }
  }

  /// The copy group of unrolled vector `k` (copyTile): kCopyGroups groups
  /// of about equal size. (With the whole tile waited for at once, odd f16
  /// rows split across blocks reached 0.87 of the copy, 0.89 with four
  /// groups; f16 N = 2^20 0.90 and 0.93.)
  int64_t groupOf(int64_t k) {
    int64_t groups = std::min(kCopyGroups, vectors);
    return k * groups / vectors;
  }

  /// Before the first pass reads vector `k`: waits for its copy group
  /// where one starts (with the later groups still in flight).
  void waitForGroup(int64_t k) {
    if (k > 0 && groupOf(k) == groupOf(k - 1))
      return;
    int64_t later = groupOf(vectors - 1) - groupOf(k);
    NVVM::CpAsyncWaitGroupOp::create(b, loc, later);
  }

  /// For a split row with aligned input: the row's elements of the (at
  /// most two) vectors of this tile that straddle an end of the row, loaded
  /// by the thread that staged them, after it has issued all its copies
  /// and without a branch per element, so the loads overlap the copies.
  /// (In the copy loop they stalled its copies at the start of the row's
  /// first block, which the rest of the row waits for: odd f16 rows ran at
  /// 0.86 of the copy, 0.90 with those loads left out. Loaded before the
  /// copies and staged after them, odd f16 rows lost 0.01-0.04.)
  void loadStraddlingVectors(Value tileStart) {
    Type element = cast<MemRefType>(in.getType()).getElementType();
    Value negInf =
        arith::ConstantOp::create(b, loc, b.getFloatAttr(element, kNegInf));
    auto i32 = [&](Value v) {
      return arith::IndexCastOp::create(b, loc, b.getI32Type(), v).getResult();
    };
    for (Value q : {rowStart, sub(rowEnd, c(1))}) {
      Value offset = sub(q, tileStart);
      Value inTileRange = both(cmp(arith::CmpIPredicate::sge, offset, c(0)),
                               cmp(arith::CmpIPredicate::slt, offset, tile()));
      // 32-bit arithmetic: offsets within a tile are small.
      Value vector = arith::DivUIOp::create(
          b, loc, i32(offset), arith::ConstantIntOp::create(b, loc, width, 32));
      Value owner = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq,
          arith::RemUIOp::create(b, loc, vector, i32(threads)), i32(tid));
      onlyIf(both(both(vectorIn, inTileRange), owner), [&] {
        Value at =
            mul(arith::IndexCastOp::create(b, loc, b.getIndexType(), vector),
                c(width));
        Value p = add(tileStart, at);
        onlyIf(negate(whole(p)), [&] {
          SmallVector<Value> xs;
          for (int64_t i = 0; i < width; ++i) {
            Value e = add(p, c(i));
            Value inside = insideRow(e);
            Value safe = arith::SelectOp::create(b, loc, inside, e, q);
            xs.push_back(arith::SelectOp::create(
                b, loc, inside, memref::LoadOp::create(b, loc, in, safe),
                negInf));
          }
          for (int64_t i = 0; i < width; ++i)
            memref::StoreOp::create(b, loc, xs[i], stage, add(at, c(i)));
        });
      });
    }
  }

  /// Writes softmax values `ys` (f32) of the vector at `p`: one 16-byte
  /// store when it lies in the row and the output is aligned like the
  /// input, element stores otherwise.
  void store(Value p, ArrayRef<Value> ys, bool wholeVector = false) {
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

  /// Flat position of this thread's vector `k` from `tileStart` on:
  /// consecutive threads take consecutive vectors (coalesced).
  Value position(Value tileStart, Value k) {
    return add(tileStart, mul(add(mul(k, threads), tid), c(width)));
  }
  Value position(Value tileStart, int64_t k) {
    return position(tileStart, c(k));
  }

  /// The row's max and sum over the block, from each thread's: each warp
  /// merges its lanes' (a butterfly of shuffles), lane 0 puts the warp's
  /// pair in `scratch`, and after one barrier every thread merges the
  /// warps' pairs in the same order (so all get the same bits). Two
  /// gpu.all_reduce (max, then the rescaled sum) took four barriers, and
  /// their 768 bytes of shared memory moved the tile off its 128-byte line
  /// when anything was added to them.
  std::pair<Value, Value> blockReduce(Value m, Value l) {
    auto [warpMax, warpSum] = warpMerge(m, l);
    Value warp = div(tid, c(32));
    onlyIf(cmp(arith::CmpIPredicate::eq, rem(tid, c(32)), c(0)), [&] {
      memref::StoreOp::create(b, loc, warpMax, scratch, mul(warp, c(2)));
      memref::StoreOp::create(b, loc, warpSum, scratch,
                              add(mul(warp, c(2)), c(1)));
    });
    gpu::BarrierOp::create(b, loc);
    auto warps = scf::ForOp::create(b, loc, c(0), div(threads, c(32)), c(1),
                                    ValueRange{f32(kNegInf), f32(0)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(warps.getBody());
    Value at = mul(warps.getInductionVar(), c(2));
    auto [rowMax, rowSum] =
        merge(warps.getRegionIterArgs()[0], warps.getRegionIterArgs()[1],
              memref::LoadOp::create(b, loc, scratch, at),
              memref::LoadOp::create(b, loc, scratch, add(at, c(1))));
    scf::YieldOp::create(b, loc, ValueRange{rowMax, rowSum});
    return {warps.getResult(0), warps.getResult(1)};
  }

  /// A pointer to workspace word `word`, for atomics.
  Value wordPointer(Value word) { return pointer(workspace, word, 1); }

  /// Adds 1 to a workspace word at GPU scope; the old value.
  Value atomicAdd(Value word, LLVM::AtomicOrdering ordering) {
    Value one = arith::ConstantIntOp::create(b, loc, 1, 32);
    return LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add,
                                     wordPointer(word), one, ordering,
                                     "device");
  }

  void storeWord(Value word, Value value) {
    memref::StoreOp::create(b, loc, value, workspace, word);
  }

  /// Workspace words of this block's row (see the layout above): its
  /// arrival and departure counters, and split `s`'s (max, sum).
  Value arrivedWord() { return row; }
  Value departedWord() { return add(rows, row); }
  Value partialWord(Value s) {
    return add(mul(rows, c(2)), mul(add(mul(row, splits), s), c(2)));
  }

  /// (max, sum) merged across the 32 lanes of a warp (a butterfly: every
  /// lane ends with the same bits, since each step's merge is symmetric).
  std::pair<Value, Value> warpMerge(Value m, Value l) {
    for (int32_t offset = 1; offset < 32; offset *= 2) {
      auto across = [&](Value v) {
        return gpu::ShuffleOp::create(b, loc, v, offset, /*width=*/32,
                                      gpu::ShuffleMode::XOR)
            .getShuffleResult();
      };
      std::tie(m, l) = merge(m, l, across(m), across(l));
    }
    return {m, l};
  }

  /// The row's (max, sum) from every split's: publish this block's, wait
  /// until the row's blocks have all published, merge theirs.
  std::array<Value, 3> mergeSplits(Value m, Value l) {
    stamp(kReduced);
    Value arrived = arrivedWord();
    Value expected = arith::IndexCastOp::create(b, loc, b.getI32Type(), splits);
    onlyIf(isThreadZero(), [&] {
      Value slot = partialWord(split);
      storeWord(slot, arith::BitcastOp::create(b, loc, b.getI32Type(), m));
      storeWord(add(slot, c(1)),
                arith::BitcastOp::create(b, loc, b.getI32Type(), l));
      // The partial is visible before the arrival counts: a release
      // reduction, as PTX has it (NVPTX emits the orderings of atomicrmw as
      // relaxed atoms, and a fence would wait for the stores).
      LLVM::InlineAsmOp::create(
          b, loc, TypeRange{}, ValueRange{wordPointer(arrived)},
          "red.release.gpu.global.add.u32 [$0], 1;", "l,~{memory}",
          /*has_side_effects=*/true, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None,
          /*asm_dialect=*/LLVM::AsmDialectAttr(),
          /*operand_attrs=*/ArrayAttr());
      Value pointer = wordPointer(arrived);
      auto wait = scf::WhileOp::create(b, loc, b.getIndexType(), c(0));
      {
        OpBuilder::InsertionGuard guard(b);
        Block *before =
            b.createBlock(&wait.getBefore(), {}, b.getIndexType(), loc);
        Value count = LLVM::LoadOp::create(
            b, loc, b.getI32Type(), pointer, /*alignment=*/4,
            /*isVolatile=*/false, /*isNonTemporal=*/false,
            /*isInvariant=*/false, /*isInvariantGroup=*/false,
            LLVM::AtomicOrdering::acquire, "device");
        scf::ConditionOp::create(
            b, loc, cmp(arith::CmpIPredicate::ult, count, expected),
            before->getArgument(0));
        Block *after =
            b.createBlock(&wait.getAfter(), {}, b.getIndexType(), loc);
        Value polls = after->getArgument(0);
        onlyIf(cmp(arith::CmpIPredicate::eq, polls, c(kMostPolls)),
               [&] { LLVM::Trap::create(b, loc); });
        NVVM::NanosleepOp::create(b, loc,
                                  arith::ConstantIntOp::create(b, loc, 32, 32));
        scf::YieldOp::create(b, loc, add(polls, c(1)));
      }
    });
    stamp(kPolled);
    // The acquiring load of thread 0, then the barrier, order every
    // thread's reads of the partials after their writes.
    gpu::BarrierOp::create(b, loc);
    stamp(kPolledBarrier);
    // Each warp merges the row's partials itself (lane j those of splits j,
    // j + 32, ..., then shuffles), so no block-wide reduction follows: with
    // two gpu.all_reduce here split rows ran 0.01-0.03 of the copy slower.
    // Every warp gets the same bits (same partials per lane, same order).
    auto gather = scf::ForOp::create(b, loc, rem(tid, c(32)), splits, c(32),
                                     ValueRange{f32(kNegInf), f32(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(gather.getBody());
      Value slot = partialWord(gather.getInductionVar());
      auto word = [&](Value w) {
        return arith::BitcastOp::create(
            b, loc, b.getF32Type(),
            memref::LoadOp::create(b, loc, workspace, w));
      };
      auto [mm, ll] =
          merge(gather.getRegionIterArgs()[0], gather.getRegionIterArgs()[1],
                word(slot), word(add(slot, c(1))));
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
          return {atomicAdd(departedWord(), LLVM::AtomicOrdering::monotonic)};
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
  void leave(Value left) {
    if (!splitRow)
      return;
    Value lastOne =
        arith::IndexCastOp::create(b, loc, b.getI32Type(), sub(splits, c(1)));
    onlyIf(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, left, lastOne),
        [&] {
          Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
          storeWord(arrivedWord(), zero);
          storeWord(departedWord(), zero);
          Value first = partialWord(c(0));
          auto clear = scf::ForOp::create(b, loc, first,
                                          add(first, mul(splits, c(2))), c(1));
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(clear.getBody()->getTerminator());
          storeWord(clear.getInductionVar(), zero);
        });
  }

  /// (max, sum) over all splits when the row is split, else the block's;
  /// and what `leave` needs after the block's writes.
  std::array<Value, 3> rowStatistics(Value m, Value l) {
    stamp(kFirstPassEnd);
    auto [blockMax, blockSum] = blockReduce(m, l);
    std::array<Value, 3> statistics = {blockMax, blockSum, Value()};
    if (splitRow)
      statistics = mergeSplits(blockMax, blockSum);
    stamp(kMerged);
    return statistics;
  }

  Value inverse(Value sum) {
    Value positive =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, sum, f32(0));
    return arith::SelectOp::create(
        b, loc, positive, arith::DivFOp::create(b, loc, f32(1), sum), f32(0));
  }

  /// exp(x - rowMax) * scale, with rowMax from finiteMax.
  SmallVector<Value> probabilities(ArrayRef<Value> xs, Value rowMax,
                                   Value scale) {
    SmallVector<Value> ys;
    for (Value x : xs)
      ys.push_back(arith::MulFOp::create(b, loc, expFrom(x, rowMax), scale));
    return ys;
  }

  using StagedBody = llvm::function_ref<SmallVector<Value>(
      Value, ArrayRef<Value>, ValueRange)>;

  /// Emits `body(p, xs, acc)` for each of this thread's vectors of the
  /// staged tile, threading `init` through as acc; xs are f32, -inf outside
  /// the row (copyTile staged them so). Unrolled: vectors past `used` are
  /// skipped unless `kind` is Whole; Checked is a loop over `used`. The
  /// first pass over the tile (unrolled) waits for each copy group before
  /// its first vector (waitForGroup).
  SmallVector<Value> forEachStaged(Vectors kind, ValueRange init,
                                   StagedBody body, bool firstPass = false) {
    if (kind == Vectors::Checked) {
      // A loop, as in copyTile (only the writes need the checked form).
      OpBuilder::InsertionGuard guard(b);
      auto loop = scf::ForOp::create(b, loc, c(0), used, c(1), init);
      if (init.empty())
        b.setInsertionPoint(loop.getBody()->getTerminator());
      else
        b.setInsertionPointToStart(loop.getBody());
      Value at = position(c(0), loop.getInductionVar());
      SmallVector<Value> next = body(add(sliceStart, at), loadVector(stage, at),
                                     loop.getRegionIterArgs());
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
        return body(add(sliceStart, at), loadVector(stage, at), acc);
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
  Value warpVectorsWhole() {
    // A thread's vectors are increasing in position: its first and last
    // used ones bound them.
    Value first = position(sliceStart, 0);
    Value last = position(sliceStart, sub(used, c(1)));
    Value whole =
        both(vectorOut,
             both(cmp(arith::CmpIPredicate::sge, first, rowStart),
                  cmp(arith::CmpIPredicate::sle, add(last, c(width)), rowEnd)));
    Value everyLane = arith::ConstantIntOp::create(b, loc, -1, 32);
    return NVVM::VoteSyncOp::create(b, loc, b.getI1Type(), everyLane, whole,
                                    NVVM::VoteSyncKind::all);
  }

  /// Emits `phase(kind)` in a three-way choice on what this warp's vectors
  /// need; returns its results. No barrier may be in `phase`.
  SmallVector<Value>
  byVectors(Value warpWhole, TypeRange types,
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
  /// mod 3, `staggerNs` apart: all at once, every block of an SM reached
  /// its exchange together and memory idled for several us while they
  /// waited (bench/softmax_timeline.py); staggered, a third copies while
  /// the others exchange (the measurements are in bench/RESULTS.md). The
  /// only blocks that wait for a sleeping one are its row's, which sleep
  /// alike (or start after the first wave anyway).
  void staggerFirstWave() {
    if (!splitRow || staggerNs <= 0)
      return;
    Value step = rem(row, c(3));
    Value late = both(
        cmp(arith::CmpIPredicate::ult, add(mul(row, splits), split), firstWave),
        cmp(arith::CmpIPredicate::ne, step, c(0)));
    onlyIf(late, [&] {
      // nanosleep takes at most about 1 ms and is approximate: 1 us naps.
      int64_t naps = std::max<int64_t>(staggerNs / 1000, 1);
      auto sleep = scf::ForOp::create(b, loc, c(0), mul(step, c(naps)), c(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(sleep.getBody()->getTerminator());
      NVVM::NanosleepOp::create(
          b, loc, arith::ConstantIntOp::create(b, loc, staggerNs / naps, 32));
    });
  }

  /// A slice of one tile: read from memory once, into shared memory, and
  /// reduced and written from there.
  void buildResident() {
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
          kind, {f32(kNegInf), f32(0)},
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
  void buildTwoSweeps() {
    auto sweep = scf::ForOp::create(b, loc, c(0), sliceTiles, c(1),
                                    ValueRange{f32(kNegInf), f32(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sweep.getBody());
      // Vector by vector through the slice: vector j of tile s is at
      // sliceStart + ((s * used + j) * threads + tid) * width.
      Value first = mul(sweep.getInductionVar(), used);
      auto inner = scf::ForOp::create(b, loc, first, add(first, used), c(1),
                                      sweep.getRegionIterArgs());
      b.setInsertionPointToStart(inner.getBody());
      Value m = inner.getRegionIterArgs()[0], l = inner.getRegionIterArgs()[1];
      SmallVector<Value> xs =
          load(position(sliceStart, inner.getInductionVar()));
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
    auto write = scf::ForOp::create(b, loc, c(0), mul(sliceTiles, used), c(1));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(write.getBody()->getTerminator());
      Value p = position(sliceStart, write.getInductionVar());
      store(p, probabilities(load(p), rowMax, scale));
    }
    leave(left);
  }
};

struct SoftmaxToGpuPass : attn::impl::SoftmaxToGpuBase<SoftmaxToGpuPass> {
  using SoftmaxToGpuBase::SoftmaxToGpuBase;

  void runOnOperation() override {
    for (int64_t count :
         {static_cast<int64_t>(threads), static_cast<int64_t>(splitThreads)})
      if (count < 32 || count > 1024 || count % 32 != 0) {
        getOperation()->emitError()
            << "attn-softmax-to-gpu: threads and split-threads must be "
               "multiples of 32 in [32, 1024], got "
            << count;
        return signalPassFailure();
      }
    // A block's tile must fit the shared memory a block may have (227 KiB
    // on sm_90, 163 KiB on sm_80; the runtime refuses more at launch): f32
    // tiles are the largest.
    if (elementsPerThread < 1 || elementsPerThread * 4 * threads > 163 * 1024) {
      getOperation()->emitError()
          << "attn-softmax-to-gpu: elements-per-thread must be at least 1 "
             "and a block's f32 tile (threads x elements-per-thread x 4 "
             "bytes) at most 163 KiB, got "
          << static_cast<int64_t>(elementsPerThread) << " x "
          << static_cast<int64_t>(threads);
      return signalPassFailure();
    }
    if (firstWaveStagger < 0 || firstWaveStagger > 100000) {
      getOperation()->emitError()
          << "attn-softmax-to-gpu: first-wave-stagger must be in [0, 100000] "
             "ns, got "
          << static_cast<int64_t>(firstWaveStagger);
      return signalPassFailure();
    }
    if (sharedMemoryPerSm < 16 * 1024) {
      getOperation()->emitError()
          << "attn-softmax-to-gpu: shared-memory-per-sm must be at least 16 "
             "KiB, got "
          << static_cast<int64_t>(sharedMemoryPerSm);
      return signalPassFailure();
    }
    if (splitVectors < 1 || splitVectors * 16 * splitThreads > 163 * 1024) {
      getOperation()->emitError()
          << "attn-softmax-to-gpu: split-vectors must be at least 1 and a "
             "split row's tile (split-threads x split-vectors x 16 bytes) at "
             "most 163 KiB, got "
          << static_cast<int64_t>(splitVectors) << " x "
          << static_cast<int64_t>(splitThreads);
      return signalPassFailure();
    }
    SmallVector<SoftmaxOp> ops;
    getOperation()->walk([&](SoftmaxOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (SoftmaxOp op : ops)
      if (failed(lower(rewriter, op)))
        return signalPassFailure();
  }

  /// Blocks of a split row an SM holds with `vectors` per thread, by shared
  /// memory: a block's tile plus kBlockReserveBytes.
  Value blocksPerSm(IndexBuilder &h, Value vectors) {
    return h.div(
        h.c(sharedMemoryPerSm),
        h.add(h.mul(vectors, h.c(splitThreads * 16)), h.c(kBlockReserveBytes)));
  }

  /// How many tiles a split row of `span` elements is evened out over: as
  /// few as `split-vectors` per thread allow, or more and smaller ones when
  /// an SM then holds one more block and so over 10% more of the rows at
  /// once (f16 N = 229379: 9 tiles of 13 vectors, 4 blocks per SM, 0.90 of
  /// the copy, against 0.87 with 8 of 15, 3 per SM; at N = 2^20, 40 tiles
  /// of 13 would hold 6% more and lost 0.01-0.03 to 32 tiles of 16: more
  /// blocks per row wait longer for each other; bench/RESULTS.md). Never
  /// past one tile per SM, where rows would be swept twice.
  Value splitTileCount(IndexBuilder &h, Value span, int64_t width, Value one) {
    // blocksPerSm, for a vector count known here.
    auto fitting = [&](int64_t v) {
      return sharedMemoryPerSm / (v * splitThreads * 16 + kBlockReserveBytes);
    };
    auto tilesOf = [&](int64_t v) {
      return h.max(h.ceilDiv(span, h.c(splitThreads * v * width)), one);
    };
    Value few = tilesOf(splitVectors);
    // The most vectors per thread with which one more block fits.
    int64_t denser = splitVectors - 1;
    while (denser > 0 && fitting(denser) <= fitting(splitVectors))
      --denser;
    if (denser == 0)
      return few;
    Value more = tilesOf(denser);
    auto vectorsOf = [&](Value tiles) {
      return h.max(h.ceilDiv(span, h.mul(tiles, h.c(splitThreads * width))),
                   one);
    };
    // more is better if blocksPerSm(more) / more > 1.1 blocksPerSm(few) /
    // few, and at most one tile per SM: a > b as a 0/1 count is
    // min(a / (b + 1), 1).
    Value gain = h.mul(h.mul(blocksPerSm(h, vectorsOf(more)), few), h.c(10));
    Value keep = h.mul(h.mul(blocksPerSm(h, vectorsOf(few)), more), h.c(11));
    Value better = h.min(h.div(gain, h.add(keep, one)), one);
    Value sms = MultiprocessorCountOp::create(h.b, h.loc, h.b.getIndexType());
    Value room = h.min(h.div(h.add(sms, one), h.add(more, one)), one);
    return h.choose(h.mul(better, room), few, more);
  }

  LogicalResult lower(RewriterBase &rewriter, SoftmaxOp op) {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    auto outType = cast<RankedTensorType>(op.getOutput().getType());
    if (inType.getRank() != 2)
      return op.emitOpError()
             << "lowers to the GPU for rank 2 ([rows, N]) only, got rank "
             << inType.getRank() << "; collapse the outer dims first";
    if (!asyncCopy)
      return op.emitOpError()
             << "lowers to the GPU with cp.async, which the target does not "
                "have (sm_80 or newer)";
    int64_t width = 128 / inType.getElementTypeBitWidth();
    int64_t elementBytes = inType.getElementTypeBitWidth() / 8;
    if (elementsPerThread % width != 0)
      return op.emitOpError()
             << "cannot copy " << static_cast<int64_t>(elementsPerThread)
             << " elements per thread in 16-byte vectors of " << width
             << " (elements-per-thread must be a multiple of " << width << ")";
    int64_t vectors = elementsPerThread / width;

    rewriter.setInsertionPoint(op);
    IndexBuilder h{rewriter, loc};
    auto bufferOf = [&](Value tensor, RankedTensorType type, bool readOnly) {
      return bufferization::ToBufferOp::create(
          rewriter, loc,
          MemRefType::get(type.getShape(), type.getElementType()), tensor,
          readOnly);
    };
    Value in = bufferOf(op.getInput(), inType, true);
    Value out = bufferOf(op.getOutput(), outType, false);
    Value rows = memref::DimOp::create(rewriter, loc, in, 0);
    Value n = memref::DimOp::create(rewriter, loc, in, 1);
    // A row's vectors span width - 1 more elements than the row when N is
    // not a multiple of the width (rows start anywhere in a vector).
    Value ragged =
        h.min(h.sub(n, h.mul(h.div(n, h.c(width)), h.c(width))), h.c(1));
    Value span = h.add(n, h.mul(ragged, h.c(width - 1)));
    // Threads: enough to hold a row, whole warps, at least 32; rows longer
    // than `threads` hold are split across blocks of `split-threads` with
    // `split-vectors` each (more blocks per SM hide the blocks' waits for
    // each other).
    Value fit = h.max(
        h.mul(h.ceilDiv(span, h.c(vectors * width * 32)), h.c(32)), h.c(32));
    Value split = h.min(h.div(fit, h.c(threads + 1)), h.c(1));
    Value blockSize = h.choose(split, fit, h.c(splitThreads));
    // Short rows use fewer vectors per thread than the 32 threads hold; a
    // split row's tiles are evened out, so that its blocks all copy about
    // as much and none waits long for a full one.
    // Empty rows (N = 0) keep every count at least 1, so that no launch
    // expression divides by zero (both choices are evaluated): a block per
    // row that reads and writes nothing; no rows launch no blocks.
    Value one = h.c(1);
    Value splitTiles = splitTileCount(h, span, width, one);
    Value used = h.max(
        h.choose(split,
                 h.min(h.c(vectors), h.ceilDiv(span, h.mul(fit, h.c(width)))),
                 h.ceilDiv(span, h.mul(splitTiles, h.c(splitThreads * width)))),
        one);
    Value tileElements = h.mul(h.mul(blockSize, used), h.c(width));
    Value tiles = h.ceilDiv(span, tileElements);
    // At most one block per SM for a row, so all of a row's blocks can be
    // resident at once (they wait for each other).
    Value splits =
        h.max(h.min(tiles, MultiprocessorCountOp::create(
                               rewriter, loc, rewriter.getIndexType())),
              one);
    Value sliceTiles = h.ceilDiv(tiles, splits);
    // Split-row blocks of the first wave (see staggerFirstWave).
    Value firstWave;
    if (firstWaveStagger > 0)
      firstWave = h.mul(
          MultiprocessorCountOp::create(rewriter, loc, rewriter.getIndexType()),
          blocksPerSm(h, used));
    Value blocks = h.mul(rows, splits);
    // The exchange's words (see the layout above), then the timeline's.
    Value exchangeWords = h.mul(h.c(2), h.add(rows, blocks));
    Value words = exchangeWords;
    if (timeline)
      words = h.add(words, h.mul(blocks, h.c(kStampWords)));
    Value workspace = WorkspaceOp::create(
        rewriter, loc,
        MemRefType::get({ShapedType::kDynamic}, rewriter.getI32Type()), words);
    Value stageBytes =
        arith::IndexCastOp::create(rewriter, loc, rewriter.getI32Type(),
                                   h.mul(tileElements, h.c(elementBytes)));

    auto workgroup = gpu::AddressSpaceAttr::get(rewriter.getContext(),
                                                gpu::AddressSpace::Workgroup);
    auto launch = gpu::LaunchOp::create(rewriter, loc, blocks, one, one,
                                        blockSize, one, one, stageBytes);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&launch.getBody().front());
      // Flat [rows * N] views (in the kernel: the bundle passes the
      // arguments' buffers as they are).
      auto flat = [&](Value buffer) {
        return memref::CollapseShapeOp::create(
            rewriter, loc, buffer, ArrayRef<ReassociationIndices>{{0, 1}});
      };
      SoftmaxKernel kernel{{rewriter, loc}};
      kernel.in = flat(in);
      kernel.out = flat(out);
      kernel.workspace = workspace;
      Value shared = gpu::DynamicSharedMemoryOp::create(
          rewriter, loc,
          MemRefType::get({ShapedType::kDynamic}, rewriter.getI8Type(),
                          MemRefLayoutAttrInterface{}, workgroup));
      kernel.stage = memref::ViewOp::create(
          rewriter, loc,
          MemRefType::get({ShapedType::kDynamic}, inType.getElementType(),
                          MemRefLayoutAttrInterface{}, workgroup),
          shared, h.c(0),
          ValueRange{h.mul(h.mul(launch.getBlockSizeX(), used), h.c(width))});
      // 256 bytes: the dynamic tile after it stays on a 128-byte line.
      kernel.scratch = launch.addWorkgroupAttribution(
          MemRefType::get({64}, rewriter.getF32Type(),
                          MemRefLayoutAttrInterface{}, workgroup),
          loc);
      kernel.rows = rows;
      kernel.n = n;
      kernel.tid = launch.getThreadIds().x;
      kernel.threads = launch.getBlockSizeX();
      kernel.splits = splits;
      kernel.sliceTiles = sliceTiles;
      kernel.staggerNs = firstWaveStagger;
      kernel.firstWave = firstWave;
      kernel.width = width;
      kernel.used = used;
      if (timeline)
        kernel.stampBase = h.add(
            exchangeWords, h.mul(launch.getBlockIds().x, h.c(kStampWords)));
      kernel.stamp(kStart);
      // Three kernels in one, by the shape: a row in one block, a row split
      // across blocks each holding a tile, or each sweeping a slice.
      auto build = [&](scf::IfOp choice, bool then, bool splitRow,
                       int64_t unrolled, void (SoftmaxKernel::*body)()) {
        OpBuilder::InsertionGuard branch(rewriter);
        rewriter.setInsertionPoint(then ? choice.thenBlock()->getTerminator()
                                        : choice.elseBlock()->getTerminator());
        kernel.splitRow = splitRow;
        kernel.vectors = unrolled;
        kernel.locate(launch.getBlockIds().x);
        (kernel.*body)();
      };
      auto byRow = scf::IfOp::create(
          rewriter, loc, h.cmp(arith::CmpIPredicate::eq, split, h.c(0)),
          /*withElseRegion=*/true);
      build(byRow, true, false, vectors, &SoftmaxKernel::buildResident);
      {
        OpBuilder::InsertionGuard branch(rewriter);
        rewriter.setInsertionPoint(byRow.elseBlock()->getTerminator());
        auto bySlice = scf::IfOp::create(
            rewriter, loc, h.cmp(arith::CmpIPredicate::eq, sliceTiles, h.c(1)),
            /*withElseRegion=*/true);
        build(bySlice, true, true, splitVectors, &SoftmaxKernel::buildResident);
        build(bySlice, false, true, splitVectors,
              &SoftmaxKernel::buildTwoSweeps);
      }
      kernel.stamp(kEnd);
      gpu::TerminatorOp::create(rewriter, loc);
    }
    Value result = bufferization::ToTensorOp::create(
        rewriter, loc, outType, out, rewriter.getUnitAttr(),
        rewriter.getUnitAttr());
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace
