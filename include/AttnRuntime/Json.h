//===- Json.h - a small JSON reader for kernel bundles ----------*- C++ -*-===//
//
// The runtime builds without LLVM or MLIR (the GPU machine has neither), so
// it reads bundle.json with this reader instead of llvm::json.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_JSON_H
#define ATTNRUNTIME_JSON_H

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
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  /// The member `key` of an object, or nullptr.
  const JsonValue *get(const std::string &key) const;
};

/// Parses `text`; on failure returns false and sets `error` (with the byte
/// offset of the problem).
bool parseJson(const std::string &text, JsonValue &value, std::string &error);

} // namespace attn_runtime

#endif // ATTNRUNTIME_JSON_H
