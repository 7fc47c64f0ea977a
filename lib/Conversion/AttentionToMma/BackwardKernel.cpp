//===- BackwardKernel.cpp - attn.attention_grad on tensor cores -----------===//
//
// Both kernels of BackwardKernel.h are one pattern with the roles of rows
// and columns swapped: a warp multiplies its own 16 rows (Q and dO, or K
// and V) by a streamed tile's rows (K and V, or Q and dO) into scores and
// dP (or their transposes), turns them element by element into P and
// dS = P (dP - Delta) * d score_mod / d s, and accumulates dS (and P) times
// the streamed tile into f32 registers. Streamed tiles land through
// cp.async in one or two stages; every contraction is mma.sync m16n8k16 on
// ldmatrix fragments, or on sm_90a a warpgroup's wgmma on swizzled tiles
// (whose accumulators lie in the same per-warp order); every fragment
// array is indexed by constants (the C++ loops unroll), so it lives in
// registers.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernel.h"
#include "FragmentBuilder.h"
#include "WarpgroupMma.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <functional>
#include <optional>

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::mma;

namespace {

/// The builder of both kernels. "Own" rows are the warp's 16 (the block's
/// q-tile or kv-tile), "columns" the streamed tile's rows.
class GradBuilder : FragmentBuilder {
public:
  explicit GradBuilder(BackwardKernel &kernel)
      : FragmentBuilder(kernel.b, kernel.loc,
                        kernel.op.getQuery().getType().getElementType()),
        k(kernel), op(kernel.op), d(op.getHeadDim()), dv(op.getValueHeadDim()),
        qTile(op.getKernelAttr().getQTile()),
        kvTile(op.getKernelAttr().getKvTile()),
        stages(op.getKernelAttr().getStages()),
        warpgroup(op.getKernelAttr().isWarpgroupMma()) {
    swizzledStages = warpgroup;
  }

  void buildQueryGrad();
  void buildKeyValueGrad();

private:
  /// Sizes, the thread's lane values and copying threads for blocks of
  /// `rows` own rows.
  void setUp(int64_t rows);
  /// The A fragment of the warp's own rows of `stage` at k-step `kk`.
  Fragment ownFragment(Value stage, int64_t kk);
  /// Every k-step's A fragment of `stage`, if the registers can hold
  /// them; none otherwise (each product loads its own).
  SmallVector<Fragment> keptFragments(Value stage, int64_t width);
  /// Waits for the block's copies, then for the whole block (and, for
  /// wgmma, makes the copied tiles visible to it).
  void tilesLanded();
  /// own rows . streamed rows^T: [16, columns] over `width`, for each
  /// pair of (own, kept) in `operands`; on wgmma, one group each, still
  /// running (landed waits for them).
  struct RowOperand {
    Value own;
    ArrayRef<Fragment> kept;
    Value streamed;
    int64_t width;
  };
  SmallVector<BandTile> rowProducts(ArrayRef<RowOperand> operands, Value buffer,
                                    int64_t columns);
  /// acc[16, width] += a . streamed[buffer]: `a` the k-steps over the
  /// streamed rows, for each (a, streamed, acc) in `sums`.
  struct Accumulation {
    ArrayRef<Fragment> a;
    Value streamed;
    BandTile &acc;
  };
  void accumulate(ArrayRef<Accumulation> sums, Value buffer);
  /// The sm_90a forms: wgmma from the swizzled tiles (A of rowProducts
  /// from the own tile, of accumulate from the registers).
  SmallVector<BandTile> warpgroupRowProducts(ArrayRef<RowOperand> operands,
                                             Value buffer, int64_t columns);
  void warpgroupAccumulate(ArrayRef<Accumulation> sums, Value buffer);

  /// P at one element: score `s` at query `q` (of head `h`) and key `kv`,
  /// whose row has logsumexp `lse`, with the masks when `masked`; and the
  /// score_mod's derivative there (null without a score_mod).
  std::pair<Value, Value> probabilityAt(Value s, Value h, Value q, Value kv,
                                        Value lse, bool masked);
  /// dS = P (dP - Delta) * factor at one element, 0 where P is.
  Value gradientAt(Value p, Value factor, Value dp, Value delta);
  /// P and dS on every element of `s` and of the dP `readyDp` returns,
  /// with the masks where `needsMasks` holds; `position(chunk, e)` gives
  /// (q, lse, delta, kv). dP is asked for only once every P is computed,
  /// so that its wgmmas run meanwhile. Returns P (if `withProbs`) and dS
  /// as the A operands of products over the columns.
  using Position = std::function<std::array<Value, 4>(int64_t, int64_t)>;
  std::pair<SmallVector<Fragment>, SmallVector<Fragment>>
  gradients(const BandTile &s, const std::function<BandTile()> &readyDp,
            Value h, Value needsMasks, bool withProbs,
            const Position &position);
  /// `tile` of rowProducts once at most `pending` wgmma groups issued
  /// after its own are still running (mma.sync products: as it is).
  BandTile landed(const BandTile &tile, int64_t pending);

