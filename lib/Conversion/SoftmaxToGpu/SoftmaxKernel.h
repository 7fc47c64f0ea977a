//===- SoftmaxKernel.h - attn.softmax's kernel body -------------*- C++ -*-===//
//
// Builds the body of attn-softmax-to-gpu's gpu.launch: what one block does
// with its row or its part of a row. SoftmaxKernel.cpp has the passes over
// the tile and the reductions, StageTile.cpp the copies into shared memory.
// docs/Softmax.md describes the design.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_SOFTMAXTOGPU_SOFTMAXKERNEL_H
#define LIB_CONVERSION_SOFTMAXTOGPU_SOFTMAXKERNEL_H

#include "AttnDialect/Conversion/SoftmaxLaunchPlan.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

#include <array>

namespace mlir::attn::softmax {

/// Index arithmetic with less noise; as the Sizes of SoftmaxLaunchPlan.h,
/// it emits the launch's arithmetic.
struct IndexBuilder {
  using Value = mlir::Value;
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
  /// `x` when the 0/1 flag is 0, else `y`: a select, which the kernel
  /// bundle keeps as one.
  Value choose(Value flag, Value x, Value y) {
    return arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flag, c(0)), y,
        x);
  }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value negate(Value x) {
    return arith::XOrIOp::create(b, loc, x,
                                 arith::ConstantIntOp::create(b, loc, 1, 1));
  }
  Value multiprocessorCount() {
    return MultiprocessorCountOp::create(b, loc, b.getIndexType());
  }
};

/// Builds the kernel body: the values are the kernel's view of the launch.
/// The methods are documented where they are defined.
struct SoftmaxKernel : IndexBuilder {
  Value in, out;   // the [rows * N] buffers, flattened
  Value workspace; // memref<?xi32>, laid out as docs/Softmax.md has it
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
  // Split rows: blocks in the launch's first wave (SMs x blocks per SM),
  // and the first-wave stagger's step as naps (0: none) of napNs.
  Value firstWave;
  int64_t naps = 0, napNs = 0;

  /// Builds the three kernels in one, chosen by the launch: a row in one
  /// block (`rowSplit` is 0), a row split across blocks each holding a
  /// tile (`sliceTiles` is 1), or each sweeping a slice of several.
  void build(Value blockId, Value rowSplit, int64_t rowVectors,
             int64_t splitVectors);

  //===--- Emitting -------------------------------------------------------===//

  Value f32(double v) { return f32Constant(b, loc, v); }
  Value isThreadZero() { return cmp(arith::CmpIPredicate::eq, tid, c(0)); }
  void onlyIf(Value condition, llvm::function_ref<void()> body);
  ValueRange select(Value condition, TypeRange types,
                    llvm::function_ref<SmallVector<Value>()> then,
                    llvm::function_ref<SmallVector<Value>()> otherwise);

  //===--- Where the block's elements are ---------------------------------===//

  /// What a warp's vectors need: Whole, every vector of the tile lies in
  /// the row; WholeUsed, those the tile uses (`used`) do; Checked, each is
  /// copied and written checked against the row's ends (and `used`).
  enum class Vectors { Whole, WholeUsed, Checked };
  Value tile() { return mul(mul(threads, used), c(width)); }
  /// Whether this thread's vector `k` is part of the tile (uniform).
  Value inTile(int64_t k) { return cmp(arith::CmpIPredicate::ult, c(k), used); }
  Value phase(Value buffer, int64_t modulus = 0);
  void locate(Value blockId);
  Value whole(Value p);
  Value touches(Value p);
  Value insideRow(Value p);
  /// Flat position of this thread's vector `k` from `tileStart` on:
  /// consecutive threads take consecutive vectors (coalesced).
  Value position(Value tileStart, Value k) {
    return add(tileStart, mul(add(mul(k, threads), tid), c(width)));
  }
  Value position(Value tileStart, int64_t k) {
    return position(tileStart, c(k));
  }
  Value warpVectorsWhole();

  //===--- Loads and stores (SoftmaxKernel.cpp) ---------------------------===//

  Value widen(Value x);
  SmallVector<Value> loadVector(Value buffer, Value index);
  SmallVector<Value> load(Value p);
  void store(Value p, ArrayRef<Value> ys, bool wholeVector = false);

  //===--- Staging the tile in shared memory (StageTile.cpp) --------------===//

  void copyTile(Value tileStart, Vectors kind);
  void stageNegInf(Value at);
  void copyVector(Value at, Value p);
  void stageChecked(Value tileStart, bool copyWhole);
  int64_t groupOf(int64_t k);
  void waitForGroup(int64_t k);
  void loadStraddlingVectors(Value tileStart);

  //===--- Softmax arithmetic ---------------------------------------------===//

  Value expMinus(Value x, Value m);
  Value finiteMax(Value m);
  Value expFrom(Value x, Value m);
  std::pair<Value, Value> merge(Value m, Value l, Value m2, Value l2);
  /// The (max, sum) of no elements, (-inf, 0): what a merge starts from.
  SmallVector<Value> noStatistics() { return {f32(kNegInf), f32(0)}; }
  Value inverse(Value sum);
  SmallVector<Value> probabilities(ArrayRef<Value> xs, Value rowMax,
                                   Value scale);

  //===--- Reductions and the exchange between a row's blocks -------------===//

  std::pair<Value, Value> warpMerge(Value m, Value l);
  std::pair<Value, Value> blockReduce(Value m, Value l);
  void storeWord(Value word, Value value);
  /// Workspace words of this block's row (docs/Softmax.md has the layout):
  /// its arrival and departure counters, and split `s`'s (max, sum).
  Value arrivedWord() { return row; }
  Value departedWord() { return add(rows, row); }
  Value partialWord(Value s) {
    return add(mul(rows, c(2)), mul(add(mul(row, splits), s), c(2)));
  }
  std::array<Value, 3> mergeSplits(Value m, Value l);
  std::array<Value, 3> rowStatistics(Value m, Value l);
  void leave(Value left);

  //===--- The block's work -----------------------------------------------===//

  using StagedBody = llvm::function_ref<SmallVector<Value>(
      Value, ArrayRef<Value>, ValueRange)>;
  SmallVector<Value> forEachStaged(Vectors kind, ValueRange init,
                                   StagedBody body, bool firstPass = false);
  SmallVector<Value>
  byVectors(Value warpWhole, TypeRange types,
            llvm::function_ref<SmallVector<Value>(Vectors)> phase);
  void staggerFirstWave();
  void buildResident();
  void buildTwoSweeps();
};

} // namespace mlir::attn::softmax

#endif // LIB_CONVERSION_SOFTMAXTOGPU_SOFTMAXKERNEL_H
