//===- BlockMaskOps.td - FlexAttention block masks ---------*- tablegen -*-===//

#ifndef ATTN_BLOCKMASKOPS_TD
#define ATTN_BLOCKMASKOPS_TD

include "AttnDialect/IR/AttnDialect.td"
include "AttnDialect/IR/AttnTypes.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// Block masks
//===----------------------------------------------------------------------===//

def Attn_CreateBlockMaskOp : Attn_Op<"create_block_mask", [Pure]> {
  let summary = "block-sparse metadata of a mask_mod (FlexAttention)";
  let description = [{
    Evaluates `mask_mod(b, h, q, kv)` over a [batch, heads, q_len, kv_len]
    grid, block by block, and classifies each (q-block, kv-block) as empty,
    partial or full, giving the fields of `!attn.block_mask` (see the type).
    It never materializes the q_len x kv_len mask. Pass 1 as `batch` or
    `heads` to build one mask shared by every batch or head. Sizes lie in
    [0, 2^31 - 1]; an attention that uses the mask needs q_len and kv_len
    equal to its M and N, and batch and heads equal to its B and Hq or 1
    (checked when the pipelines record the shape contract, at run time
    where the sizes are dynamic).

    ```mlir
    %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m) kv_len(%n)
        : !attn.block_mask<q_block = 128, kv_block = 128>
        mask_mod {
        ^bb0(%b: index, %h: index, %q: index, %kv: index):
          %keep = arith.cmpi uge, %q, %kv : index
          attn.yield %keep : i1
        }
    ```
  }];
  let arguments = (ins Index:$batch, Index:$heads, Index:$q_len,
                       Index:$kv_len);
  let results = (outs Attn_BlockMaskType:$result);
  let regions = (region SizedRegion<1>:$mask_mod);
  let assemblyFormat = [{
    `batch` `(` $batch `)` `heads` `(` $heads `)` `q_len` `(` $q_len `)`
    `kv_len` `(` $kv_len `)` attr-dict `:` type($result) `mask_mod` $mask_mod
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Attn_MakeBlockMaskOp : Attn_Op<"make_block_mask", [
    Pure, AttrSizedOperandSegments]> {
  let summary = "a block mask from precomputed tensors";
  let description = [{
    Wraps block-sparse metadata computed elsewhere (for instance by
    PyTorch's `create_block_mask`) as an `!attn.block_mask`: the partial
    kv-block lists and, optionally, the full ones; and optionally the
    q-side (transposed) lists that a backward's dK/dV kernel walks.
    kv-side counts are i32 [B, H, QB], indices i32 [B, H, QB, KB]; q-side
    counts i32 [B, H, KB], indices i32 [B, H, KB, QB]. A read of a q-side
    field of a mask given without them is left for
    `attn-check-decomposed` to report.

    ```mlir
    %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
        : !attn.block_mask<q_block = 128, kv_block = 128>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$kv_num_blocks,
                       AnyRankedTensor:$kv_indices,
                       Optional<AnyRankedTensor>:$full_kv_num_blocks,
                       Optional<AnyRankedTensor>:$full_kv_indices,
                       Optional<AnyRankedTensor>:$q_num_blocks,
                       Optional<AnyRankedTensor>:$q_indices,
                       Optional<AnyRankedTensor>:$full_q_num_blocks,
                       Optional<AnyRankedTensor>:$full_q_indices);
  let results = (outs Attn_BlockMaskType:$result);
  let assemblyFormat = [{
    `kv` `(` $kv_num_blocks `,` $kv_indices `:` type($kv_num_blocks) `,`
              type($kv_indices) `)`
    (`full_kv` `(` $full_kv_num_blocks^ `,` $full_kv_indices `:`
                   type($full_kv_num_blocks) `,` type($full_kv_indices) `)`)?
    (`q` `(` $q_num_blocks^ `,` $q_indices `:` type($q_num_blocks) `,`
              type($q_indices) `)`)?
    (`full_q` `(` $full_q_num_blocks^ `,` $full_q_indices `:`
                   type($full_q_num_blocks) `,` type($full_q_indices) `)`)?
    attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// The list of `field`, or null where the op was not given it.
    Value getList(BlockMaskField field);
  }];
  let hasVerifier = 1;
}

def Attn_BlockMaskFieldOp : Attn_Op<"block_mask_field", [Pure]> {
  let summary = "reads one field of a block mask as a tensor";
  let description = [{
    Returns one of the i32 tensors of a block mask (see `!attn.block_mask`):
    counts have rank 3, index lists rank 4.

    ```mlir
    %idx = attn.block_mask_field kv_indices of %bm
        : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?x?xi32>
    ```
  }];
  let arguments = (ins Attn_BlockMaskType:$block_mask,
                       Attn_BlockMaskField:$field);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $field `of` $block_mask attr-dict `:` type($block_mask) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // ATTN_BLOCKMASKOPS_TD
