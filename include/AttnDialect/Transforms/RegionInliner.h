//===- RegionInliner.h - attn.attention's regions, inlined ------*- C++ -*-===//
//
// Every lowering of attn.attention evaluates its score_mod and mask_mod
// element by element at whole-problem positions. This is the one copy of
// that inlining, with the optional checks of the regions' tensor reads and
// integer divisions.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_REGIONINLINER_H
#define ATTNDIALECT_TRANSFORMS_REGIONINLINER_H

#include "AttnDialect/IR/AttnOps.h"

#include "mlir/IR/Builders.h"

namespace mlir {
class IRMapping;
namespace tensor {
class ExtractOp;
} // namespace tensor
namespace attn {

/// How the regions' reads and integer divisions are checked: not at all, by
/// calling the host's attnReportRegionError (the CPU runner defines it and
/// turns a report into an error after the call), or by printing and
/// trapping (in GPU kernels).
enum class RegionChecks { None, HostReport, DeviceTrap };

/// Clones an attention op's regions (or a block mask's mask_mod) at a
/// builder's insertion point.
class RegionInliner {
public:
  /// `approximateMath`: the regions' f32 math.tanh may use the GPU's
  /// approximate instruction (marked `afn`), as f16/bf16 kernels can afford.
  RegionInliner(AttentionOp op, RegionChecks checks,
                bool approximateMath = false)
      : scoreModRegion(&op.getScoreMod()), maskModRegion(&op.getMaskMod()),
        checks(checks), approximateMath(approximateMath) {}
  RegionInliner(CreateBlockMaskOp op, RegionChecks checks)
      : maskModRegion(&op.getMaskMod()), checks(checks) {}
  RegionInliner(AttentionGradOp op, RegionChecks checks)
      : scoreModRegion(&op.getScoreMod()), maskModRegion(&op.getMaskMod()),
        checks(checks) {}

  /// score_mod(score, b, h, q, kv): the f32 score to use.
  Value scoreMod(OpBuilder &builder, Location loc, Value score, Value b,
                 Value h, Value q, Value kv);
  /// score_mod(score, b, h, q, kv) and its derivative with respect to the
  /// score (ScoreModDerivative.h), both f32.
  std::pair<Value, Value> scoreModAndDerivative(OpBuilder &builder,
                                                Location loc, Value score,
                                                Value b, Value h, Value q,
                                                Value kv);
  /// For each of `reads` (tensor.extract ops of the score_mod's block): the
  /// indices it reads at (score, b, h, q, kv) and d score_mod / d (the value
  /// read), an f32 (ScoreModDerivative.h).
  SmallVector<std::pair<SmallVector<Value>, Value>>
  scoreModReadDerivatives(OpBuilder &builder, Location loc, Value score,
                          Value b, Value h, Value q, Value kv,
                          ArrayRef<tensor::ExtractOp> reads);
  /// mask_mod(b, h, q, kv): i1, true to keep the element.
  Value maskMod(OpBuilder &builder, Location loc, Value b, Value h, Value q,
                Value kv);
  /// Whether mask_mod can run on i32 arguments (maskModI32): without
  /// checks, and with every integer value of it provably within i32 when
  /// b, h, q and kv are (integer range inference on its ops, captured
  /// reads of at most 32-bit integers).
  bool maskModFitsI32();
  /// mask_mod on i32 b, h, q and kv, its index and wider integer
  /// arithmetic done in i32; the same i1 as maskMod where maskModFitsI32.
  Value maskModI32(OpBuilder &builder, Location loc, Value b, Value h, Value q,
                   Value kv);

private:
  Value inlineRegion(OpBuilder &builder, Location loc, Region &region,
                     ValueRange args, IRMapping &mapping);
  /// Clones `nested` with `checks` applied to it and the ops in its
  /// regions.
  void cloneChecked(OpBuilder &builder, Operation &nested, IRMapping &mapping,
                    int64_t region);
  /// A region's read of a tensor, or its integer division, with a check
  /// that reports a violation and yields a harmless value instead.
  void guardedExtract(OpBuilder &builder, tensor::ExtractOp extract,
                      IRMapping &mapping, int64_t region);
  void guardedDivision(OpBuilder &builder, Operation *division,
                       IRMapping &mapping, int64_t region);
  /// Emits the report of a failed check; `error` is an i64 RegionError.
  void report(OpBuilder &builder, Location l, Value error, int64_t region,
              Value operand, Value dim, Value index, Value size);

  Region *scoreModRegion = nullptr;
  Region *maskModRegion = nullptr;
  RegionChecks checks;
  bool approximateMath = false;
};

} // namespace attn
} // namespace mlir

#endif // ATTNDIALECT_TRANSFORMS_REGIONINLINER_H
