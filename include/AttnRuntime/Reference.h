//===- Reference.h - float64 reference of attention on the CPU --*- C++ -*-===//
//
// Computes what an attention means, straight from its definition, in double
// precision: every score, the score_mod and mask_mod region programs
// evaluated (Region.h, not by the compiler under test), one softmax per row.
// attn-run and attn-bundle-run check kernels against it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_REFERENCE_H
#define ATTNRUNTIME_REFERENCE_H

#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Region.h"

#include <functional>
#include <string>
#include <vector>

namespace attn_runtime {

struct ReferenceAttention {
  /// [B, Hq, M, D], [B, Hkv, N, D], [B, Hkv, N, Dv]: the (rounded) inputs the
  /// kernel saw.
  const HostTensor *q = nullptr, *k = nullptr, *v = nullptr;
  double scale = 0;
  bool causal = false;
  /// With causal, a sliding window: q - kv <= window too (0: none).
  int64_t window = 0;
  /// The regions, or null for none.
  const RegionProgram *maskMod = nullptr, *scoreMod = nullptr;
  /// The function's arguments by number, which the regions' tensor.extract
  /// reads (null where not given).
  std::vector<const HostTensor *> arguments;
  /// When f16 or bf16: also compute what a float32 kernel that rounds as
  /// attn's tensor-core kernels do gives (ReferenceResult::emulated).
  ElementKind emulate = ElementKind::F32;
  /// Called with every (b, h, q, kv) and whether it is visible, when set.
  std::function<void(int64_t, int64_t, int64_t, int64_t, bool)> visit;
};

struct ReferenceResult {
  std::vector<double> output;    // [B, Hq, M, Dv]
  std::vector<double> logsumexp; // [B, Hq, M]; -inf for fully masked rows
  /// (b, h, q, kv) elements that no mask removes: the useful work.
  int64_t visiblePairs = 0;
  /// With `emulate`: the output of an FA2-class kernel on these inputs,
  /// exact but for its roundings: scores, their exponentials and row sums
  /// in float32, P rounded to the input type before P V (as attn's and
  /// FlashAttention's tensor-core kernels do), the output stored in the
  /// input type. A kernel's error next to this one's is the peer
  /// criterion's (docs/Benchmarking.md).
  std::vector<double> emulated;
};

/// Fails with the region and the (b, h, q, kv) position where a region's
/// result is undefined. Regions see every position inside the problem,
/// masked or not: kernels evaluate both regions on whole tiles and select
/// afterwards, so a region undefined at a masked position is an error too.
bool referenceAttention(const ReferenceAttention &problem,
                        ReferenceResult &result, std::string &error);

/// dQ, dK and dV of the attention a ReferenceAttention describes, shaped as
/// its Q, K and V.
struct ReferenceGradients {
  std::vector<double> dq, dk, dv;
  /// The gradients of the wrt arguments, in their order and shapes, and
  /// per element the sum of the sizes of the terms summed (the sums cancel:
  /// the gradient of the modified scores sums to 0 per row). A term dS' *
  /// d score_mod / d c, with dS' = P (dP - Delta), is sized by the products
  /// dP and Delta sum: P (sum |dO V| + sum |dO O|) |d score_mod / d c|, the
  /// scale of the rounding in the difference, which cancels too.
  std::vector<std::vector<double>> wrt, wrtMagnitudes;
};

/// The gradients of `p`'s attention for the output gradient `dO`
/// [B, Hq, M, Dv], from their definition (docs/Backward.md) in double:
/// Delta from `o`, the output the backward is given; the score_mod's
/// derivative a central difference of its program in double (independent
/// of the compiler's chain rule). `wrt`: the numbers of the arguments
/// (float tensors the score_mod reads) whose gradients are asked for, each
/// summed over the positions that read an element, the derivative of the
/// score_mod with respect to what it read by a central difference too.
/// Fails as referenceAttention does.
bool referenceAttentionGrad(const ReferenceAttention &p, const HostTensor &o,
                            const HostTensor &dO, ReferenceGradients &grads,
                            std::string &error,
                            const std::vector<int64_t> &wrt = {});

} // namespace attn_runtime

#endif // ATTNRUNTIME_REFERENCE_H
