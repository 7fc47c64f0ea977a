//===- BlockPattern.h - which blocks of a mask hold kept positions --------===//
//
// The block pattern of a mask, as attn-run's reference sees it: what a
// block mask of given block sizes lists, its density and a picture.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUN_BLOCKPATTERN_H
#define ATTN_RUN_BLOCKPATTERN_H

#include <cstdint>
#include <string>
#include <vector>

namespace attn_run {

/// Which (q-block, kv-block) pairs of each (b, h) hold positions the masks
/// keep and positions they drop: what a block mask of these block sizes
/// lists (partial: both; full: kept only; unlisted: none kept).
class BlockPattern {
public:
  BlockPattern() = default;
  BlockPattern(int64_t batches, int64_t heads, int64_t rows, int64_t cols,
               int64_t qBlock, int64_t kvBlock);
  /// The pattern of attention without a mask_mod, causal or not.
  static BlockPattern ofCausal(int64_t batches, int64_t heads, int64_t rows,
                               int64_t cols, int64_t qBlock, int64_t kvBlock,
                               bool causal);
  void mark(int64_t b, int64_t h, int64_t q, int64_t kv, bool kept) {
    bits[((b * heads + h) * qBlocks + q / qBlock) * kvBlocks + kv / kvBlock] |=
        kept ? 1 : 2;
  }
  /// The fraction of blocks a kernel visits (those with a kept position).
  double density() const;
  /// One line per q-block (at most `grid` lines and columns, a cell then
  /// standing for several blocks) of (b, h): "██" full, "░░" partial,
  /// "  " empty, as FlexAttention's BlockMask prints.
  std::string picture(int64_t b, int64_t h, int64_t grid = 32) const;

private:
  int64_t heads = 0, qBlocks = 0, kvBlocks = 0, qBlock = 1, kvBlock = 1;
  std::vector<uint8_t> bits;
};

} // namespace attn_run

#endif // ATTN_RUN_BLOCKPATTERN_H
