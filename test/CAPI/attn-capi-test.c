/*===- attn-capi-test.c - exercises the attn C API ------------------------===*\
|*                                                                            *|
|* Loads the dialect through its handle, parses and verifies attn IR, makes   *|
|* a block-mask type, and runs an attn pass through the C pass manager.       *|
|* RUN lines live in capi.test.                                              *|
\*===----------------------------------------------------------------------===*/

#include "AttnDialect/CAPI/Attn.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>
#include <stdlib.h>

static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

static const char *kModule =
    "func.func @f(%q: tensor<2x8x?x64xf32>, %k: tensor<2x2x?x64xf32>,\n"
    "             %v: tensor<2x2x?x64xf32>, %o: tensor<2x8x?x64xf32>)\n"
    "    -> tensor<2x8x?x64xf32> {\n"
    "  %r = attn.attention ins(%q, %k, %v : tensor<2x8x?x64xf32>,\n"
    "      tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32>)\n"
    "      outs(%o : tensor<2x8x?x64xf32>) {causal} -> tensor<2x8x?x64xf32>\n"
    "  return %r : tensor<2x8x?x64xf32>\n"
    "}\n"
    "func.func @g(%s: tensor<4x16xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>)\n"
    "    -> (tensor<4x16xf32>, tensor<4xf32>) {\n"
    "  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l\n"
    "      : tensor<4x16xf32>, tensor<4xf32>\n"
    "  return %p, %l1 : tensor<4x16xf32>, tensor<4xf32>\n"
    "}\n";

int main(void) {
  MlirContext ctx = mlirContextCreate();
  mlirDialectHandleLoadDialect(mlirGetDialectHandle__attn__(), ctx);
  /* func, tensor, linalg, ... for the IR around attn ops and the passes. */
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirAttnRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);

  MlirType mask = mlirAttnBlockMaskTypeGet(ctx, 128, 64);
  if (mlirTypeIsNull(mask) || !mlirAttnTypeIsABlockMask(mask)) {
    fprintf(stderr, "block mask type not created\n");
    return 1;
  }
  mlirTypePrint(mask, printToStdout, NULL);
  printf("\n");
  fflush(stdout); /* the diagnostic below goes to stderr */
  /* An invalid size gives a null type and a diagnostic, not a crash. */
  if (!mlirTypeIsNull(mlirAttnBlockMaskTypeGet(ctx, 100, 64))) {
    fprintf(stderr, "invalid block mask type accepted\n");
    return 1;
  }

  mlirAttnRegisterAllPasses();
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kModule));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "parse failed\n");
    return 1;
  }
  MlirOperation op = mlirModuleGetOperation(module);
  if (!mlirOperationVerify(op)) {
    fprintf(stderr, "verify failed\n");
    return 1;
  }

  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  mlirOpPassManagerAddOwnedPass(
      opm, mlirCreateAttnTransformsDecomposeOnlineSoftmax());
  if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op))) {
    fprintf(stderr, "pass failed\n");
    return 1;
  }
  mlirOperationPrint(op, printToStdout, NULL);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return 0;
}
