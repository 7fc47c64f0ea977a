/*===- Attn.h - C API of the attn dialect --------------------------*- C
-*-===*\
|*                                                                            *|
|* Registers the attn dialect and its passes from C (and from the Python      *|
|* bindings built on it).                                                     *|
\*===----------------------------------------------------------------------===*/

#ifndef ATTNDIALECT_CAPI_ATTN_H
#define ATTNDIALECT_CAPI_ATTN_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/// mlirGetDialectHandle__attn__(): load with mlirDialectHandleLoadDialect.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Attn, attn);

/// Adds attn and every upstream dialect and extension that attn-opt has
/// (func, arith, math, tensor, linalg, scf, gpu, nvvm, ...) to `registry`:
/// what attn IR and its pipelines use.
MLIR_CAPI_EXPORTED void
mlirAttnRegisterAllDialects(MlirDialectRegistry registry);

/// Whether `type` is an !attn.block_mask.
/// Every attn pass and the named pipelines (attn-lower-to-cpu,
/// attn-lower-to-nvvm); mlirRegisterAttn<Stage>Passes register one stage.
MLIR_CAPI_EXPORTED void mlirAttnRegisterAllPasses(void);

MLIR_CAPI_EXPORTED bool mlirAttnTypeIsABlockMask(MlirType type);

/// !attn.block_mask<q_block = qBlock, kv_block = kvBlock>; a null type if the
/// sizes are invalid.
MLIR_CAPI_EXPORTED MlirType mlirAttnBlockMaskTypeGet(MlirContext ctx,
                                                     unsigned qBlock,
                                                     unsigned kvBlock);

#ifdef __cplusplus
}
#endif

/// mlirRegisterAttnPasses() and one mlirCreateAttn<Pass>() per pass.
#include "AttnDialect/Conversion/Passes.capi.h.inc"
#include "AttnDialect/GPU/Passes.capi.h.inc"
#include "AttnDialect/Target/KernelBundle/Passes.capi.h.inc"
#include "AttnDialect/Target/NVVM/Passes.capi.h.inc"
#include "AttnDialect/Transforms/Passes.capi.h.inc"

#endif // ATTNDIALECT_CAPI_ATTN_H
