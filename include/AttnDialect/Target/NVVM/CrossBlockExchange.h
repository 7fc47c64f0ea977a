//===- CrossBlockExchange.h - blocks that wait for each other ---*- C++ -*-===//
//
// Builders for blocks of one launch that exchange partial results through
// counters in global memory (an attn.workspace: i32 words, zeroed): a block
// writes its partial, then counts itself in with release semantics; a
// block that needs the others' partials acquires the count until all have
// arrived, then reads them. The softmax kernel's split rows use them
// (docs/Softmax.md); a split-kv attention's merge could too. Blocks that
// never wait but leave the work to whichever counts in last (the block
// mask's compaction) use an acquire-release count instead.
//
// Only blocks that are all resident (or will start while the waiting ones
// run) may wait for each other: the caller bounds how many blocks wait.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TARGET_NVVM_CROSSBLOCKEXCHANGE_H
#define ATTNDIALECT_TARGET_NVVM_CROSSBLOCKEXCHANGE_H

#include "mlir/IR/Builders.h"

namespace mlir::attn::nvvm {

/// A pointer in LLVM address space `space` (1 global, 3 shared) to element
/// `index` of the rank-1 memref `buffer`, for cp.async and atomics.
Value elementPointer(OpBuilder &b, Location loc, Value buffer, Value index,
                     unsigned space);

/// Adds 1 to word `word` of the global i32 memref `counters` with release
/// semantics at GPU scope: the thread's earlier writes are visible to any
/// thread whose acquiring load sees the new count.
void releaseIncrement(OpBuilder &b, Location loc, Value counters, Value word);

/// Waits until word `word` of `counters` is at least `expected` (i32):
/// polls it with loads that acquire at GPU scope, sleeping between polls.
/// After `mostPolls` polls it traps: the blocks it waits for never came.
void waitForCount(OpBuilder &b, Location loc, Value counters, Value word,
                  Value expected, int64_t mostPolls);

/// Adds 1 to word `word` of `counters` (relaxed, GPU scope); the count
/// before (i32). For a count ordered by other means, e.g. a barrier.
Value relaxedFetchAdd(OpBuilder &b, Location loc, Value counters, Value word);

/// Adds `amount` (i32; 1 when null) to word `word` of `counters` with
/// acquire and release semantics at GPU scope; the count before (i32). The
/// thread that sees the last count may read what every thread counted
/// before it wrote, or wrote before a barrier with the counting thread; so
/// may the threads that pass a barrier (of the block or the warp) with it
/// afterwards.
Value acquireReleaseFetchAdd(OpBuilder &b, Location loc, Value counters,
                             Value word, Value amount = Value());

} // namespace mlir::attn::nvvm

#endif // ATTNDIALECT_TARGET_NVVM_CROSSBLOCKEXCHANGE_H
