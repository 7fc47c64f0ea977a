// Parses, verifies and prints attn IR with nothing but the installed package.

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

static const char *kGood = R"mlir(
func.func @f(%q: tensor<2x8x?x64xf16>, %k: tensor<2x2x?x64xf16>,
             %v: tensor<2x2x?x64xf16>, %o: tensor<2x8x?x64xf16>)
    -> tensor<2x8x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x?x64xf16>,
      tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>)
      outs(%o : tensor<2x8x?x64xf16>) {causal} -> tensor<2x8x?x64xf16>
  return %r : tensor<2x8x?x64xf16>
}
)mlir";

static const char *kBad = R"mlir(
func.func @f(%q: tensor<1x6x?x64xf16>, %k: tensor<1x4x?x64xf16>,
             %v: tensor<1x4x?x64xf16>, %o: tensor<1x6x?x64xf16>)
    -> tensor<1x6x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x6x?x64xf16>,
      tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>)
      outs(%o : tensor<1x6x?x64xf16>) -> tensor<1x6x?x64xf16>
  return %r : tensor<1x6x?x64xf16>
}
)mlir";

int main() {
  mlir::MLIRContext context;
  context.loadDialect<mlir::attn::AttnDialect, mlir::func::FuncDialect>();

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kGood, &context);
  if (!module)
    return 1;
  llvm::outs() << "parsed and verified\n";
  module->print(llvm::outs());
  module->walk([](mlir::attn::AttentionOp op) {
    llvm::outs() << "default scale " << op.getScaleValue() << "\n";
  });

  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  if (mlir::parseSourceString<mlir::ModuleOp>(kBad, &context))
    return 1;
  llvm::outs() << "rejected: " << message << "\n";
  return 0;
}
