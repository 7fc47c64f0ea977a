//===- AttnDialect.td - attn dialect definition ------------*- tablegen -*-===//
//
// The attn dialect: attention, online softmax, softmax and FlexAttention-style
// block masks as first-class ops.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Tiled attention with FlexAttention semantics.";
  let description = [{
    The `attn` dialect expresses scaled dot-product attention as one op,
    `attn.attention`, with FlexAttention's extension points: a `score_mod`
    region that rewrites each score, a `mask_mod` region that removes
    scores, and a block mask (`!attn.block_mask`) that lists the kv-blocks
    that are not wholly masked. `attn.online_softmax` is one step of
    the online-normalizer softmax that a tiled attention (and a long-row
    `attn.softmax`) is built from.

    Tensors follow PyTorch's layout: Q is [B, Hq, M, D], K is [B, Hkv, N, D],
    V is [B, Hkv, N, Dv] and the output is [B, Hq, M, Dv]. B, H, M and N may
    be dynamic; D and Dv are static. Inputs are f16, bf16 or f32; scores and
    softmax statistics are accumulated in f32.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // Tiling creates tensor slices, and split-kv tiling fills its partial
  // tensors with linalg.fill.
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_DIALECT_TD
