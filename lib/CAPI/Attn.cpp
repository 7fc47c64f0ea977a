//===- Attn.cpp - C API of the attn dialect -------------------------------===//

#include "AttnDialect/CAPI/Attn.h"
#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/IR/AttnTypes.h"
#include "AttnDialect/InitAll.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"

using namespace mlir;
using namespace mlir::attn;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Attn, attn, mlir::attn::AttnDialect)

void mlirAttnRegisterAllDialects(MlirDialectRegistry registry) {
  DialectRegistry &r = *unwrap(registry);
  registerAllDialectsAndAttn(r);
}

bool mlirAttnTypeIsABlockMask(MlirType type) {
  return isa<BlockMaskType>(unwrap(type));
}

MlirType mlirAttnBlockMaskTypeGet(MlirContext ctx, unsigned qBlock,
                                  unsigned kvBlock) {
  // getChecked reports the reason through the context's diagnostic handler.
  return wrap(BlockMaskType::getChecked(
      [&] { return emitError(UnknownLoc::get(unwrap(ctx))); }, unwrap(ctx),
      qBlock, kvBlock));
}

#include "AttnDialect/Conversion/Passes.capi.cpp.inc"
#include "AttnDialect/GPU/Passes.capi.cpp.inc"
#include "AttnDialect/Target/KernelBundle/Passes.capi.cpp.inc"
#include "AttnDialect/Target/NVVM/Passes.capi.cpp.inc"
#include "AttnDialect/Transforms/Passes.capi.cpp.inc"

void mlirAttnRegisterAllPasses(void) { registerAttnPassesAndPipelines(); }
