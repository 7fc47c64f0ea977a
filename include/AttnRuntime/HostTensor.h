//===- HostTensor.h - host buffers that compiled kernels read and write ---===//
//
// A dense row-major buffer of f32, f16, bf16, i32, i64 or index elements,
// its values mirrored as doubles for the reference, and the memref
// descriptor that MLIR's C calling convention passes by pointer.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_HOSTTENSOR_H
#define ATTNRUNTIME_HOSTTENSOR_H

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace attn_runtime {

enum class ElementKind { F32, F16, BF16, I32, I64, Index };

/// Bytes per element.
size_t elementBytes(ElementKind kind);
const char *elementName(ElementKind kind);
bool isFloat(ElementKind kind);

/// IEEE half and bfloat16 conversions, round to nearest even.
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
uint16_t floatToBF16(float value);
float bf16ToFloat(uint16_t bits);

/// `value` rounded to the element type, as a double.
double roundTo(ElementKind kind, double value);

/// The relative Frobenius error an attention output of this element type
/// may have against the float64 reference rounded to it: 1e-5 for f32,
/// 2e-3 for f16 and bf16, except bf16 with `roundedProbabilities` (the
/// GPU's tensor-core kernels, which, as FlashAttention does, round P to the
/// input type before P V): 1.6e-2, as f16's 2e-3 is about four units of
/// its roundoff (2^-11) and that rounding costs up to about one unit of
/// bf16's (2^-8).
double attentionTolerance(ElementKind kind, bool roundedProbabilities);

/// The peer criterion for an f16 or bf16 GPU output: its relative error
/// may be at most 1.25 times `peerError` (a peer's on the same inputs:
/// SDPA flash's, or the float32 kernel rounded as attn's that
/// ReferenceResult::emulated holds) plus half the output type's unit
/// roundoff (2^-12 for f16, 2^-9 for bf16): on small or sharply peaked
/// outputs a few roundings to the output type decide the error, and a
/// peer may round luckier, down to an error of 0. bench/reference.py has
/// the same constants.
double peerBound(ElementKind kind, double peerError);

/// The layout of a ranked memref descriptor with `Rank` dims.
template <int Rank> struct MemRefDescriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

class HostTensor {
public:
  /// Zero-filled. Throws std::length_error for a negative dim or a size
  /// whose element or byte count overflows int64 (check sizes first where
  /// they come from a user).
  HostTensor(ElementKind kind, std::vector<int64_t> shape);

  ElementKind kind() const { return kind_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t numElements() const { return numElements_; }

  /// Element i as a double (after rounding to the element type).
  double get(int64_t i) const;
  /// Stores `value` rounded to the element type (integers: NaN as 0,
  /// out-of-range values saturated).
  void set(int64_t i, double value);
  /// Fills every byte with a NaN pattern (floats) or 0x7f (integers) so that
  /// unwritten elements are caught.
  void poison();

  /// The raw bytes (for copies to and from a device).
  void *data() { return bytes_.data(); }

  /// A pointer to a memref descriptor of this buffer, valid while the tensor
  /// lives; the descriptor's rank is the tensor's.
  void *descriptor();

private:
  ElementKind kind_;
  std::vector<int64_t> shape_;
  int64_t numElements_;
  std::vector<uint8_t> bytes_;
  // Large enough for ranks up to 8.
  MemRefDescriptor<8> descriptor_;
};

/// Fills a tensor that attention regions capture, as the runners do:
/// floats uniform in [0, 1) (not negative, like slopes and biases);
/// integers as sorted ids in runs (documents, sequences); or, given `ids`
/// (sorted ids), where each run of them starts (jagged sequences' starts;
/// ids that do not occur start at the end).
void fillCapture(HostTensor &tensor, std::mt19937_64 &rng,
                 const HostTensor *ids = nullptr);

/// ||out - ref|| / ||ref|| (Frobenius), with the float64 reference rounded
/// to the output's element type first: a kernel cannot store more than the
/// format holds (a bf16 output alone is off by up to 2^-9 relative), so this
/// measures the kernel's own error. Elements whose reference is NaN or
/// infinite (a region can compute them) are left out of the norms and must
/// be NaN, or the same infinity, in `out`. `allFinite`: every other element
/// of `out` is finite and those agree. With `magnitudes`, the norm
/// divided by is theirs instead of the reference's: for a sum that cancels
/// (a captured tensor's gradient), the sum of its terms' sizes per
/// element, what rounding the terms can cost.
double relativeError(const HostTensor &out, const std::vector<double> &ref,
                     bool &allFinite,
                     const std::vector<double> *magnitudes = nullptr);

/// The same for a logsumexp against its float64 reference: rows with
/// nothing unmasked (reference -inf), or a non-finite reference, must
/// match it exactly and are left out of the norms; `allFinite` is false
/// when one does not, or when another row is not finite.
double logsumexpError(const HostTensor &lse, const std::vector<double> &ref,
                      bool &allFinite);

/// The relative error (relativeError) of `emulated`, the peer's output,
/// stored as `out` is, against the float64 `reference`: what peerBound
/// takes.
double peerError(const std::vector<double> &emulated,
                 const std::vector<double> &reference, const HostTensor &out);

} // namespace attn_runtime

#endif // ATTNRUNTIME_HOSTTENSOR_H
