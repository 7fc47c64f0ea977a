//===- AttentionOpTest.cpp - attn ops built from C++ ----------------------===//
//
// What lit cannot see: the C++ API that other compilers build attn IR with
// (builders, accessors, the destination-style interface, checked types).
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;

namespace {

class AttentionOpTest : public ::testing::Test {
protected:
  AttentionOpTest() : builder(&context) {
    context.loadDialect<AttnDialect, func::FuncDialect, arith::ArithDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elementType) {
    return RankedTensorType::get(shape, elementType);
  }

  /// A function taking q, k, v, out (and optionally a logsumexp) whose body
  /// the test fills; returns its block arguments.
  Block::BlockArgListType makeFunc(TypeRange argTypes) {
    auto fn = func::FuncOp::create(builder, builder.getUnknownLoc(), "f",
                                   builder.getFunctionType(argTypes, {}));
    Block *body = fn.addEntryBlock();
    builder.setInsertionPointToStart(body);
    func::ReturnOp::create(builder, builder.getUnknownLoc());
    builder.setInsertionPointToStart(body);
    return body->getArguments();
  }

  AttentionOp makeAttention(ValueRange args, ValueRange outs) {
    SmallVector<Type> resultTypes(TypeRange(outs.getTypes()));
    return AttentionOp::create(builder, builder.getUnknownLoc(), resultTypes,
                               args[0], args[1], args[2],
                               /*block_mask=*/Value(), outs, /*offsets=*/{},
                               /*scale=*/FloatAttr(), /*causal=*/false,
                               /*kernel=*/KernelAttr());
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

TEST_F(AttentionOpTest, BuildsGqaWithDefaultScale) {
  Type f16 = builder.getF16Type();
  int64_t dyn = ShapedType::kDynamic;
  auto args = makeFunc(
      {tensor({dyn, 8, dyn, 128}, f16), tensor({dyn, 2, dyn, 128}, f16),
       tensor({dyn, 2, dyn, 128}, f16), tensor({dyn, 8, dyn, 128}, f16)});
  AttentionOp op = makeAttention(args, args.drop_front(3));
  EXPECT_TRUE(succeeded(verify(*module)));
  EXPECT_EQ(op.getHeadDim(), 128);
  EXPECT_FLOAT_EQ(op.getScaleValue(), 1.0f / std::sqrt(128.0f));
  EXPECT_FALSE(op.getLogsumexp());
  EXPECT_FALSE(op.hasScoreMod());

  op.setScaleAttr(builder.getF32FloatAttr(0.25f));
  op.setCausal(true);
  EXPECT_FLOAT_EQ(op.getScaleValue(), 0.25f);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(AttentionOpTest, DestinationStyleInitsAreOutputAndLogsumexp) {
  Type f32 = builder.getF32Type();
  auto args =
      makeFunc({tensor({1, 4, 32, 64}, f32), tensor({1, 4, 48, 64}, f32),
                tensor({1, 4, 48, 64}, f32), tensor({1, 4, 32, 64}, f32),
                tensor({1, 4, 32}, f32)});
  AttentionOp op = makeAttention(args, args.drop_front(3));
  ASSERT_TRUE(succeeded(verify(*module)));
  auto dps = cast<DestinationStyleOpInterface>(op.getOperation());
  ASSERT_EQ(dps.getNumDpsInits(), 2);
  EXPECT_EQ(dps.getDpsInitOperand(0)->get(), args[3]);
  EXPECT_EQ(dps.getDpsInitOperand(1)->get(), args[4]);
  EXPECT_EQ(dps.getNumDpsInputs(), 3);
  EXPECT_EQ(op.getLogsumexpInit(), args[4]);
  EXPECT_EQ(op.getLogsumexp(), op.getResult(1));
  EXPECT_EQ(op.getOutputType(), args[3].getType());
}

TEST_F(AttentionOpTest, VerifierNamesTheOperand) {
  Type bf16 = builder.getBF16Type();
  auto args =
      makeFunc({tensor({1, 6, 16, 64}, bf16), tensor({1, 4, 16, 64}, bf16),
                tensor({1, 4, 16, 64}, bf16), tensor({1, 6, 16, 64}, bf16)});
  makeAttention(args, args.drop_front(3));
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  EXPECT_TRUE(failed(verify(*module)));
  EXPECT_EQ(message, "'attn.attention' op expected query heads (6) to be a "
                     "multiple of key/value heads (4)");
}

TEST_F(AttentionOpTest, BlockMaskTypeChecksSizes) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto emitError = [&] { return mlir::emitError(builder.getUnknownLoc()); };
  auto good = BlockMaskType::getChecked(emitError, &context, 128u, 64u);
  ASSERT_TRUE(good);
  EXPECT_EQ(good.getQBlock(), 128u);
  EXPECT_EQ(good.getKvBlock(), 64u);
  EXPECT_FALSE(BlockMaskType::getChecked(emitError, &context, 128u, 96u));
  EXPECT_EQ(message, "expected kv_block to be a power of two from 16 to 1024, "
                     "but got 96");
  EXPECT_FALSE(BlockMaskType::getChecked(emitError, &context, 8u, 64u));
}

TEST(BlockMaskFieldTest, NamesRoundTrip) {
  for (uint32_t i = 0; i <= 7; ++i) {
    auto field = symbolizeBlockMaskField(i);
    ASSERT_TRUE(field.has_value());
    EXPECT_EQ(symbolizeBlockMaskField(stringifyBlockMaskField(*field)), field);
  }
  EXPECT_FALSE(symbolizeBlockMaskField("kv_everything").has_value());
}

} // namespace