  /// The streamed tiles a block steps over: how many, the first row of
  /// step j's tile, whether step j (from `first`) needs the masks, and,
  /// where they vary, the query head of step j and whether step j does
  /// anything (steps past a head's list do not).
  struct Schedule {
    Value steps;
    std::function<Value(Value j)> start;
    std::function<Value(Value j, Value first)> needsMasks;
    std::function<Value(Value j)> head, active;
  };
  /// One line of the block mask's lists (a q-block's kv-blocks, or a
  /// kv-block's q-blocks) for query head `h`: its full blocks, then its
  /// partial ones. `start(e)` is the first row of entry e, of `tile` rows;
  /// a negative index becomes the first block past `limit` rows, which
  /// copies nothing and whose rows the masks drop.
  struct ListLine {
    Value full, total;
    std::function<Value(Value e)> start;
  };
  ListLine readLine(Value h, Value line, int64_t tile, Value limit);
  /// Copies step j's streamed tiles from row `first` into `buffer`.
  using CopyTile = std::function<void(Value j, Value first, Value buffer)>;
  /// Step j on the tiles in `buffer` (first row `first`): the carried
  /// accumulators after it.
  using Step =
      std::function<SmallVector<Value>(Value j, Value first, Value buffer,
                                       Value needsMasks, ValueRange carried)>;
  /// The loop over `schedule`'s steps from `inits`: step j's tiles land
  /// in buffer j % stages, the next step's copy overlapping this one.
  /// Ends with every copy landed and every warp past its reads.
  SmallVector<Value> stepLoop(const Schedule &schedule,
                              const CopyTile &copyTile, ValueRange inits,
                              const Step &step);

  /// Issues the cp.async copies of L and Delta of rows [q0, q0 + q-tile)
  /// of head `h` into `buffer` of the dK/dV block's stages (zeros past M).
  void copyRowStats(Value h, Value q0, Value buffer);
  /// Delta of the block's rows [q0, q0 + q-tile) of head `h`: to the
  /// Delta buffer and to the block's Delta rows.
  void storeDelta(Value q0, Value h);
  /// `acc` times `scale` into rows [row0, ...) of `dest` at `head`, rows
  /// at or past `limit` skipped.
  void storeRows(const BandTile &acc, Value dest, Value head, Value row0,
                 Value limit, double scale);

  BackwardKernel &k;
  AttentionGradOp op;
  int64_t d, dv, qTile, kvTile, stages;
  bool warpgroup;
  Value m, n, queryHeads, group;
  Value lane, warpRow, g, t, t2;
  Value ownRowLane, ownColLane, keyRowLane, keyColLane, valueRowLane,
      valueColLane;
};

} // namespace

void GradBuilder::setUp(int64_t rows) {
  m = memref::DimOp::create(b, loc, k.query, 2);
  n = memref::DimOp::create(b, loc, k.key, 2);
  queryHeads = memref::DimOp::create(b, loc, k.query, 1);
  Value kvHeads = memref::DimOp::create(b, loc, k.key, 1);
  group = arith::DivUIOp::create(b, loc, queryHeads, max(kvHeads, c(1)));
  copyThread = k.tid;
  copyThreads = 2 * rows;
  lane = rem(k.tid, 32);
  warpRow = mul(div(k.tid, 32), c(16));
  g = div(lane, 4);
  t = rem(lane, 4);
  t2 = mul(t, c(2));
  // ldmatrix x4: lanes 8i..8i+7 address the rows of matrix i.
  Value row8 = rem(lane, 8);
  Value half = mul(div(lane, 16), c(8));
  Value odd = mul(rem(div(lane, 8), 2), c(8));
  ownRowLane = add(warpRow, rem(lane, 16));
  ownColLane = half;
  keyRowLane = add(half, row8);
  keyColLane = odd;
  valueRowLane = add(odd, row8);
  valueColLane = half;
}

Fragment GradBuilder::ownFragment(Value stage, int64_t kk) {
  return loadMatrix(stage, {ownRowLane, add(ownColLane, c(16 * kk))},
                    /*transpose=*/false);
}

SmallVector<Fragment> GradBuilder::keptFragments(Value stage, int64_t width) {
  // Two tiles of 64 columns fit next to the accumulators; 128 do not.
  // wgmma reads them from shared memory.
  if (d + dv > 128 || warpgroup)
    return {};
  SmallVector<Fragment> fragments;
  for (int64_t kk = 0; kk < width / 16; ++kk)
    fragments.push_back(ownFragment(stage, kk));
  return fragments;
}

void GradBuilder::tilesLanded() {
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  // cp.async writes through the generic proxy, wgmma reads through the
  // async one.
  if (warpgroup)
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  gpu::BarrierOp::create(b, loc);
}

