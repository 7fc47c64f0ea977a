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

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "AttnDialect/IR/AttnOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "AttnDialect/IR/AttnTypes.cpp.inc"
      >();
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
