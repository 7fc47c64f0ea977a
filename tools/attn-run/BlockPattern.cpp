//===- BlockPattern.cpp ---------------------------------------------------===//

#include "BlockPattern.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace attn_run;

BlockPattern::BlockPattern(int64_t batches, int64_t heads, int64_t rows,
                           int64_t cols, int64_t qBlock, int64_t kvBlock)
    : heads(heads), qBlocks(llvm::divideCeil(rows, qBlock)),
      kvBlocks(llvm::divideCeil(cols, kvBlock)), qBlock(qBlock),
      kvBlock(kvBlock), bits(batches * heads * qBlocks * kvBlocks, 0) {}

BlockPattern BlockPattern::ofCausal(int64_t batches, int64_t heads,
                                    int64_t rows, int64_t cols, int64_t qBlock,
                                    int64_t kvBlock, bool causal) {
  BlockPattern pattern(batches, heads, rows, cols, qBlock, kvBlock);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t q0 = 0; q0 < rows; q0 += qBlock)
        for (int64_t kv0 = 0; kv0 < cols; kv0 += kvBlock) {
          // The block's last row keeps its first column if anything does;
          // its first row drops its last column if anything is dropped.
          int64_t q1 = std::min(q0 + qBlock, rows) - 1;
          int64_t kv1 = std::min(kv0 + kvBlock, cols) - 1;
          pattern.mark(b, h, q1, kv0, !causal || kv0 <= q1);
          pattern.mark(b, h, q0, kv1, !causal || kv1 <= q0);
        }
  return pattern;
}

double BlockPattern::density() const {
  if (bits.empty())
    return 0;
  int64_t visited = llvm::count_if(bits, [](uint8_t b) { return b & 1; });
  return static_cast<double>(visited) / bits.size();
}

std::string BlockPattern::picture(int64_t b, int64_t h, int64_t grid) const {
  std::string text;
  const uint8_t *pattern = &bits[(b * heads + h) * qBlocks * kvBlocks];
  int64_t rows = std::max<int64_t>(1, llvm::divideCeil(qBlocks, grid));
  int64_t cols = std::max<int64_t>(1, llvm::divideCeil(kvBlocks, grid));
  for (int64_t r = 0; r < qBlocks; r += rows) {
    std::string line;
    for (int64_t c = 0; c < kvBlocks; c += cols) {
      bool all = true, any = false;
      for (int64_t i = r; i < std::min(r + rows, qBlocks); ++i)
        for (int64_t j = c; j < std::min(c + cols, kvBlocks); ++j) {
          uint8_t block = pattern[i * kvBlocks + j];
          all &= block == 1;
          any |= (block & 1) != 0;
        }
      line += all ? "\u2588\u2588" : any ? "\u2591\u2591" : "  ";
    }
    text += llvm::StringRef(line).rtrim().str() + "\n";
  }
  return text;
}