SmallVector<BandTile> GradBuilder::rowProducts(ArrayRef<RowOperand> operands,
                                               Value buffer, int64_t columns) {
  if (warpgroup)
    return warpgroupRowProducts(operands, buffer, columns);
  SmallVector<BandTile> products;
  for (const RowOperand &operand : operands) {
    BandTile out(columns / kChunk, Fragment(4, f32c(0.0)));
    for (int64_t kk = 0; kk < operand.width / 16; ++kk) {
      Fragment a = operand.kept.empty() ? ownFragment(operand.own, kk)
                                        : operand.kept[kk];
      Value col = add(keyColLane, c(16 * kk));
      for (int64_t pair = 0; pair < columns / 16; ++pair) {
        Fragment rows =
            loadMatrix(operand.streamed,
                       {buffer, add(keyRowLane, c(16 * pair)), col}, false);
        out[2 * pair] = mmaSync(a, {rows[0], rows[1]}, out[2 * pair]);
        out[2 * pair + 1] = mmaSync(a, {rows[2], rows[3]}, out[2 * pair + 1]);
      }
    }
    products.push_back(out);
  }
  return products;
}

void GradBuilder::accumulate(ArrayRef<Accumulation> sums, Value buffer) {
  if (warpgroup)
    return warpgroupAccumulate(sums, buffer);
  for (const Accumulation &sum : sums) {
    int64_t width = 8 * sum.acc.size();
    for (auto [kk, operand] : llvm::enumerate(sum.a)) {
      Value row = add(valueRowLane, c(16 * kk));
      for (int64_t pair = 0; pair < width / 16; ++pair) {
        Fragment rows = loadMatrix(
            sum.streamed, {buffer, row, add(valueColLane, c(16 * pair))}, true);
        sum.acc[2 * pair] =
            mmaSync(operand, {rows[0], rows[1]}, sum.acc[2 * pair]);
        sum.acc[2 * pair + 1] =
            mmaSync(operand, {rows[2], rows[3]}, sum.acc[2 * pair + 1]);
      }
    }
  }
}

SmallVector<BandTile>
GradBuilder::warpgroupRowProducts(ArrayRef<RowOperand> operands, Value buffer,
                                  int64_t columns) {
  // Both operands K-major: k-step kk lies in swizzled tile kk / steps,
  // 32 bytes per step within; warpgroup w's own rows start 64 w rows in.
  SmallVector<BandTile> products;
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (const RowOperand &operand : operands) {
    Swizzle swizzle = Swizzle::forWidth(operand.width);
    int64_t ownRows = cast<MemRefType>(operand.own.getType()).getDimSize(1);
    Value warpgroupRows = mul(div(k.tid, 128), c(64 * swizzle.rowBytes));
    Value ownDescriptor = swizzledDescriptor(
        b, loc, swizzle,
        add(stageAddress(b, loc, operand.own, Value()), warpgroupRows),
        /*leadingBytes=*/16, /*strideBytes=*/8 * swizzle.rowBytes);
    Value streamedDescriptor = swizzledDescriptor(
        b, loc, swizzle, stageAddress(b, loc, operand.streamed, buffer),
        /*leadingBytes=*/16, /*strideBytes=*/8 * swizzle.rowBytes);
    int64_t stepsPerTile = swizzle.columns() / 16;
    SmallVector<Value> out(columns / 2, LLVM::UndefOp::create(b, loc, f32));
    for (int64_t kk = 0; kk < operand.width / 16; ++kk) {
      int64_t tile = kk / stepsPerTile, within = (kk % stepsPerTile) * 32;
      out = warpgroupMma(
          b, loc, element, out,
          advanceDescriptor(b, loc, ownDescriptor,
                            tile * ownRows * swizzle.rowBytes + within),
          advanceDescriptor(b, loc, streamedDescriptor,
                            tile * columns * swizzle.rowBytes + within),
          /*transposeB=*/false, /*accumulate=*/kk > 0);
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    products.push_back(tilesOf(out, 1, columns / kChunk)[0]);
  }
  return products;
}

void GradBuilder::warpgroupAccumulate(ArrayRef<Accumulation> sums,
                                      Value buffer) {
  SmallVector<Value> all, registers;
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (const Accumulation &sum : sums) {
    int64_t width = 8 * sum.acc.size();
    // The streamed tile is MN-major: its swizzled tiles lie `rows` rows
    // apart, k-step kk 16 rows in.
    Swizzle swizzle = Swizzle::forWidth(width);
    int64_t rows = cast<MemRefType>(sum.streamed.getType()).getDimSize(2);
    Value descriptor = swizzledDescriptor(
        b, loc, swizzle, stageAddress(b, loc, sum.streamed, buffer),
        /*leadingBytes=*/rows * swizzle.rowBytes,
        /*strideBytes=*/8 * swizzle.rowBytes);
    SmallVector<Value> acc = flattenTiles({sum.acc});
    for (auto [kk, operand] : llvm::enumerate(sum.a)) {
      SmallVector<Value> a;
      for (Value reg : operand)
        a.push_back(reg.getType() == i32 ? reg : asWord(reg));
      registers.append(a);
      acc = warpgroupMma(
          b, loc, element, acc, a,
          advanceDescriptor(b, loc, descriptor, 16 * kk * swizzle.rowBytes),
          /*transposeB=*/true, /*accumulate=*/true);
    }
    all.append(acc);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // The A registers stay live until the wgmmas that read them are done.
  all = warpgroupWait(b, loc, all, 0, registers);
  ArrayRef<Value> done(all);
  for (const Accumulation &sum : sums) {
    int64_t values = 4 * sum.acc.size();
    sum.acc = tilesOf(done.take_front(values), 1, sum.acc.size())[0];
    done = done.drop_front(values);
  }
}

std::pair<Value, Value> GradBuilder::probabilityAt(Value s, Value h, Value q,
                                                   Value kv, Value lse,
                                                   bool masked) {
  Value zero = f32c(0.0);
  Value x = arith::MulFOp::create(b, loc, s, f32c(op.getScaleValue()));
  Value factor;
  // The regions see positions inside the problem; what lies past it is
  // masked.
  Value regionQ = min(q, max(sub(m, c(1)), c(0)));
  Value regionKv = min(kv, max(sub(n, c(1)), c(0)));
  if (op.hasScoreMod())
    std::tie(x, factor) = k.regions.scoreModAndDerivative(b, loc, x, k.batch, h,
                                                          regionQ, regionKv);
  // A row that saw no key has L = -inf: P is 0 there, not NaN. A NaN L
  // keeps its row NaN, as the forward's output is.
  Value keep = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, lse,
                                     f32c(kNegInf));
  if (masked) {
    keep = arith::AndIOp::create(
        b, loc, keep, arith::AndIOp::create(b, loc, less(q, m), less(kv, n)));
    if (op.getCausal())
      keep = arith::AndIOp::create(
          b, loc, keep,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, kv, q));
    if (op.hasMaskMod())
      keep = arith::AndIOp::create(
          b, loc, keep,
          k.regions.maskMod(b, loc, k.batch, h, regionQ, regionKv));
  }
  Value lse2 = arith::MulFOp::create(b, loc, lse, f32c(kLog2E));
  Value p = math::Exp2Op::create(
      b, loc,
      arith::SubFOp::create(
          b, loc, arith::MulFOp::create(b, loc, x, f32c(kLog2E)), lse2));
  p = arith::SelectOp::create(b, loc, LLVM::FreezeOp::create(b, loc, keep), p,
                              zero);
  return {p, factor};
}

