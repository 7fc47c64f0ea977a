//===- Variants.h - attention IR for the masks and score mods we test -----===//
//
// Attention IR built from parameters (attn-run and the Python bindings): one
// function @attention(q, k, v, out [, lse] [, captures]) with dynamic B, H,
// M and N, using the FlexAttention examples of docs/Masks.md as regions.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_EXECUTION_VARIANTS_H
#define ATTNDIALECT_EXECUTION_VARIANTS_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir::attn {

struct VariantSpec {
  std::string dtype = "f32";          // f32, f16 or bf16
  int64_t headDim = 64, valueDim = 0; // valueDim 0: same as headDim
  bool causal = false;
  bool logsumexp = false;
  /// none, sliding-window:W, document, prefix:P, jagged:P, sasa:W:K or
  /// natten:H:W:K
  std::string mask = "none";
  /// none, alibi, softcap:C, relative, checkerboard
  std::string scoreMod = "none";
  /// The scale of Q.K^T; 0: the op's default, 1/sqrt(D).
  double scale = 0;
  /// Static sizes; -1 (the default) leaves a size dynamic.
  int64_t batch = -1, queryHeads = -1, kvHeads = -1, queryLen = -1, kvLen = -1;
  /// The block size of a block mask given as lists, for a variant with a
  /// mask: the last four arguments, i32 kv_num_blocks [1, 1, QB],
  /// kv_indices [1, 1, QB, KB], full_kv_num_blocks and full_kv_indices
  /// (FlexAttention's BlockMask fields, one mask for every batch and head),
  /// which the attention honours as given. 0: none (the pipeline derives
  /// one from the mask).
  int64_t givenBlockMask = 0;
  /// Marks captures that attn-run fills in a particular way (jagged's
  /// sequence starts) with `attn.fill`; attn-run removes it before compiling.
  bool fillHints = false;
  /// Instead: @attention_grad(query, key, value, out, grad_out, logsumexp,
  /// grad_query, grad_key, grad_value [, grad_slopes] [, captures]), the
  /// attn.attention_grad of the same attention.
  bool backward = false;
  /// With backward: also the gradient of the score_mod's float capture
  /// (alibi's slopes), as `wrt` of the op.
  bool captureGrads = false;
  /// Regions written elsewhere (Python's attn.trace): the ops of the
  /// mask_mod's or score_mod's block and its attn.yield, reading the block
  /// arguments %b, %h, %q, %kv (and %s) and the captured arguments
  /// `traceCaptures` declares (", %name: type" each, after the output and
  /// logsumexp). Either replaces `mask` or `scoreMod`, which must be none.
  std::string traceMaskBody, traceScoreBody, traceCaptures;
  /// With backward: the captured arguments, among `traceCaptures`, whose
  /// gradients the op computes (`wrt`), as (name without %, type).
  std::vector<std::pair<std::string, std::string>> traceWrt;
};

/// MLIR text of the variant, or an error naming the bad flag.
llvm::Expected<std::string> variantSource(const VariantSpec &spec);

/// @block_mask(8 lists..., captures) -> the 8 lists: the fields of an
/// attn.create_block_mask of `spec.mask` (not none) over the static
/// `spec.batch`, `spec.queryHeads`, `spec.queryLen` and `spec.kvLen`, copied
/// into the list arguments (FlexAttention's BlockMask fields, in the order
/// of !attn.block_mask's table).
llvm::Expected<std::string> blockMaskSource(const VariantSpec &spec,
                                            int64_t qBlock, int64_t kvBlock);

/// @softmax(%x: tensor<?x?xT>, %y: tensor<?x?xT>) with dynamic sizes.
llvm::Expected<std::string> softmaxSource(const std::string &dtype);

} // namespace mlir::attn

#endif // ATTNDIALECT_EXECUTION_VARIANTS_H
