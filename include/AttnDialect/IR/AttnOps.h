//===- AttnOps.h - attn dialect operations ----------------------*- C++ -*-===//

#ifndef ATTNDIALECT_IR_ATTNOPS_H
#define ATTNDIALECT_IR_ATTNOPS_H

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/IR/AttnTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/TilingInterface.h"

#define GET_OP_CLASSES
#include "AttnDialect/IR/AttnOps.h.inc"

#endif // ATTNDIALECT_IR_ATTNOPS_H