Value GradBuilder::gradientAt(Value p, Value factor, Value dp, Value delta) {
  Value zero = f32c(0.0);
  Value ds = arith::MulFOp::create(b, loc, p,
                                   arith::SubFOp::create(b, loc, dp, delta));
  if (factor)
    ds = arith::MulFOp::create(b, loc, ds, factor);
  // A masked or underflowed P gives 0 even where the factor is infinite.
  Value none =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, p, zero);
  return arith::SelectOp::create(b, loc, none, zero, ds);
}

std::pair<SmallVector<Fragment>, SmallVector<Fragment>> GradBuilder::gradients(
    const BandTile &s, const std::function<BandTile()> &readyDp, Value h,
    Value needsMasks, bool withProbs, const Position &position) {
  int64_t chunks = s.size();
  // Each branch yields packed A operands: half the registers of the f32
  // values across the branch.
  int64_t words = 2 * chunks;
  Type word = element.isBF16() ? Type(i32) : VectorType::get({2}, element);
  auto split = scf::IfOp::create(
      b, loc, TypeRange(SmallVector<Type>((withProbs ? 2 : 1) * words, word)),
      needsMasks, /*withElseRegion=*/true);
  for (bool masked : {true, false}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(masked ? split.thenBlock() : split.elseBlock());
    BandTile p(chunks), factors(chunks), deltas(chunks), ds(chunks);
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t e = 0; e < 4; ++e) {
        auto [q, lse, delta, kv] = position(chunk, e);
        auto [pe, factor] = probabilityAt(s[chunk][e], h, q, kv, lse, masked);
        p[chunk].push_back(pe);
        factors[chunk].push_back(factor);
        deltas[chunk].push_back(delta);
      }
    BandTile dp = readyDp();
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int64_t e = 0; e < 4; ++e)
        ds[chunk].push_back(gradientAt(p[chunk][e], factors[chunk][e],
                                       dp[chunk][e], deltas[chunk][e]));
    SmallVector<Value> yields;
    if (withProbs)
      yields = flattenTiles({BandTile(asOperand(p))});
    yields.append(flattenTiles({BandTile(asOperand(ds))}));
    scf::YieldOp::create(b, loc, yields);
  }
  ValueRange results = split.getResults();
  auto operands = [&](ValueRange values) {
    return SmallVector<Fragment>(tilesOf(values, 1, chunks / 2)[0]);
  };
  if (!withProbs)
    return {{}, operands(results)};
  return {operands(results.take_front(words)),
          operands(results.drop_front(words))};
}

