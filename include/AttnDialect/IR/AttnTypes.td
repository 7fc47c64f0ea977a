//===- AttnTypes.td - attn dialect types and attributes ----*- tablegen -*-===//

#ifndef ATTN_TYPES_TD
#define ATTN_TYPES_TD

include "AttnDialect/IR/AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Attn_BlockMaskType : TypeDef<Attn_Dialect, "BlockMask"> {
  let mnemonic = "block_mask";
  let summary = "FlexAttention block-sparse mask metadata";
  let description = [{
    The block-sparse structure of a mask over a (Q_LEN x KV_LEN) score
    matrix, cut into blocks of `q_block` x `kv_block`. It holds the fields of
    FlexAttention's `BlockMask`, each an i32 tensor (QB = ceil(Q_LEN /
    q_block), KB = ceil(KV_LEN / kv_block); B and H may be 1 to broadcast):

    | field                | shape          | meaning                              |
    |----------------------|----------------|--------------------------------------|
    | `kv_num_blocks`      | [B, H, QB]     | partial kv-blocks per q-block        |
    | `kv_indices`         | [B, H, QB, KB] | their kv-block indices, first count  |
    | `full_kv_num_blocks` | [B, H, QB]     | full (unmasked) kv-blocks per q-block|
    | `full_kv_indices`    | [B, H, QB, KB] | their kv-block indices               |
    | `q_num_blocks`       | [B, H, KB]     | transposed: partial q-blocks         |
    | `q_indices`          | [B, H, KB, QB] | their q-block indices                |
    | `full_q_num_blocks`  | [B, H, KB]     | transposed: full q-blocks            |
    | `full_q_indices`     | [B, H, KB, QB] | their q-block indices                |

    In FlexAttention's semantics kernels visit only the listed blocks:
    partial ones apply the elementwise `mask_mod`, full ones skip it. The
    q-side lists serve backward passes, which walk the mask column by
    column. `attn-lower-block-masks` (host loops) and
    `attn-block-masks-to-gpu` (a kernel) compute them for
    `attn.create_block_mask`; an `attn.make_block_mask` carries only the
    kv-side lists it was given.

    Block sizes are powers of two from 16 to 1024 (FlexAttention's default
    is 128).

    Example: `!attn.block_mask<q_block = 128, kv_block = 128>`
  }];
  let parameters = (ins "unsigned":$qBlock, "unsigned":$kvBlock);
  let assemblyFormat = "`<` `q_block` `=` $qBlock `,` `kv_block` `=` $kvBlock `>`";
  let genVerifyDecl = 1;
}

def Attn_BlockMaskField : I32EnumAttr<"BlockMaskField",
    "a field of a block mask", [
  I32EnumAttrCase<"kv_num_blocks", 0>,
  I32EnumAttrCase<"kv_indices", 1>,
  I32EnumAttrCase<"full_kv_num_blocks", 2>,
  I32EnumAttrCase<"full_kv_indices", 3>,
  I32EnumAttrCase<"q_num_blocks", 4>,
  I32EnumAttrCase<"q_indices", 5>,
  I32EnumAttrCase<"full_q_num_blocks", 6>,
  I32EnumAttrCase<"full_q_indices", 7>
]> {
  let cppNamespace = "::mlir::attn";
}

#endif // ATTN_TYPES_TD
