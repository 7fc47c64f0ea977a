//===- ApproxMathToNVVM.cpp - fast f32 transcendentals on NVIDIA GPUs -----===//

#include "AttnDialect/Target/NVVM/Passes.h"
#include "AttnDialect/Utils/ArithUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_APPROXMATHTONVVM
#include "AttnDialect/Target/NVVM/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A call of the intrinsic `name` on `args`, of the first one's type.
Value callIntrinsic(PatternRewriter &b, Location loc, StringRef name,
                    ValueRange args) {
  return LLVM::CallIntrinsicOp::create(b, loc, args[0].getType(),
                                       b.getStringAttr(name), args)
      .getResult(0);
}

Value exp2Approx(PatternRewriter &b, Location loc, Value x) {
  return callIntrinsic(b, loc, "llvm.nvvm.ex2.approx.ftz.f32", x);
}

Value log2Approx(PatternRewriter &b, Location loc, Value x) {
  return callIntrinsic(b, loc, "llvm.nvvm.lg2.approx.ftz.f", x);
}

Value scaled(PatternRewriter &b, Location loc, Value x, double factor) {
  return arith::MulFOp::create(b, loc, x, f32Constant(b, loc, factor));
}

/// Rewrites one f32 unary math op with `build`.
template <typename MathOp> struct ApproxF32 : OpRewritePattern<MathOp> {
  using Builder = Value (*)(PatternRewriter &, Location, Value);
  ApproxF32(MLIRContext *ctx, Builder build)
      : OpRewritePattern<MathOp>(ctx), build(build) {}

  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 has approximations");
    if constexpr (std::is_same_v<MathOp, math::FmaOp>) {
      rewriter.replaceOpWithNewOp<LLVM::FMAOp>(op, op.getA(), op.getB(),
                                               op.getC());
    } else {
      rewriter.replaceOp(op, build(rewriter, op.getLoc(), op.getOperand()));
    }
    return success();
  }

  Builder build;
};

/// f32 tanh: PTX tanh.approx.f32 (2^-11 relative error, FlashAttention's
/// soft-cap) where the op allows approximate functions (`afn`, which the
/// f16/bf16 tensor-core kernels set), else within a few f32 ulps from
/// ex2.approx: x (1 - x^2/3 + 2x^4/15 - 17x^6/315) below |x| = 1/16, where
/// the Taylor terms left out are under 1e-11 relative, and
/// sign(x) (1 - 2 / (e^(2|x|) + 1)) above.
struct TanhF32 : OpRewritePattern<math::TanhOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::TanhOp op,
                                PatternRewriter &b) const override {
    if (!op.getType().isF32())
      return b.notifyMatchFailure(op, "only f32 has approximations");
    Location loc = op.getLoc();
    Value x = op.getOperand();
    if (arith::bitEnumContainsAll(op.getFastmath(),
                                  arith::FastMathFlags::afn)) {
      b.replaceOp(op, NVVM::InlinePtxOp::create(b, loc, TypeRange{x.getType()},
                                                ValueRange{x}, ValueRange{},
                                                "tanh.approx.f32 $0, $1;",
                                                /*predicate=*/Value())
                          .getResult(0));
      return success();
    }
    auto c = [&](double v) { return f32Constant(b, loc, v); };
    // Built from ops this walk will not visit again: the intrinsic for
    // |x|, a select for the sign.
    Value ax = callIntrinsic(b, loc, "llvm.nvvm.fabs", x);
    Value x2 = arith::MulFOp::create(b, loc, x, x);
    Value poly = arith::MulFOp::create(b, loc, x2, c(-17.0 / 315.0));
    poly = arith::AddFOp::create(b, loc, poly, c(2.0 / 15.0));
    poly = arith::MulFOp::create(b, loc, poly, x2);
    poly = arith::AddFOp::create(b, loc, poly, c(-1.0 / 3.0));
    poly = arith::MulFOp::create(b, loc, poly, x2);
    poly = arith::MulFOp::create(b, loc, x, poly);
    Value small = arith::AddFOp::create(b, loc, x, poly);
    Value e = exp2Approx(b, loc, scaled(b, loc, ax, 2.0 * kLog2E));
    Value frac = arith::DivFOp::create(
        b, loc, c(2.0), arith::AddFOp::create(b, loc, e, c(1.0)));
    Value magnitude = arith::SubFOp::create(b, loc, c(1.0), frac);
    Value negative =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, c(0.0));
    Value large = arith::SelectOp::create(
        b, loc, negative, arith::NegFOp::create(b, loc, magnitude), magnitude);
    Value isSmall = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, ax,
                                          c(1.0 / 16.0));
    b.replaceOpWithNewOp<arith::SelectOp>(op, isSmall, small, large);
    return success();
  }
};

