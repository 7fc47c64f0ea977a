//===- BlockMaskLists.h - building create_block_mask's lists ----*- C++ -*-===//
//
// The builder of one attn.create_block_mask's lists: deciding boxes of
// positions, and the host loops of attn-lower-block-masks
// (LowerBlockMasks.cpp). attn-block-masks-to-gpu derives the GPU's scan
// and compaction kernel from it (Conversion/BlockMasksToGpu).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_BLOCKMASKLISTS_H
#define ATTNDIALECT_TRANSFORMS_BLOCKMASKLISTS_H

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/MaskBounds.h"
#include "AttnDialect/Transforms/RegionInliner.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn::block_masks {

/// The two sides of a block mask: rows of q-blocks that list kv-blocks (what
/// a forward pass walks) and columns of kv-blocks that list q-blocks (the
/// transposed lists a backward pass walks).
enum class Side { Kv, Q };

/// Builds the lists of one attn.create_block_mask.
class ListBuilder {
public:
  ListBuilder(RewriterBase &b, CreateBlockMaskOp op, RegionChecks checks,
              bool useBounds)
      : b(b), loc(op.getLoc()), op(op), regions(op, checks),
        qBlock(op.getType().getQBlock()), kvBlock(op.getType().getKvBlock()),
        i32(b.getI32Type()),
        bounded(useBounds && canBoundMaskMod(op.getMaskMod())) {
    for (Operation *user : op->getUsers())
      if (auto field = dyn_cast<BlockMaskFieldOp>(user))
        qSide |= static_cast<int64_t>(field.getField()) > 3;
  }

  /// Replaces the op by host loops that fill freshly allocated lists.
  void buildOnHost();

protected:
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value asI32(Value v) { return arith::IndexCastOp::create(b, loc, i32, v); }
  Value i32Const(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  }
  Value inc(Value count, Value flag) {
    return add(count, arith::IndexCastOp::create(
                          b, loc, b.getIndexType(),
                          arith::ExtUIOp::create(b, loc, i32, flag)));
  }
  /// Whether `flag` (i1) holds on any lane of the warp (boxes whose reads
  /// a warp's lanes share).
  Value warpAny(Value flag) {
    Value all = arith::ConstantIntOp::create(b, loc, i32, -1);
    return NVVM::VoteSyncOp::create(b, loc, b.getI1Type(), all, flag,
                                    NVVM::VoteSyncKind::any);
  }
  void sizes();
  /// Lines of a side per (b, h) (q-blocks for the kv side), and the blocks
  /// each line lists from (kv-blocks for the kv side).
  Value lines(Side side) { return side == Side::Kv ? qBlocks : kvBlocks; }
  Value lineLength(Side side) { return side == Side::Kv ? kvBlocks : qBlocks; }
  /// Whether mask_mod keeps (any) and drops (any) positions of the box
  /// [qStart, qLimit) x [kvStart, kvLimit) of (bi, hi), its limits inside
  /// the problem: rows qStart + 0, 1, ..., rows - 1 and columns kvStart +
  /// first, first + step, ..., below cols, positions past a limit clamped
  /// and not counted; the row loop unrolled by `unrollRows`.
  std::pair<Value, Value> scanBox(Value bi, Value hi, Value qStart,
                                  Value qLimit, int64_t rows, Value kvStart,
                                  Value kvLimit, int64_t cols, Value first,
                                  int64_t step, int64_t unrollRows = 1);
  /// The same for the box [qStart, qEnd) x [kvStart, kvEnd), not empty and
  /// inside the problem: dynamic trip counts, rows one at a time.
  std::pair<Value, Value> scanInside(Value bi, Value hi, Value qStart,
                                     Value qEnd, Value kvStart, Value kvEnd);
  /// The same for a box of at most rows x cols positions, possibly empty,
  /// decided by the mask_mod's bounds (MaskBounds.h) where they tell and
  /// position by position where they do not. With `shared` (a thread's
  /// box of a block, all lanes of the warp here), the lanes share their
  /// reads as it says, and a box is not scanned when the warp's other boxes
  /// already keep and drop: the block is partial whatever it holds, and the
  /// result says it keeps and drops.
  std::pair<Value, Value> decideBox(Value bi, Value hi, Value qStart,
                                    Value qLimit, int64_t rows, Value kvStart,
                                    Value kvLimit, int64_t cols,
                                    const SharedReads *shared = nullptr);
  /// (keep, drop) of block (qb, kb) of (bi, hi), whole.
  std::pair<Value, Value> scanBlock(Value bi, Value hi, Value qb, Value kb);
  /// Appends `block` to the partial or full list of its line, as `keep` and
  /// `drop` say; `store(list, position, value)` writes a list. Returns the
  /// new (partial, full) counts.
  std::pair<Value, Value>
  append(Value keep, Value drop, Value block, Value partial, Value full,
         function_ref<void(int64_t, Value, Value)> store);
  /// Host loops that scan every block of `side`'s lines into `buffers`
  /// (counts, indices, full counts, full indices).
  void fillOnHost(Side side, ArrayRef<Value> buffers);
  /// The result: make_block_mask of the kv-side lists, and the field reads
  /// replaced by their lists (kv side, then q side).
  void replace(ArrayRef<Value> lists);

  RewriterBase &b;
  Location loc;
  CreateBlockMaskOp op;
  RegionInliner regions;
  int64_t qBlock, kvBlock;
  Type i32;
  /// Whether blocks are decided by the mask_mod's bounds first.
  bool bounded;
  /// Whether a field read asks for the q-side lists.
  bool qSide = false;
  Value batch, heads, qLen, kvLen, qBlocks, kvBlocks;
};

/// Replaces each attn.block_mask_field of an attn.make_block_mask that was
/// given its kv-side lists by the list it reads.
void forwardGivenLists(ModuleOp module, RewriterBase &rewriter);

} // namespace mlir::attn::block_masks

#endif // ATTNDIALECT_TRANSFORMS_BLOCKMASKLISTS_H
