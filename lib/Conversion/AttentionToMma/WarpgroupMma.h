//===- WarpgroupMma.h - Hopper wgmma for the attention kernel ---*- C++ -*-===//
//
// sm_90a's warpgroup tensor-core instructions as the attention kernel uses
// them: shared-memory matrix descriptors for tiles stored in a swizzle
// layout (Swizzle in KernelTiles.h: 128-byte rows, or 64 and 32 bytes for
// head dims of 32 and 16), and wgmma.mma_async through inline PTX (MLIR
// 22's wgmma ops take A only from shared memory; PV takes P from
// registers). Tiles start at a 1024-byte-aligned base.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIB_CONVERSION_ATTENTIONTOMMA_WARPGROUPMMA_H
#define ATTN_LIB_CONVERSION_ATTENTIONTOMMA_WARPGROUPMMA_H

#include "AttnDialect/Conversion/KernelTiles.h"

#include "mlir/IR/Builders.h"

namespace mlir::attn::mma {

/// The shared byte address (an index) of `stage`, a memref of 16-bit
/// elements, or of its buffer `buffer` (along dim 0) when given.
Value stageAddress(OpBuilder &b, Location loc, Value stage, Value buffer);

/// The offset into `shared` (dynamic shared memory, i8) of its first
/// kSwizzleAlignment-aligned byte, from which swizzled tiles are laid out.
Value swizzleAlignedBase(OpBuilder &b, Location loc, Value shared);

/// The column at which the 16-byte chunk holding column `col` (a multiple
/// of 8 below swizzle.columns()) of `row` is stored in a swizzled tile.
Value swizzledColumn(OpBuilder &b, Location loc, Swizzle swizzle, Value row,
                     Value col);

/// A wgmma descriptor (i64) for a tile in `swizzle`'s layout at shared
/// byte address `address` (an index): `leadingBytes` apart lie the tiles
/// of an MN-major operand (unused for K-major ones), `strideBytes` apart
/// the groups of 8 rows.
Value swizzledDescriptor(OpBuilder &b, Location loc, Swizzle swizzle,
                         Value address, int64_t leadingBytes,
                         int64_t strideBytes);

/// `descriptor` moved on by `bytes` (a multiple of 16).
Value advanceDescriptor(OpBuilder &b, Location loc, Value descriptor,
                        int64_t bytes);

/// One m64nNk16 wgmma, N = 2 acc.size(), f32 accumulators in the mma.sync
/// m16n8 order per warp: D = A B (+ D when `accumulate`). A is a K-major
/// descriptor, or the 4 i32 registers of the warp's mma.sync A fragment;
/// B is a descriptor, MN-major when `transposeB`.
SmallVector<Value> warpgroupMma(OpBuilder &b, Location loc, Type element,
                                ArrayRef<Value> acc, ValueRange a,
                                Value bDescriptor, bool transposeB,
                                bool accumulate);

/// Waits until at most `pending` wgmma groups are in flight and returns
/// `values` (the accumulators of the groups waited for): reading them only
/// after the wait keeps ptxas from serializing the wgmmas. `inputs` (i32 A
/// registers, i64 descriptors of the wgmmas waited for) stay live until
/// the wait, so that no instruction reuses their registers while a wgmma
/// may still read them.
SmallVector<Value> warpgroupWait(OpBuilder &b, Location loc,
                                 ArrayRef<Value> values, int64_t pending,
                                 ValueRange inputs = {});

} // namespace mlir::attn::mma

#endif // ATTN_LIB_CONVERSION_ATTENTIONTOMMA_WARPGROUPMMA_H