BandTile GradBuilder::landed(const BandTile &tile, int64_t pending) {
  if (!warpgroup)
    return tile;
  return tilesOf(warpgroupWait(b, loc, flattenTiles({tile}), pending), 1,
                 tile.size())[0];
}

void GradBuilder::copyRowStats(Value h, Value q0, Value buffer) {
  // A 4-byte copy per value: thread i copies L and Delta's word of row i,
  // as many rounds as the block needs.
  Value lastRow = max(sub(m, c(1)), c(0));
  Value deltaRow = mul(add(mul(k.batch, queryHeads), h), m);
  int64_t threads = copyThreads;
  for (int64_t first = 0; first < qTile; first += threads) {
    Value row = add(k.tid, c(first));
    auto copy = [&] {
      Value q = add(q0, row);
      Value at = min(q, lastRow);
      Value elements = arith::SelectOp::create(b, loc, less(q, m), c(1), c(0));
      nvgpu::DeviceAsyncCopyOp::create(
          b, loc, k.lseStage, ValueRange{buffer, row}, k.lse,
          ValueRange{k.batch, h, at}, b.getIndexAttr(1), elements, UnitAttr());
      nvgpu::DeviceAsyncCopyOp::create(b, loc, k.deltaStage,
                                       ValueRange{buffer, row}, k.delta,
                                       ValueRange{add(deltaRow, at)},
                                       b.getIndexAttr(1), elements, UnitAttr());
    };
    if (first + threads <= qTile) {
      copy();
      continue;
    }
    auto inTile = scf::IfOp::create(b, loc, less(row, c(qTile)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inTile.thenBlock());
    copy();
  }
}

void GradBuilder::storeDelta(Value q0, Value h) {
  // Two threads per row, each summing half of it.
  Value row = div(k.tid, 2);
  Value half = rem(k.tid, 2);
  Value position = add(q0, row);
  Value at = min(position, max(sub(m, c(1)), c(0)));
  auto vectorOf = [&](Value buffer) {
    return VectorType::get({kVectorElements},
                           cast<MemRefType>(buffer.getType()).getElementType());
  };
  auto wide = VectorType::get({kVectorElements}, f32);
  Value sum = arith::ConstantOp::create(
      b, loc, wide, DenseElementsAttr::get(wide, b.getF32FloatAttr(0.0)));
  for (int64_t i = 0; i < dv / (2 * kVectorElements); ++i) {
    Value col = add(mul(half, c(dv / 2)), c(kVectorElements * i));
    auto load = [&](Value buffer) -> Value {
      Value v = vector::LoadOp::create(
          b, loc, vectorOf(buffer), buffer, ValueRange{k.batch, h, at, col},
          /*nontemporal=*/false, b.getI64IntegerAttr(16));
      if (cast<VectorType>(v.getType()).getElementType() != f32)
        v = arith::ExtFOp::create(b, loc, wide, v);
      return v;
    };
    sum =
        vector::FMAOp::create(b, loc, load(k.output), load(k.gradOutput), sum);
  }
  Value total =
      vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, sum);
  total = arith::AddFOp::create(b, loc, total, shuffleXor(total, 1));
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, half, c(0));
  auto writer = scf::IfOp::create(b, loc, first);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(writer.thenBlock());
  memref::StoreOp::create(b, loc, total, k.deltaStage, ValueRange{row});
  auto inside = scf::IfOp::create(b, loc, less(position, m));
  b.setInsertionPointToStart(inside.thenBlock());
  Value word = add(mul(add(mul(k.batch, queryHeads), h), m), position);
  memref::StoreOp::create(b, loc, arith::BitcastOp::create(b, loc, i32, total),
                          k.delta, ValueRange{word});
}

void GradBuilder::storeRows(const BandTile &acc, Value dest, Value head,
                            Value row0, Value limit, double scale) {
  Type type = cast<MemRefType>(dest.getType()).getElementType();
  int64_t bytes = type.getIntOrFloatBitWidth() / 8;
  Value factor = f32c(scale);
  for (int64_t r = 0; r < 2; ++r) {
    Value row = add(row0, add(add(warpRow, g), c(8 * r)));
    auto inside = scf::IfOp::create(b, loc, less(row, limit));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inside.thenBlock());
    for (auto [chunk, values] : llvm::enumerate(acc)) {
      Value lo = arith::MulFOp::create(b, loc, values[2 * r], factor);
      Value hi = arith::MulFOp::create(b, loc, values[2 * r + 1], factor);
      Value pair = vector::FromElementsOp::create(
          b, loc, VectorType::get({2}, f32), ValueRange{lo, hi});
      if (type != f32)
        pair =
            arith::TruncFOp::create(b, loc, VectorType::get({2}, type), pair);
      vector::StoreOp::create(
          b, loc, pair, dest,
          ValueRange{k.batch, head, row, add(t2, c(kChunk * chunk))},
          /*nontemporal=*/false, b.getI64IntegerAttr(2 * bytes));
    }
  }
}