/// Rewrites an exact math op on scalars to its LLVM intrinsic.
template <typename MathOp> struct ExactToLLVM : OpRewritePattern<MathOp> {
  using OpRewritePattern<MathOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!type.isIntOrFloat())
      return rewriter.notifyMatchFailure(op, "only scalars");
    if constexpr (std::is_same_v<MathOp, math::AbsIOp>) {
      // |INT_MIN| is INT_MIN, as on the CPU (not poison).
      rewriter.replaceOpWithNewOp<LLVM::AbsOp>(op, type, op.getOperand(),
                                               /*is_int_min_poison=*/false);
      return success();
    }
    // convert-gpu-to-nvvm refuses llvm.intr.fabs / sqrt (it wants
    // libdevice), so f32 goes to the NVVM intrinsics of the exact PTX
    // instructions. Not inline PTX: a constant operand would become an
    // immediate ("n") constraint, which LLVM refuses for floats.
    if (!type.isF32())
      return rewriter.notifyMatchFailure(op, "only f32 has a PTX form here");
    rewriter.replaceOp(op, callIntrinsic(rewriter, op.getLoc(),
                                         std::is_same_v<MathOp, math::AbsFOp>
                                             ? "llvm.nvvm.fabs"
                                             : "llvm.nvvm.sqrt.rn.f",
                                         op.getOperand()));
    return success();
  }
};

/// f32 maxnumf / minnumf (the non-NaN operand wins) to the intrinsics of
/// PTX max.f32 / min.f32, which have those semantics; convert-gpu-to-nvvm
/// would call libdevice's fmaxf / fminf.
template <typename ArithOp>
struct NumberMaxMinToNVVM : OpRewritePattern<ArithOp> {
  using OpRewritePattern<ArithOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(ArithOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 scalars");
    StringRef name = std::is_same_v<ArithOp, arith::MaxNumFOp>
                         ? "llvm.nvvm.fmax.f"
                         : "llvm.nvvm.fmin.f";
    rewriter.replaceOp(op, callIntrinsic(rewriter, op.getLoc(), name,
                                         {op.getLhs(), op.getRhs()}));
    return success();
  }
};

struct ApproxMathToNVVMPass
    : attn::impl::ApproxMathToNVVMBase<ApproxMathToNVVMPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<ApproxF32<math::Exp2Op>>(ctx, exp2Approx);
    patterns.add<ApproxF32<math::Log2Op>>(ctx, log2Approx);
    patterns.add<ApproxF32<math::ExpOp>>(
        ctx, [](PatternRewriter &b, Location loc, Value x) {
          return exp2Approx(b, loc, scaled(b, loc, x, kLog2E));
        });
    patterns.add<ApproxF32<math::LogOp>>(
        ctx, [](PatternRewriter &b, Location loc, Value x) {
          return scaled(b, loc, log2Approx(b, loc, x), kLn2);
        });
    patterns.add<TanhF32>(ctx);
    // fma is exact either way; lowered here so no libdevice call remains.
    patterns.add<ApproxF32<math::FmaOp>>(ctx, nullptr);
    // Exact ops that convert-gpu-to-nvvm leaves alone (absi) or sends to
    // libdevice (sqrt, absf): LLVM intrinsics that NVPTX selects directly.
    patterns
        .add<ExactToLLVM<math::AbsIOp>, ExactToLLVM<math::AbsFOp>,
             ExactToLLVM<math::SqrtOp>, NumberMaxMinToNVVM<arith::MaxNumFOp>,
             NumberMaxMinToNVVM<arith::MinNumFOp>>(ctx);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
