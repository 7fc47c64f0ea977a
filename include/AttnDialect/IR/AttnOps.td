//===- AttnOps.td - attn dialect operations ----------------*- tablegen -*-===//

#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "AttnDialect/IR/AttnDialect.td"
include "AttnDialect/IR/AttnTypes.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// attn.attention
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [
    AttrSizedOperandSegments,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<TilingInterface, [
        "getLoopIteratorTypes", "getIterationDomain",
        "getTiledImplementation", "getResultTilePosition"]>,
    DeclareOpInterfaceMethods<PartialReductionOpInterface, [
        "generateInitialTensorForPartialReduction", "tileToPartialReduction",
        "mergeReductions", "getPartialResultTilePosition"]>,
    Pure]> {
  let summary = "scaled dot-product attention with FlexAttention hooks";
  let description = [{
    Computes, for every batch b, query head h, query row q:

    ```
    s[kv]  = score_mod(scale * dot(Q[b, h, q, :], K[b, h / G, kv, :]), b, h, q, kv)
    s[kv]  = -inf where mask_mod(b, h, q, kv) is false, or causal and kv > q
    O[b, h, q, :] = sum_kv softmax(s)[kv] * V[b, h / G, kv, :]
    ```

    with G = Hq / Hkv query heads sharing each kv head (GQA; MQA when Hkv is
    1). Shapes: Q [B, Hq, M, D], K [B, Hkv, N, D], V [B, Hkv, N, Dv], output
    [B, Hq, M, Dv]. B, Hq, Hkv, M and N may be dynamic; D and Dv are static,
    16 to 256 and multiples of 8. Q, K and V share one element type (f16,
    bf16 or f32); the output may be any of these; arithmetic is f32.

    The op is in destination-passing style: `outs` holds the output and,
    optionally, a [B, Hq, M] f32 tensor that receives the natural-log
    logsumexp of each row (what a backward pass needs).

    `scale` defaults to 1/sqrt(D). `causal` keeps kv <= q (top-left aligned,
    as PyTorch's `is_causal` and FlexAttention's causal mask_mod).

    Regions (each optional, single block, terminated by `attn.yield`):
    - `score_mod(%score: f32, %b: index, %h: index, %q: index, %kv: index)`
      yields the f32 score to use; it sees only unmasked elements.
    - `mask_mod(%b: index, %h: index, %q: index, %kv: index)` yields an `i1`,
      true to keep the element.
    Regions may use values defined above the op (document ids, ALiBi slopes,
    bias tables, offsets); kernels receive them as arguments. They must be
    free of side effects, because tiling evaluates them in any order and any
    number of times.

    `offsets(%b0, %h0, %q0, %kv0)` marks an op that computes one tile of a
    larger attention (what tiling produces): its operands are slices that
    start at those batch, head, query and key positions of the whole
    problem. Region arguments, the causal mask and the block mask all see
    whole-problem positions (b0 + b, h0 + h, q0 + q, kv0 + kv), so tiling
    never changes what a region computes.

    Tiling (`TilingInterface`) runs over (B, Hq, M, Dv, N): the first four
    parallel, the kv length N a reduction. Dv is not split, and heads are
    split one at a time (or into groups that share a kv head), so each
    tile's K/V slice is the kv head its query heads read. N is split only
    through `PartialReductionOpInterface` (`tile_reduction_using_forall`,
    `tile_reduction_using_for`): each kv split computes its own normalized
    f32 output and logsumexp, and `attn.merge_splits` combines them
    (FlashDecoding). Tiling N as a plain loop would be wrong (attention
    overwrites its output rather than accumulating) and is refused.

    A `block_mask` lists, per q-block, which kv-blocks are partially and
    fully unmasked; kernels skip the others and evaluate `mask_mod` only on
    partial blocks, so an op with a block mask must have a `mask_mod`. Rows
    with no unmasked element produce 0 (and a logsumexp of -inf), never NaN.

    Example:

    ```mlir
    %o = attn.attention ins(%q, %k, %v : tensor<2x8x?x64xf16>,
                            tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>)
                        outs(%init : tensor<2x8x?x64xf16>) {causal}
                        -> tensor<2x8x?x64xf16>
    ```
  }];

  let arguments = (ins AnyRankedTensor:$query,
                       AnyRankedTensor:$key,
                       AnyRankedTensor:$value,
                       Optional<Attn_BlockMaskType>:$block_mask,
                       Variadic<AnyRankedTensor>:$outputs,
                       Variadic<Index>:$offsets,
                       OptionalAttr<F32Attr>:$scale,
                       UnitAttr:$causal);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region MaxSizedRegion<1>:$score_mod,
                        MaxSizedRegion<1>:$mask_mod);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `:` type($query) `,` type($key) `,`
              type($value) `)`
    `outs` `(` $outputs `:` type($outputs) `)`
    (`block_mask` `(` $block_mask^ `:` type($block_mask) `)`)?
    (`offsets` `(` $offsets^ `)`)?
    attr-dict
    (`score_mod` $score_mod^)?
    (`mask_mod` $mask_mod^)?
    `->` type($results)
  }];

  let extraClassDeclaration = [{
    /// The scale applied to Q.K^T: the attribute, or 1/sqrt(D).
    float getScaleValue();
    /// Static head dimensions of Q/K and of V.
    int64_t getHeadDim() { return getQueryType().getShape()[3]; }
    int64_t getValueHeadDim() { return getValueType().getShape()[3]; }

    RankedTensorType getQueryType() { return getQuery().getType(); }
    RankedTensorType getKeyType() { return getKey().getType(); }
    RankedTensorType getValueType() { return getValue().getType(); }
    RankedTensorType getOutputType() {
      return ::llvm::cast<RankedTensorType>(getOutputs()[0].getType());
    }

    /// The logsumexp init and result, when asked for.
    Value getLogsumexpInit() {
      return getOutputs().size() > 1 ? getOutputs()[1] : Value();
    }
    Value getLogsumexp() {
      return getResults().size() > 1 ? getResults()[1] : Value();
    }

    /// The whole-problem position (b, h, q, kv) of this op's tile; constant
    /// zeros when the op is not a tile.
    SmallVector<OpFoldResult> getMixedOffsets();

    bool hasScoreMod() { return !getScoreMod().empty(); }
    bool hasMaskMod() { return !getMaskMod().empty(); }

    MutableOperandRange getDpsInitsMutable() { return getOutputsMutable(); }
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  // Folds tensor.cast operands that add static information (what tiling a
  // static problem leaves behind) without upstream's clone-based folder,
  // which cannot clone an op whose optional regions are empty.
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// attn.merge_splits
//===----------------------------------------------------------------------===//

def Attn_MergeSplitsOp : Attn_Op<"merge_splits", [
    DestinationStyleOpInterface,
    Pure]> {
  let summary = "combines attention computed on disjoint kv splits";
  let description = [{
    The merge step of split-kv attention (FlashDecoding). `partial_out`
    [B, H, M, Dv, S] and `partial_lse` [B, H, M, S] (f32) hold, for each of
    S kv splits, the attention output normalized over that split and the
    split's natural-log logsumexp. The result is the attention over all
    splits:

    ```
    lse[b, h, m]     = log(sum_s exp(partial_lse[b, h, m, s]))
    out[b, h, m, :]  = sum_s exp(partial_lse[b, h, m, s] - lse[b, h, m])
                             * partial_out[b, h, m, :, s]
    ```

    A split whose logsumexp is -inf saw no unmasked key and contributes
    nothing; a row where every split is -inf gives 0 and a logsumexp of
    -inf, never NaN. `outs` holds the output (f16, bf16 or f32) and,
    optionally, the [B, H, M] f32 logsumexp. `PartialReductionOpInterface`
    on `attn.attention` produces this op; `attn-decompose-merge-splits`
    lowers it to linalg.

    ```mlir
    %o = attn.merge_splits ins(%po, %pl : tensor<1x8x1x64x4xf32>, tensor<1x8x1x4xf32>)
                           outs(%init : tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$partial_out,
                       RankedTensorOf<[F32]>:$partial_lse,
                       Variadic<AnyRankedTensor>:$outputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    `ins` `(` $partial_out `,` $partial_lse `:` type($partial_out) `,`
              type($partial_lse) `)`
    `outs` `(` $outputs `:` type($outputs) `)`
    attr-dict `->` type($results)
  }];
  let extraClassDeclaration = [{
    /// The logsumexp init and result, when asked for.
    Value getLogsumexpInit() {
      return getOutputs().size() > 1 ? getOutputs()[1] : Value();
    }
    MutableOperandRange getDpsInitsMutable() { return getOutputsMutable(); }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.online_softmax
//===----------------------------------------------------------------------===//

def Attn_OnlineSoftmaxOp : Attn_Op<"online_softmax", [
    Pure,
    AllTypesMatch<["scores", "probs"]>,
    AllTypesMatch<["max", "sum", "new_max", "new_sum", "correction"]>]> {
  let summary = "one step of the online-normalizer softmax";
  let description = [{
    Folds a tile of scores S [..., R, C] into running row statistics
    `max` and `sum` [..., R] (all f32), the step that lets attention and
    long-row softmax make one pass over their input:

    ```
    new_max    = max(max, rowmax(scale * S))
    probs      = exp(scale * S - new_max)
    correction = exp(max - new_max)
    new_sum    = sum * correction + rowsum(probs)
    ```

    A running output accumulator is rescaled by `correction` before `probs`
    is accumulated into it. `-inf` scores contribute 0; a row whose scores
    and running max are all `-inf` keeps max -inf, sum 0 and correction 1,
    without NaN. The lowering evaluates the exponentials as
    exp2((scale * S - new_max) * log2(e)): the row's max gives exactly 1,
    and the sum adds the very probs returned. Start a row with max = -inf
    and sum = 0.

    Example:

    ```mlir
    %p, %m1, %l1, %c = attn.online_softmax %s, %m0, %l0 {scale = 0.125 : f32}
        : tensor<64x128xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$scores,
                       RankedTensorOf<[F32]>:$max,
                       RankedTensorOf<[F32]>:$sum,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale);
  let results = (outs RankedTensorOf<[F32]>:$probs,
                      RankedTensorOf<[F32]>:$new_max,
                      RankedTensorOf<[F32]>:$new_sum,
                      RankedTensorOf<[F32]>:$correction);
  let assemblyFormat = [{
    $scores `,` $max `,` $sum attr-dict `:` type($scores) `,` type($max)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.softmax
//===----------------------------------------------------------------------===//

def Attn_SoftmaxOp : Attn_Op<"softmax", [
    DestinationStyleOpInterface,
    Pure]> {
  let summary = "numerically stable softmax over the last dimension";
  let description = [{
    `out[..., j] = exp(x[..., j] - max(x[...])) / sum_k exp(x[..., k] - max)`
    over the last dimension of a ranked tensor of any length, f16, bf16 or
    f32, computed in f32. -inf entries give 0; a row that is all -inf gives
    0 everywhere, not NaN. The lowering picks the strategy from the row
    length: one read of a row held on chip, or the two-pass online form
    built on `attn.online_softmax` when a row does not fit.

    ```mlir
    %y = attn.softmax ins(%x : tensor<?x4096xf16>) outs(%init : tensor<?x4096xf16>)
        -> tensor<?x4096xf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$output);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    attr-dict `->` type($result)
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getOutputMutable(); }
  }];
  let hasVerifier = 1;
}

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
    `heads` to build one mask shared by every batch or head.

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
  let hasRegionVerifier = 1;
}

def Attn_MakeBlockMaskOp : Attn_Op<"make_block_mask", [
    Pure, AttrSizedOperandSegments]> {
  let summary = "a block mask from precomputed kv-side tensors";
  let description = [{
    Wraps block-sparse metadata computed elsewhere (for instance by
    PyTorch's `create_block_mask`) as an `!attn.block_mask`: the partial
    kv-block lists and, optionally, the full ones. Counts are
    i32 [B, H, QB], indices i32 [B, H, QB, KB]. The q-side transposes are
    derived when a lowering needs them.

    ```mlir
    %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
        : !attn.block_mask<q_block = 128, kv_block = 128>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$kv_num_blocks,
                       AnyRankedTensor:$kv_indices,
                       Optional<AnyRankedTensor>:$full_kv_num_blocks,
                       Optional<AnyRankedTensor>:$full_kv_indices);
  let results = (outs Attn_BlockMaskType:$result);
  let assemblyFormat = [{
    `kv` `(` $kv_num_blocks `,` $kv_indices `:` type($kv_num_blocks) `,`
              type($kv_indices) `)`
    (`full_kv` `(` $full_kv_num_blocks^ `,` $full_kv_indices `:`
                   type($full_kv_num_blocks) `,` type($full_kv_indices) `)`)?
    attr-dict `:` type($result)
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

//===----------------------------------------------------------------------===//
// Host-side values the runtime supplies
//===----------------------------------------------------------------------===//

def Attn_WorkspaceOp : Attn_Op<"workspace", [
    MemoryEffects<[MemAlloc<DefaultResource>]>]> {
  let summary = "a zeroed device buffer that kernels leave zeroed";
  let description = [{
    Host code: `words` 32-bit words of device memory that the runtime
    allocates once (zeroed) and passes to every launch that takes it; a
    kernel may use it for counters and partial results shared between its
    blocks but must leave it zeroed when it ends, so the next launch needs
    no memset. Launches on one stream share the runtime's workspace, so two
    of them must not run at the same time. The kernel bundle names it
    `workspace` and records `workspace_bytes` per launch.

    ```mlir
    %ws = attn.workspace %words : memref<?xi32>
    ```
  }];
  let arguments = (ins Index:$words);
  let results = (outs MemRefRankOf<[I32], [1]>:$buffer);
  let assemblyFormat = "$words attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Attn_MultiprocessorCountOp : Attn_Op<"multiprocessor_count", [Pure]> {
  let summary = "the number of streaming multiprocessors of the GPU";
  let description = [{
    Host code: how many SMs the GPU that runs the function has, supplied by
    the runtime at launch (`sm_count` in a kernel bundle). Lowerings use it
    to bound how many blocks must be resident at once, for instance blocks
    that wait on each other through an `attn.workspace`: every GPU keeps at
    least one block of a launchable kernel on each SM.

    ```mlir
    %sms = attn.multiprocessor_count : index
    ```
  }];
  let results = (outs Index:$count);
  let assemblyFormat = "attr-dict `:` type($count)";
}

//===----------------------------------------------------------------------===//
// attn.yield
//===----------------------------------------------------------------------===//

def Attn_YieldOp : Attn_Op<"yield", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["AttentionOp", "CreateBlockMaskOp"]>]> {
  let summary = "yields the value of a score_mod or mask_mod region";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing to build */ }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // ATTN_OPS_TD