GradBuilder::ListLine GradBuilder::readLine(Value h, Value line, int64_t tile,
                                            Value limit) {
  auto dim = [&](Value buffer, int64_t d) -> Value {
    return memref::DimOp::create(b, loc, buffer, d);
  };
  // A block mask of batch (head) extent 1 serves every batch (head).
  auto broadcast = [&](int64_t d, Value position) -> Value {
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        dim(k.counts, d), c(1));
    return arith::SelectOp::create(b, loc, isOne, c(0), position);
  };
  Value batch = broadcast(0, k.batch), head = broadcast(1, h);
  Value inLists = less(line, dim(k.counts, 2));
  Value row = arith::SelectOp::create(b, loc, inLists, line, c(0));
  Value blocks = dim(k.indices, 3);
  Value lastIndex = max(sub(blocks, c(1)), c(0));
  auto load = [this](Value buffer, ValueRange indices) -> Value {
    return arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(b, loc, buffer, indices));
  };
  auto count = [&](Value counts) -> Value {
    Value clipped = max(min(load(counts, {batch, head, row}), blocks), c(0));
    return arith::SelectOp::create(b, loc, inLists, clipped, c(0));
  };
  ListLine listed;
  listed.full = count(k.fullCounts);
  listed.total = add(listed.full, count(k.counts));
  Value full = listed.full;
  listed.start = [=](Value e) {
    auto entry = [&](Value indices, Value position) {
      return load(indices,
                  {batch, head, row, max(min(position, lastIndex), c(0))});
    };
    Value block =
        arith::SelectOp::create(b, loc, less(e, full), entry(k.fullIndices, e),
                                entry(k.indices, sub(e, full)));
    Value pastEnd = arith::CeilDivUIOp::create(b, loc, limit, c(tile));
    block = arith::SelectOp::create(b, loc, less(block, c(0)), pastEnd, block);
    return mul(block, c(tile));
  };
  return listed;
}

