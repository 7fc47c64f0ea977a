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
    `attn.create_block_mask`; an `attn.make_block_mask` carries the lists
    it was given.

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

def Attn_KernelKind : I32EnumAttr<"KernelKind",
    "the GPU kernel that computes an attention op", [
  I32EnumAttrCase<"simt", 0>,
  I32EnumAttrCase<"mma_sync", 1>,
  I32EnumAttrCase<"wgmma", 2>,
  I32EnumAttrCase<"wgmma_ws", 3>
]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

def Attn_KernelAttr : AttrDef<Attn_Dialect, "Kernel"> {
  let mnemonic = "kernel";
  let summary = "the GPU kernel chosen for an attention op, with its tiles";
  let description = [{
    Which kernel computes an `attn.attention` on the GPU and how it is cut:
    `attn-choose-kernel` records it on each op (the op's `kernel`
    attribute) from the chip, the dtype and the head dims, or checks one
    already there against the chip; the GPU lowerings follow it.

    | kind       | kernel                                                  |
    |------------|---------------------------------------------------------|
    | `simt`     | tile-level linalg ops over a block's threads (any dtype) |
    | `mma_sync` | mma.sync tensor cores (f16/bf16, sm_80 and newer)        |
    | `wgmma`    | sm_90a wgmma, one block per q-tile                       |
    | `wgmma_ws` | sm_90a wgmma, persistent, a TMA producer warpgroup       |

    Parameters: `q_tile` rows per block and `kv_tile` keys per step of the
    kv loop; for the tensor-core kernels also `bands` of 16 rows per warp
    (a block computes with q_tile / (16 * bands) warps), `stages` K/V
    buffers, and for `wgmma_ws` the Q buffers (`query_buffers`) and the
    registers `setmaxnreg` leaves each producer and consumer thread (0,
    the default, for the other kinds). Parameters left out take their
    defaults: bands 1, stages 2, one Q buffer.

    The verifier refuses what no kernel of that kind can run: tensor-core
    tiles that are not multiples of 16, wgmma q-tiles that are not whole
    warpgroups of 64 rows, more than 32 warps, register splits beyond the
    register file. The attention op's verifier refuses a kind that cannot
    compute it (dtype, head dims), and `attn-choose-kernel` one that the
    chip cannot run (wgmma before sm_90a, tiles beyond its shared memory).

    Example: `#attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 128,
    query_buffers = 2, producer_registers = 40, consumer_registers = 232>`
  }];
  let parameters = (ins
    EnumParameter<Attn_KernelKind>:$kind,
    "int64_t":$q_tile,
    "int64_t":$kv_tile,
    DefaultValuedParameter<"int64_t", "1">:$bands,
    DefaultValuedParameter<"int64_t", "2">:$stages,
    DefaultValuedParameter<"int64_t", "1">:$query_buffers,
    DefaultValuedParameter<"int64_t", "0">:$producer_registers,
    DefaultValuedParameter<"int64_t", "0">:$consumer_registers);
  let assemblyFormat = [{
    `<` $kind `,` struct($q_tile, $kv_tile, $bands, $stages, $query_buffers,
                         $producer_registers, $consumer_registers) `>`
  }];
  let builders = [
    AttrBuilder<(ins "KernelKind":$kind, "int64_t":$qTile,
                     "int64_t":$kvTile), [{
      return $_get($_ctxt, kind, qTile, kvTile, 1, 2, 1, 0, 0);
    }]>
  ];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The warps that compute (the consumers of `wgmma_ws`).
    int64_t getWarps() const { return getQTile() / (16 * getBands()); }
    /// Whether wgmma computes both contractions.
    bool isWarpgroupMma() const {
      return getKind() == KernelKind::wgmma ||
             getKind() == KernelKind::wgmma_ws;
    }
    bool isTensorCore() const { return getKind() != KernelKind::simt; }
  }];
}

#endif // ATTN_TYPES_TD
