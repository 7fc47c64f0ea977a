//===- AttentionGradDecompositionTest.cpp - the backward's interface ------===//
//
// attn.attention_grad's decomposition is attached by the Transforms library
// (registerAttentionGradDecomposition) to an interface the dialect
// promises: a compiler that registers attn as InitAll.h does can decompose
// the op through AggregatedOpInterface, as it does attn.softmax.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/InitAll.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr const char *kGradModule = R"mlir(
func.func @grad(%q: tensor<1x4x9x16xf32>, %k: tensor<1x2x5x16xf32>,
                %v: tensor<1x2x5x16xf32>, %o: tensor<1x4x9x16xf32>,
                %do: tensor<1x4x9x16xf32>, %lse: tensor<1x4x9xf32>)
    -> (tensor<1x4x9x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>) {
  %dq, %dk, %dv = attn.attention_grad
      ins(%q, %k, %v, %o, %do, %lse : tensor<1x4x9x16xf32>,
          tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>, tensor<1x4x9x16xf32>,
          tensor<1x4x9x16xf32>, tensor<1x4x9xf32>)
      outs(%q, %k, %v : tensor<1x4x9x16xf32>, tensor<1x2x5x16xf32>,
           tensor<1x2x5x16xf32>) {causal}
      -> tensor<1x4x9x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>
  return %dq, %dk, %dv
      : tensor<1x4x9x16xf32>, tensor<1x2x5x16xf32>, tensor<1x2x5x16xf32>
}
)mlir";

TEST(AttentionGradDecomposition, ThroughAggregatedOpInterface) {
  DialectRegistry registry;
  registerAllDialectsAndAttn(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kGradModule, &context);
  ASSERT_TRUE(module);
  AttentionGradOp grad;
  module->walk([&](AttentionGradOp op) { grad = op; });
  ASSERT_TRUE(grad);

  auto decomposable = dyn_cast<linalg::AggregatedOpInterface>(*grad);
  ASSERT_TRUE(decomposable);
  IRRewriter rewriter(&context);
  rewriter.setInsertionPoint(grad);
  FailureOr<SmallVector<Value>> results =
      decomposable.decomposeOperation(rewriter);
  ASSERT_TRUE(succeeded(results));
  ASSERT_EQ(results->size(), 3u);
  for (auto [result, old] : llvm::zip_equal(*results, grad.getResults()))
    EXPECT_EQ(result.getType(), old.getType());
  rewriter.replaceOp(grad, *results);

  EXPECT_TRUE(succeeded(verify(*module)));
  int remaining = 0, loops = 0;
  module->walk([&](Operation *op) {
    remaining += isa<AttentionGradOp>(op);
    loops += op->getName().getStringRef() == "scf.for";
  });
  EXPECT_EQ(remaining, 0);
  // Batch, query heads and kv tiles at least.
  EXPECT_GE(loops, 3);
}

} // namespace