SmallVector<Value> GradBuilder::stepLoop(const Schedule &schedule,
                                         const CopyTile &copyTile,
                                         ValueRange inits, const Step &step) {
  auto copyStep = [&](Value j, Value buffer) {
    auto inLoop = scf::IfOp::create(b, loc, less(j, schedule.steps));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(inLoop.thenBlock());
    copyTile(j, schedule.start(j), buffer);
  };
  copyStep(c(0), c(0));
  commitGroup();
  auto loop = scf::ForOp::create(b, loc, c(0), schedule.steps, c(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value j = loop.getInductionVar();
    Value buffer = stages == 2 ? rem(j, 2) : c(0);
    // Step j's tiles have landed, and no warp reads the other buffer.
    tilesLanded();
    if (stages == 2) {
      copyStep(add(j, c(1)), sub(c(1), buffer));
      commitGroup();
    }
    Value first = schedule.start(j);
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> results;
    if (schedule.active) {
      auto ifActive =
          scf::IfOp::create(b, loc, carried.getTypes(), schedule.active(j),
                            /*withElseRegion=*/true);
      OpBuilder::InsertionGuard branch(b);
      b.setInsertionPointToStart(ifActive.thenBlock());
      scf::YieldOp::create(
          b, loc,
          step(j, first, buffer, schedule.needsMasks(j, first), carried));
      b.setInsertionPointToStart(ifActive.elseBlock());
      scf::YieldOp::create(b, loc, carried);
      results.assign(ifActive.getResults().begin(),
                     ifActive.getResults().end());
    } else {
      results = step(j, first, buffer, schedule.needsMasks(j, first), carried);
    }
    if (stages == 1) {
      gpu::BarrierOp::create(b, loc);
      copyStep(add(j, c(1)), buffer);
      commitGroup();
    }
    scf::YieldOp::create(b, loc, results);
  }
  NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
  // Every warp is past its last read before the buffers fill again.
  gpu::BarrierOp::create(b, loc);
  return SmallVector<Value>(loop.getResults());
}

void GradBuilder::buildQueryGrad() {
  setUp(qTile);
  Value h = k.head;
  Value kvHead = arith::DivUIOp::create(b, loc, h, group);
  Value q0 = mul(k.block, c(qTile));
  Schedule schedule;
  if (k.counts) {
    ListLine listed = readLine(h, k.block, kvTile, n);
    schedule.steps = listed.total;
    schedule.start = listed.start;
    // A full block that N cuts needs the masks too.
    schedule.needsMasks = [=](Value j, Value kv0) {
      return arith::OrIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, j,
                                listed.full),
          less(n, add(kv0, c(kvTile))));
    };
  } else {
    // Causal rows see keys up to their own position.
    Value kvEnd = n;
    if (op.getCausal())
      kvEnd = min(min(add(q0, c(qTile)), m), n);
    schedule.steps = arith::CeilDivUIOp::create(b, loc, kvEnd, c(kvTile));
    // Steps before `fullSteps` need no masks: keys inside N, below every
    // row's diagonal. (Rows past M are computed and never stored.) A
    // mask_mod without its block lists applies on every step.
    Value fullSteps = div(n, kvTile);
    if (op.getCausal())
      fullSteps = min(fullSteps, div(add(q0, c(1)), kvTile));
    schedule.start = [=](Value j) { return mul(j, c(kvTile)); };
    schedule.needsMasks = [=](Value j, Value) -> Value {
      if (op.hasMaskMod())
        return arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, j,
                                   fullSteps);
    };
  }
  copyRows(k.query, k.batch, h, q0, m, qTile, d, k.ownFirst, {});
  copyRows(k.gradOutput, k.batch, h, q0, m, qTile, dv, k.ownSecond, {});
  commitGroup();
  storeDelta(q0, h);
  // Q and dO have landed, and every thread's Delta is in shared memory.
  tilesLanded();
  SmallVector<Fragment> queryFragments = keptFragments(k.ownFirst, d);
  SmallVector<Fragment> gradFragments = keptFragments(k.ownSecond, dv);
  std::array<Value, 2> rows, lses, deltas;
  for (int64_t r = 0; r < 2; ++r) {
    Value local = add(add(warpRow, g), c(8 * r));
    rows[r] = add(q0, local);
    lses[r] = memref::LoadOp::create(
        b, loc, k.lse,
        ValueRange{k.batch, h, min(rows[r], max(sub(m, c(1)), c(0)))});
    deltas[r] = memref::LoadOp::create(b, loc, k.deltaStage, local);
  }

  int64_t chunks = d / kChunk;
  auto copyTile = [&](Value, Value kv0, Value buffer) {
    copyRows(k.key, k.batch, kvHead, kv0, n, kvTile, d, k.streamedFirst,
             {buffer});
    copyRows(k.value, k.batch, kvHead, kv0, n, kvTile, dv, k.streamedSecond,
             {buffer});
  };
  auto step = [&](Value, Value kv0, Value buffer, Value needsMasks,
                  ValueRange carried) {
    BandTile acc = tilesOf(carried, 1, chunks)[0];
    SmallVector<BandTile> products =
        rowProducts({{k.ownFirst, queryFragments, k.streamedFirst, d},
                     {k.ownSecond, gradFragments, k.streamedSecond, dv}},
                    buffer, kvTile);
    // P while dP's wgmmas run.
    BandTile s = landed(products[0], 1);
    auto readyDp = [&] { return landed(products[1], 0); };
    SmallVector<Fragment> ds =
        gradients(s, readyDp, h, needsMasks, /*withProbs=*/false,
                  [&](int64_t chunk, int64_t e) {
                    Value kv = add(kv0, add(t2, c(kChunk * chunk + e % 2)));
                    return std::array<Value, 4>{rows[e / 2], lses[e / 2],
                                                deltas[e / 2], kv};
                  })
            .second;
    accumulate({{ds, k.streamedFirst, acc}}, buffer);
    return flattenTiles({acc});
  };
  SmallVector<Value> results = stepLoop(
      schedule, copyTile, SmallVector<Value>(4 * chunks, f32c(0.0)), step);
  storeRows(tilesOf(results, 1, chunks)[0], k.dq, h, q0, m, op.getScaleValue());
}

