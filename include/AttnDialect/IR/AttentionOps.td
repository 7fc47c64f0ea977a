//===- AttentionOps.td - attention and its split-kv merge --*- tablegen -*-===//

#ifndef ATTN_ATTENTIONOPS_TD
#define ATTN_ATTENTIONOPS_TD

include "AttnDialect/IR/AttnDialect.td"
include "AttnDialect/IR/AttnTypes.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"
include "mlir/IR/OpBase.td"
include "mlir/Dialect/Linalg/IR/LinalgInterfaces.td"

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
    fully unmasked (FlexAttention's semantics: a full block needs no
    `mask_mod`, a partial one applies it, an unlisted one is skipped), so
    an op with a block mask must have a `mask_mod`. The kernels visit only
    the listed kv-blocks (CPU, SIMT and mma lowerings), and the pipelines
    give an op with a `mask_mod` and no block mask the block mask of its
    mask_mod (`auto-block-masks`). The block mask must be an
    `attn.make_block_mask` or `attn.create_block_mask` of the same function.
    Rows with no unmasked element produce 0 (and a logsumexp of -inf),
    never NaN.

    `kernel` (an `#attn.kernel`) names the GPU kernel that computes the op
    and its tiles; `attn-choose-kernel` sets it, and tiles keep it. The
    verifier refuses a kind that cannot compute the op: the tensor-core
    kinds need f16/bf16 inputs and head dims that are multiples of 16 (and
    no block mask on a tile of a larger op), wgmma head dims of 64, 128 or
    256, and with a block mask the tensor-core tiles must divide its
    blocks.

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
                       UnitAttr:$causal,
                       OptionalAttr<Attn_KernelAttr>:$kernel);
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

    /// Whether `kernel` can compute this op (dtype, head dims, block
    /// mask), with a diagnostic if not.
    LogicalResult verifyKernel(KernelAttr kernel);

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
// attn.attention_grad
//===----------------------------------------------------------------------===//

