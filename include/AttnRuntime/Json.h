//===- Json.h - a small JSON reader for kernel bundles ----------*- C++ -*-===//
//
// The runtime builds without LLVM or MLIR (the GPU machine has neither), so
// it reads bundle.json with this reader instead of llvm::json.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_JSON_H
#define ATTNRUNTIME_JSON_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attn_runtime {

struct JsonValue {
  enum class Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object
  } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  /// String: its text; Number: the number as written, so that integers
  /// beyond 2^53 keep their digits.
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  /// The member `key` of an object, or nullptr.
  const JsonValue *get(const std::string &key) const;
  /// The member `key` when it is a string, or nullptr.
  const std::string *getString(const std::string &key) const;
  /// Whether this is a number written as an integer (no fraction or
  /// exponent) that fits in int64; sets `out` to it.
  bool integer(int64_t &out) const;
};

/// The strings "inf", "-inf" and "nan", which bundles write for the
/// numbers JSON lacks: true, with `value` set, when `json` is one of them.
bool nonFiniteNumber(const JsonValue &json, double &value);

/// Arrays and objects nest at most this deep: the reader recurses once per
/// level, and bundles nest seven levels around their launch expressions,
/// which nest up to kMaxExprDepth (Bundle.h) objects deep.
constexpr int kMaxJsonDepth = 128;
/// A document holds at most this many values: each takes about 150 bytes,
/// so a 16 MiB bundle of `[0,0,...]` would otherwise take gigabytes.
constexpr int64_t kMaxJsonValues = 1 << 20;

/// Parses `text`; on failure returns false and sets `error` (with the byte
/// offset of the problem), also when it nests deeper than kMaxJsonDepth or
/// holds more than kMaxJsonValues values.
bool parseJson(const std::string &text, JsonValue &value, std::string &error);

} // namespace attn_runtime

#endif // ATTNRUNTIME_JSON_H