void GradBuilder::buildKeyValueGrad() {
  setUp(kvTile);
  Value kvHead = k.head;
  Value kv0 = mul(k.block, c(kvTile));
  copyRows(k.key, k.batch, kvHead, kv0, n, kvTile, d, k.ownFirst, {});
  copyRows(k.value, k.batch, kvHead, kv0, n, kvTile, dv, k.ownSecond, {});
  commitGroup();
  tilesLanded();
  SmallVector<Fragment> keyFragments = keptFragments(k.ownFirst, d);
  SmallVector<Fragment> valueFragments = keptFragments(k.ownSecond, dv);
  std::array<Value, 2> keys;
  for (int64_t r = 0; r < 2; ++r)
    keys[r] = add(kv0, add(add(warpRow, g), c(8 * r)));

  // Every query head of the kv head in turn, perHead steps each (GQA sums
  // their gradients in the registers).
  Value firstHead = mul(kvHead, group);
  Schedule schedule;
  Value perHead;
  // A mask_mod that ignores h lists the same blocks for every head: its
  // line is read once.
  std::optional<ListLine> shared;
  if (k.counts && op.getMaskMod().front().getArgument(1).use_empty()) {
    shared = readLine(firstHead, k.block, qTile, m);
    perHead = shared->total;
  } else if (k.counts) {
    // The longest of the heads' lists; steps past a head's are idle.
    auto longest = scf::ForOp::create(b, loc, c(0), group, c(1), c(0));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(longest.getBody());
      Value total =
          readLine(add(firstHead, longest.getInductionVar()), k.block, qTile, m)
              .total;
      scf::YieldOp::create(b, loc, max(longest.getRegionIterArgs()[0], total));
    }
    perHead = longest.getResult(0);
  } else {
    // Causal: rows above the block's first key see none of its keys.
    Value qBlocks = arith::CeilDivUIOp::create(b, loc, m, c(qTile));
    perHead = max(sub(qBlocks, op.getCausal() ? div(kv0, qTile) : c(0)), c(0));
  }
  Value safe = max(perHead, c(1));
  schedule.steps = mul(group, perHead);
  schedule.head = [=](Value j) {
    return add(firstHead, arith::DivUIOp::create(b, loc, j, safe));
  };
  auto entryOf = [=](Value j) {
    return arith::RemUIOp::create(b, loc, j, safe).getResult();
  };
  if (k.counts) {
    auto lineOf = [=](Value j) {
      return shared ? *shared : readLine(schedule.head(j), k.block, qTile, m);
    };
    schedule.start = [=](Value j) { return lineOf(j).start(entryOf(j)); };
    if (!shared)
      schedule.active = [=](Value j) {
        return less(entryOf(j), lineOf(j).total);
      };
    // A full block that M cuts needs the masks too.
    schedule.needsMasks = [=](Value j, Value q0) {
      Value full = lineOf(j).full;
      return arith::OrIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, entryOf(j),
                                full),
          less(m, add(q0, c(qTile))));
    };
  } else {
    Value qFirst = op.getCausal() ? div(kv0, qTile) : c(0);
    schedule.start = [=](Value j) {
      return mul(add(qFirst, entryOf(j)), c(qTile));
    };
    // Whole q-tiles inside M, on or below the block's last key's diagonal,
    // need no masks. A mask_mod without its block lists applies on every
    // step.
    schedule.needsMasks = [=](Value, Value q0) -> Value {
      if (op.hasMaskMod())
        return arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
      Value masked = less(m, add(q0, c(qTile)));
      if (op.getCausal())
        masked = arith::OrIOp::create(b, loc, masked,
                                      less(q0, add(kv0, c(kvTile - 1))));
      return masked;
    };
  }
  auto copyTile = [&](Value j, Value q0, Value buffer) {
    Value h = schedule.head(j);
    copyRows(k.query, k.batch, h, q0, m, qTile, d, k.streamedFirst, {buffer});
    copyRows(k.gradOutput, k.batch, h, q0, m, qTile, dv, k.streamedSecond,
             {buffer});
    copyRowStats(h, q0, buffer);
  };
  int64_t keyChunks = d / kChunk, valueChunks = dv / kChunk;
  auto step = [&](Value j, Value q0, Value buffer, Value needsMasks,
                  ValueRange carried) {
    Value h = schedule.head(j);
    BandTile dkAcc =
        tilesOf(carried.take_front(4 * keyChunks), 1, keyChunks)[0];
    BandTile dvAcc =
        tilesOf(carried.drop_front(4 * keyChunks), 1, valueChunks)[0];
    SmallVector<BandTile> products =
        rowProducts({{k.ownFirst, keyFragments, k.streamedFirst, d},
                     {k.ownSecond, valueFragments, k.streamedSecond, dv}},
                    buffer, qTile);
    // P^T while dP^T's wgmmas run.
    BandTile s = landed(products[0], 1);
    auto readyDp = [&] { return landed(products[1], 0); };
    auto [p, ds] = gradients(
        s, readyDp, h, needsMasks, /*withProbs=*/true,
        [&](int64_t chunk, int64_t e) {
          // The column's L and Delta, read where they are used.
          Value column = add(t2, c(kChunk * chunk + e % 2));
          Value lse = memref::LoadOp::create(b, loc, k.lseStage,
                                             ValueRange{buffer, column});
          Value delta = arith::BitcastOp::create(
              b, loc, f32,
              memref::LoadOp::create(b, loc, k.deltaStage,
                                     ValueRange{buffer, column}));
          return std::array<Value, 4>{add(q0, column), lse, delta, keys[e / 2]};
        });
    accumulate({{p, k.streamedSecond, dvAcc}, {ds, k.streamedFirst, dkAcc}},
               buffer);
    SmallVector<Value> yields = flattenTiles({dkAcc});
    yields.append(flattenTiles({dvAcc}));
    return yields;
  };
  SmallVector<Value> results = stepLoop(
      schedule, copyTile,
      SmallVector<Value>(4 * (keyChunks + valueChunks), f32c(0.0)), step);
  ArrayRef<Value> grads(results);
  storeRows(tilesOf(grads.take_front(4 * keyChunks), 1, keyChunks)[0], k.dk,
            kvHead, kv0, n, op.getScaleValue());
  storeRows(tilesOf(grads.drop_front(4 * keyChunks), 1, valueChunks)[0], k.dv,
            kvHead, kv0, n, 1.0);
}

void BackwardKernel::buildQueryGrad() { GradBuilder(*this).buildQueryGrad(); }

void BackwardKernel::buildKeyValueGrad() {
  GradBuilder(*this).buildKeyValueGrad();
}
