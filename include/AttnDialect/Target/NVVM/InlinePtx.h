//===- InlinePtx.h - PTX for what the NVVM ops do not express ---*- C++ -*-===//
//
// One builder for the PTX the kernels write by hand: each caller says why
// no NVVM op of MLIR 22 serves it (wgmma with A in registers, mbarrier
// waits without a suspend-time hint, 32-bit shared addresses, release and
// acquire atomics). Operand constraints come from the operands' types,
// never from pasted strings.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TARGET_NVVM_INLINEPTX_H
#define ATTNDIALECT_TARGET_NVVM_INLINEPTX_H

#include "mlir/IR/Builders.h"

namespace mlir::attn::nvvm {

/// Emits `ptx` as an inline-assembly block with side effects that may
/// touch memory, its operands numbered outputs first ($0...: fresh
/// registers of `results`), then `inputs`; returns the outputs. A shared
/// address goes in as an i32 ("r"); i64 and pointers are "l", f32 "f",
/// i16 "h".
SmallVector<Value> inlinePtx(OpBuilder &b, Location loc, StringRef ptx,
                             ValueRange inputs, TypeRange results = {});

/// The same for a block that reads and overwrites `tied` in registers
/// ($0..., tied inputs after them, then `inputs`) and touches no memory;
/// returns the new values of `tied`.
SmallVector<Value> inlinePtxInPlace(OpBuilder &b, Location loc, StringRef ptx,
                                    ValueRange tied, ValueRange inputs);

} // namespace mlir::attn::nvvm

#endif // ATTNDIALECT_TARGET_NVVM_INLINEPTX_H
