//===- HostTensor.cpp -----------------------------------------------------===//

#include "AttnRuntime/HostTensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

using namespace attn_runtime;

size_t attn_runtime::elementBytes(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  case ElementKind::F32:
  case ElementKind::I32:
    return 4;
  case ElementKind::I64:
  case ElementKind::Index:
    return 8;
  }
  return 0;
}

const char *attn_runtime::elementName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "f32";
  case ElementKind::F16:
    return "f16";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I64:
    return "i64";
  case ElementKind::Index:
    return "index";
  }
  return "?";
}

bool attn_runtime::isFloat(ElementKind kind) {
  return kind == ElementKind::F32 || kind == ElementKind::F16 ||
         kind == ElementKind::BF16;
}

uint16_t attn_runtime::floatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exponent = (x >> 23) & 0xff;
  uint32_t mantissa = x & 0x7fffff;
  if (exponent == 0xff) // inf or NaN
    return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  int32_t e = static_cast<int32_t>(exponent) - 127 + 15;
  if (e >= 0x1f)
    return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10)
      return sign;
    mantissa |= 0x800000;
    uint32_t shift = 14 - e;
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1)))
      ++half;
    return sign | half;
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half; // may carry into the exponent, which is right
  return sign | half;
}

float attn_runtime::halfToFloat(uint16_t bits) {
  uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t x;
  if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else {
      // Subnormal: normalize.
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while (!(mantissa & 0x400));
      x = sign | ((127 - 15 - e) << 23) | ((mantissa & 0x3ff) << 13);
    }
  } else if (exponent == 0x1f) {
    x = sign | 0x7f800000 | (mantissa << 13);
  } else {
    x = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t attn_runtime::floatToBF16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if (std::isnan(value))
    return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float attn_runtime::bf16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

double attn_runtime::roundTo(ElementKind kind, double value) {
  HostTensor scalar(kind, {1});
  scalar.set(0, value);
  return scalar.get(0);
}

double attn_runtime::attentionTolerance(ElementKind kind,
                                        bool roundedProbabilities) {
  if (kind == ElementKind::BF16 && roundedProbabilities)
    return 1.6e-2;
  return kind == ElementKind::F16 || kind == ElementKind::BF16 ? 2e-3 : 1e-5;
}

double attn_runtime::peerBound(ElementKind kind, double peerError) {
  double halfRoundoff = kind == ElementKind::BF16  ? 0x1p-9
                        : kind == ElementKind::F16 ? 0x1p-12
                                                   : 0x1p-25;
  return 1.25 * peerError + halfRoundoff;
}

HostTensor::HostTensor(ElementKind kind, std::vector<int64_t> shape)
    : kind_(kind), shape_(std::move(shape)), numElements_(1) {
  // Callers check sizes against the machine first (attn-run,
  // attn-bundle-run); a shape that still overflows is a thrown error, not
  // a short buffer.
  int64_t bytes = static_cast<int64_t>(elementBytes(kind_));
  for (int64_t dim : shape_)
    if (dim < 0 || __builtin_mul_overflow(numElements_, dim, &numElements_))
      throw std::length_error("attn: a host tensor's shape is negative or "
                              "its element count overflows");
  if (__builtin_mul_overflow(numElements_, bytes, &bytes))
    throw std::length_error("attn: a host tensor's byte count overflows");
  bytes_.assign(static_cast<size_t>(bytes), 0);
}

/// `value` as an integer of [lo, hi]: NaN is 0 and the rest saturates, so
/// no conversion is undefined.
template <typename Int> static Int saturate(double value) {
  if (std::isnan(value))
    return 0;
  if (value <= static_cast<double>(std::numeric_limits<Int>::min()))
    return std::numeric_limits<Int>::min();
  if (value >= static_cast<double>(std::numeric_limits<Int>::max()))
    return std::numeric_limits<Int>::max();
  return static_cast<Int>(value);
}

double HostTensor::get(int64_t i) const {
  const uint8_t *p = bytes_.data() + i * elementBytes(kind_);
  switch (kind_) {
  case ElementKind::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case ElementKind::F16:
  case ElementKind::BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return kind_ == ElementKind::F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
  case ElementKind::I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case ElementKind::I64:
  case ElementKind::Index: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  }
  return 0;
}

void HostTensor::set(int64_t i, double value) {
  uint8_t *p = bytes_.data() + i * elementBytes(kind_);
  switch (kind_) {
  case ElementKind::F32: {
    float f = static_cast<float>(value);
    std::memcpy(p, &f, 4);
    return;
  }
  case ElementKind::F16:
  case ElementKind::BF16: {
    float f = static_cast<float>(value);
    uint16_t h = kind_ == ElementKind::F16 ? floatToHalf(f) : floatToBF16(f);
    std::memcpy(p, &h, 2);
    return;
  }
  case ElementKind::I32: {
    int32_t v = saturate<int32_t>(value);
    std::memcpy(p, &v, 4);
    return;
  }
  case ElementKind::I64:
  case ElementKind::Index: {
    int64_t v = saturate<int64_t>(value);
    std::memcpy(p, &v, 8);
    return;
  }
  }
}

void HostTensor::poison() {
  if (!isFloat(kind_)) {
    std::memset(bytes_.data(), 0x7f, bytes_.size());
    return;
  }
  for (int64_t i = 0; i < numElements_; ++i)
    set(i, std::numeric_limits<double>::quiet_NaN());
}

void attn_runtime::fillCapture(HostTensor &tensor, std::mt19937_64 &rng,
                               const HostTensor *ids) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  int64_t count = tensor.numElements();
  if (isFloat(tensor.kind())) {
    for (int64_t e = 0; e < count; ++e)
      tensor.set(e, 0.5 + 0.5 * uniform(rng));
  } else if (ids) {
    int64_t end = ids->numElements(), next = 0;
    for (int64_t e = 0; e < count; ++e) {
      while (next < end && ids->get(next) < e)
        ++next;
      tensor.set(e, static_cast<double>(next));
    }
  } else {
    int64_t id = 0;
    for (int64_t e = 0; e < count; ++e) {
      if (e > 0 && rng() % 37 == 0)
        ++id;
      tensor.set(e, static_cast<double>(id));
    }
  }
}

