//===- AttnDialect.h - attn dialect -----------------------------*- C++ -*-===//

#ifndef ATTNDIALECT_IR_ATTNDIALECT_H
#define ATTNDIALECT_IR_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "AttnDialect/IR/AttnDialect.h.inc"

#endif // ATTNDIALECT_IR_ATTNDIALECT_H
