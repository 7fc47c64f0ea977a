//===- AttnDialect.cpp - attn dialect registration ------------------------===//

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/IR/AttnTypes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "AttnDialect/IR/AttnDialect.cpp.inc"
#include "AttnDialect/IR/AttnEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "AttnDialect/IR/AttnTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "AttnDialect/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "AttnDialect/IR/AttnOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "AttnDialect/IR/AttnTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "AttnDialect/IR/AttnAttrs.cpp.inc"
      >();
  // The backward's loops live with the Transforms library, which attaches
  // them (registerAttentionGradDecomposition).
  declarePromisedInterface<linalg::AggregatedOpInterface, AttentionGradOp>();
}

LogicalResult
BlockMaskType::verify(function_ref<InFlightDiagnostic()> emitError,
                      unsigned qBlock, unsigned kvBlock) {
  auto isValid = [](unsigned size) {
    return size >= 16 && size <= 1024 && llvm::isPowerOf2_32(size);
  };
  if (!isValid(qBlock))
    return emitError() << "expected q_block to be a power of two from 16 to "
                          "1024, but got "
                       << qBlock;
  if (!isValid(kvBlock))
    return emitError() << "expected kv_block to be a power of two from 16 to "
                          "1024, but got "
                       << kvBlock;
  return success();
}

LogicalResult KernelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 KernelKind kind, int64_t qTile, int64_t kvTile,
                                 int64_t bands, int64_t stages,
                                 int64_t queryBuffers,
                                 int64_t producerRegisters,
                                 int64_t consumerRegisters) {
  StringRef name = stringifyKernelKind(kind);
  if (qTile <= 0 || kvTile <= 0)
    return emitError() << "expected positive q_tile and kv_tile, but got "
                       << qTile << " and " << kvTile;
  bool warpSpecialized = kind == KernelKind::wgmma_ws;
  if (!warpSpecialized &&
      (queryBuffers != 1 || producerRegisters != 0 || consumerRegisters != 0))
    return emitError() << "query_buffers and the register split are "
                          "wgmma_ws's, not "
                       << name << "'s";
  if (kind == KernelKind::simt) {
    if (bands != 1 || stages != 2)
      return emitError() << "simt has no bands or stages to set";
    return success();
  }
  // A warp computes bands of 16 rows with k16 steps over 16-key chunks.
  if (qTile % 16 != 0 || kvTile % 16 != 0 || kvTile > 256)
    return emitError() << name
                       << " needs q_tile and kv_tile to be multiples of 16 "
                          "and kv_tile at most 256, but got "
                       << qTile << " and " << kvTile;
  if (bands != 1 && bands != 2)
    return emitError() << "expected 1 or 2 bands, but got " << bands;
  if (qTile % (16 * bands) != 0 || qTile / (16 * bands) > 32)
    return emitError() << "q_tile " << qTile << " in bands of " << bands
                       << " x 16 rows needs whole warps, 32 at most";
  if (stages != 1 && stages != 2)
    return emitError() << "expected 1 or 2 stages, but got " << stages;
  if (kind == KernelKind::mma_sync)
    return success();
  // wgmma: a warpgroup of four one-band warps owns 64 rows, and its loop
  // waits on one K/V buffer while the other fills.
  if (qTile % 64 != 0 || bands != 1 || stages != 2)
    return emitError() << name
                       << " needs q_tile in whole warpgroups of 64 rows, one "
                          "band and 2 stages, but got q_tile "
                       << qTile << ", " << bands << " bands and " << stages
                       << " stages";
  if (!warpSpecialized)
    return success();
  if (queryBuffers != 1 && queryBuffers != 2)
    return emitError() << "expected 1 or 2 query_buffers, but got "
                       << queryBuffers;
  // setmaxnreg takes multiples of 8 from 24 to 256; the producer's 128
  // threads and the consumers' together hold at most the 64K registers.
  auto validCount = [](int64_t r) { return r >= 24 && r <= 256 && r % 8 == 0; };
  int64_t consumerThreads = 2 * qTile;
  if (!validCount(producerRegisters) || !validCount(consumerRegisters) ||
      128 * producerRegisters + consumerThreads * consumerRegisters > 65536)
    return emitError() << "expected producer and consumer registers to be "
                          "multiples of 8 from 24 to 256 that 128 + "
                       << consumerThreads << " threads hold in 65536, but got "
                       << producerRegisters << " and " << consumerRegisters;
  return success();
}