void *HostTensor::descriptor() {
  descriptor_.allocated = bytes_.data();
  descriptor_.aligned = bytes_.data();
  descriptor_.offset = 0;
  int rank = static_cast<int>(shape_.size());
  int64_t stride = 1;
  // A memref descriptor of rank r holds sizes[r] then strides[r]: lay them
  // out contiguously after the offset, as the rank-r struct would.
  int64_t *sizes = descriptor_.sizes;
  int64_t *strides = sizes + rank;
  for (int d = rank - 1; d >= 0; --d) {
    sizes[d] = shape_[d];
    strides[d] = stride;
    stride *= shape_[d];
  }
  return &descriptor_;
}

double attn_runtime::relativeError(const HostTensor &out,
                                   const std::vector<double> &ref,
                                   bool &allFinite,
                                   const std::vector<double> *magnitudes) {
  double diff = 0, norm = 0;
  allFinite = true;
  for (int64_t i = 0; i < out.numElements(); ++i) {
    double o = out.get(i), r = roundTo(out.kind(), ref[i]);
    if (!std::isfinite(r)) {
      // A region may compute NaN or infinity; the kernel must agree.
      allFinite &= std::isnan(r) ? std::isnan(o) : o == r;
      continue;
    }
    if (!std::isfinite(o))
      allFinite = false;
    diff += (o - r) * (o - r);
    double m = magnitudes ? (*magnitudes)[i] : r;
    norm += m * m;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

double attn_runtime::logsumexpError(const HostTensor &lse,
                                    const std::vector<double> &ref,
                                    bool &allFinite) {
  double diff = 0, norm = 0;
  allFinite = true;
  for (int64_t e = 0; e < lse.numElements(); ++e) {
    double got = lse.get(e), want = ref[e];
    if (!std::isfinite(want)) {
      allFinite &= std::isnan(want) ? std::isnan(got) : got == want;
      continue;
    }
    allFinite &= std::isfinite(got);
    diff += (got - want) * (got - want);
    norm += want * want;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

double attn_runtime::peerError(const std::vector<double> &emulated,
                               const std::vector<double> &reference,
                               const HostTensor &out) {
  HostTensor peer(out.kind(), out.shape());
  for (int64_t e = 0; e < peer.numElements(); ++e)
    peer.set(e, emulated[e]);
  bool finite;
  return relativeError(peer, reference, finite);
}