def Attn_AttentionGradOp : Attn_Op<"attention_grad", [
    AttrSizedOperandSegments, DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<TilingInterface, [
        "getLoopIteratorTypes", "getIterationDomain",
        "getTiledImplementation", "getResultTilePosition"]>,
    Pure]> {
  let summary = "gradients of attn.attention with respect to Q, K, V and "
                "captured tensors";
  let description = [{
    The backward pass of an `attn.attention` with the same scale, causal
    flag and regions: given the forward's inputs Q, K, V, its output O and
    logsumexp L ([B, Hq, M], f32, natural log) and the gradient dO of a loss
    with respect to O, computes dQ, dK and dV. With s = scale * Q.K^T and
    s' = score_mod(s, b, h, q, kv) (masked positions -inf):

    ```
    Delta[i]  = sum_d dO[i, d] * O[i, d]
    P[i, j]   = exp(s'[i, j] - L[i])          (0 where masked or L is -inf)
    dV[j]     = sum_i P[i, j] * dO[i]          (summed over a kv head's
    dP[i, j]  = dO[i] . V[j]                    query heads under GQA)
    dS[i, j]  = P[i, j] * (dP[i, j] - Delta[i]) * d score_mod / d s
    dQ[i]     = scale * sum_j dS[i, j] * K[j]
    dK[j]     = scale * sum_i dS[i, j] * Q[i]
    ```

    Nothing of size M x N is stored: P is recomputed from Q, K and L. Rows
    with no unmasked key (L = -inf) contribute nothing, so their dQ is 0;
    keys no query sees get dK = dV = 0.

    `outs` holds dQ, dK and dV (then the wrt gradients, below), shaped as
    Q, K and V, each f16, bf16 or f32
    (accumulation is f32). The score_mod's derivative with respect to the
    score is taken by the chain rule over its arith and math ops (see
    docs/Backward.md); an op with no derivative on the score's path (a
    cast to an integer, floor, ...) is refused here, naming the op.

    `wrt` lists float tensors the score_mod reads (a learnable bias): for
    each, one more output after dV, f32 and of its shape, receives the
    loss's gradient with respect to it (zero where nothing reads it). Each read `c[idx]` of one adds
    dS'[i, j] * d score_mod / d c[idx] at `idx`, where
    dS'[i, j] = P[i, j] (dP[i, j] - Delta[i]) is the gradient of the
    modified score; the sums run in a fixed order, so that two runs agree
    bit for bit.

    A `block_mask` has FlexAttention's semantics, as for `attn.attention`:
    a full block needs no `mask_mod`, a partial one applies it, an
    unlisted one contributes nothing; so an op with a block mask must have
    a `mask_mod`. The GPU kernels visit only the listed blocks: the dQ
    kernel walks the kv-side lists, the dK/dV kernel the q-side ones
    (which an `attn.create_block_mask` computes and an
    `attn.make_block_mask` carries when it is given them). Without a block
    mask they derive one of their tiles from the `mask_mod`. The CPU loops
    apply the block mask element by element. As in the forward's kernels,
    a full block that the problem's end cuts or the causal diagonal
    crosses is masked with the `mask_mod` too, so full lists must name
    blocks the `mask_mod` keeps whole (as `attn.create_block_mask`'s do).

    Tiling (`TilingInterface`) runs over (B, Hkv), both parallel: a tile
    holds whole kv heads with all of their query heads, because dK and dV
    sum over a group's query heads. It slices Q, O, dO, the logsumexp and
    dQ by query heads (Hq / Hkv per kv head) and K, V, dK and dV by kv
    heads; M and N are not split. `offsets(%b0, %h0)` marks such a tile:
    its operands start at that batch and query head of the whole problem,
    and its regions and block mask see whole-problem positions
    (b0 + b, h0 + h). An op with `wrt` tensors is not tiled (every tile
    would add to the whole of each gradient), nor one with a `kernel`
    (the GPU kernels compute whole problems).

    The decomposition (`AggregatedOpInterface`, which the Transforms
    library attaches; `attn-decompose` builds the same loops with its own
    kv tile) computes Delta, then per batch and query head one loop over
    kv tiles that recomputes P and feeds dQ, dK and dV from it: on a CPU
    the dK/dV and dQ loops share one computation of P and dS.

    On the GPU, `kernel` (set by `attn-choose-kernel`) is an `mma_sync`
    or (sm_90a) `wgmma` kernel of one band: a block of `q_tile / 16` warps
    computes dQ (and Delta) for `q_tile` query rows, stepping over the keys
    `kv_tile` at a time, and a block of `kv_tile / 16` warps computes dK
    and dV for `kv_tile` keys, stepping over the rows of every query head
    of its kv head `q_tile` at a time; `stages` buffers the streamed tiles.
    It needs f16 or bf16 inputs, head dims that are multiples of 16 up to
    128 (for `wgmma` 16, 32, 64 or 128, with tiles of 64 or 128 rows and
    two stages), no `wrt` tensors, and tiles that divide the block mask's
    blocks.

    ```mlir
    %dq, %dk, %dv = attn.attention_grad
        ins(%q, %k, %v, %o, %do, %lse : tensor<2x8x?x64xf16>,
            tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x8x?x64xf16>,
            tensor<2x8x?x64xf16>, tensor<2x8x?xf32>)
        outs(%dq0, %dk0, %dv0 : tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>,
             tensor<2x2x?x64xf32>) {causal}
        -> tensor<2x8x?x64xf32>, tensor<2x2x?x64xf32>, tensor<2x2x?x64xf32>
    ```

    With ALiBi's per-head slopes learnt:

    ```mlir
    %dq, %dk, %dv, %dslopes = attn.attention_grad
        ins(%q, %k, %v, %o, %do, %lse : ...) wrt(%slopes : tensor<8xf32>)
        outs(%dq0, %dk0, %dv0, %ds0 : ..., tensor<8xf32>)
        score_mod {
        ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
          %slope = tensor.extract %slopes[%h] : tensor<8xf32>
          ...
        } -> ..., tensor<8xf32>
    ```
  }];

  let arguments = (ins AnyRankedTensor:$query,
                       AnyRankedTensor:$key,
                       AnyRankedTensor:$value,
                       AnyRankedTensor:$output,
                       AnyRankedTensor:$grad_output,
                       AnyRankedTensor:$logsumexp,
                       Optional<Attn_BlockMaskType>:$block_mask,
                       Variadic<AnyRankedTensor>:$wrt,
                       Variadic<AnyRankedTensor>:$outputs,
                       Variadic<Index>:$offsets,
                       OptionalAttr<F32Attr>:$scale,
                       UnitAttr:$causal,
                       OptionalAttr<Attn_KernelAttr>:$kernel);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region MaxSizedRegion<1>:$score_mod,
                        MaxSizedRegion<1>:$mask_mod);

  let assemblyFormat = [{
    `ins` `(` $query `,` $key `,` $value `,` $output `,` $grad_output `,`
              $logsumexp `:` type($query) `,` type($key) `,` type($value) `,`
              type($output) `,` type($grad_output) `,` type($logsumexp) `)`
    (`wrt` `(` $wrt^ `:` type($wrt) `)`)?
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
    /// The tile's whole-problem (batch, query head) position: `offsets`, or
    /// zeros.
    SmallVector<OpFoldResult> getMixedOffsets();
    int64_t getHeadDim() { return getQuery().getType().getShape()[3]; }
    int64_t getValueHeadDim() { return getValue().getType().getShape()[3]; }
    bool hasScoreMod() { return !getScoreMod().empty(); }
    bool hasMaskMod() { return !getMaskMod().empty(); }
    MutableOperandRange getDpsInitsMutable() { return getOutputsMutable(); }
    /// The largest head dim the GPU backward kernels serve, and the widest
    /// columns of dQ, dK or dV one block holds: a warp keeps its 16 rows of
    /// them in registers, so wider head dims are split into column slices,
    /// each a block that recomputes the scores over the whole head dims.
    static constexpr int64_t kMaxGradHeadDim = 256;
    static constexpr int64_t kMaxGradSliceWidth = 128;
    /// The column slices of the GPU backward's blocks for head dims `d` and
    /// `dv`: the fewest whose widths are at most kMaxGradSliceWidth and
    /// multiples of 16, or, where none are, the fewest at most that wide.
    static int64_t gradColumnSlices(int64_t d, int64_t dv);
    /// Whether the wgmma backward kernel serves these head dims: it reads
    /// whole swizzled tiles (rows of 32, 64 or 128 bytes) and takes no
    /// column slices.
    bool hasWarpgroupGradHeadDims();
    /// Whether `kernel` can compute this op, with a diagnostic if not.
    LogicalResult verifyKernel(KernelAttr kernel);
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// attn.merge_splits
//===----------------------------------------------------------------------===//

def Attn_MergeSplitsOp : Attn_Op<"merge_splits", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>,
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

#endif // ATTN_ATTENTIONOPS_TD
