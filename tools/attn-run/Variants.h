//===- Variants.h - attention IR for the masks and score mods we test -----===//
//
// attn-run can compile a .mlir file, or build the IR itself from flags: one
// function @attention(q, k, v, out [, lse] [, captures]) with dynamic B, H,
// M and N, using the FlexAttention examples from SEEDS.md as regions.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUN_VARIANTS_H
#define ATTN_RUN_VARIANTS_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace attn_run {

struct VariantSpec {
  std::string dtype = "f32";          // f32, f16 or bf16
  int64_t headDim = 64, valueDim = 0; // valueDim 0: same as headDim
  bool causal = false;
  bool logsumexp = false;
  /// none, sliding-window:W, document, prefix:P, checkerboard-mask
  std::string mask = "none";
  /// none, alibi, softcap:C, relative, checkerboard
  std::string scoreMod = "none";
};

/// MLIR text of the variant, or an error naming the bad flag.
llvm::Expected<std::string> variantSource(const VariantSpec &spec);

/// @softmax(%x: tensor<?x?xT>, %y: tensor<?x?xT>) with dynamic sizes.
llvm::Expected<std::string> softmaxSource(const std::string &dtype);

} // namespace attn_run

#endif // ATTN_RUN_VARIANTS_H
