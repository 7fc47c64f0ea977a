//===- AttnTypes.h - attn dialect types and attributes ----------*- C++ -*-===//

#ifndef ATTNDIALECT_IR_ATTNTYPES_H
#define ATTNDIALECT_IR_ATTNTYPES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Types.h"

#include "AttnDialect/IR/AttnEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "AttnDialect/IR/AttnTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "AttnDialect/IR/AttnAttrs.h.inc"

#endif // ATTNDIALECT_IR_ATTNTYPES_H
