//===- Json.cpp - a small JSON reader -------------------------------------===//

#include "AttnRuntime/Json.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

using namespace attn_runtime;

const JsonValue *JsonValue::get(const std::string &key) const {
  auto it = object.find(key);
  return kind == Kind::Object && it != object.end() ? &it->second : nullptr;
}

const std::string *JsonValue::getString(const std::string &key) const {
  const JsonValue *member = get(key);
  return member && member->kind == Kind::String ? &member->string : nullptr;
}

bool JsonValue::integer(int64_t &out) const {
  if (kind != Kind::Number || string.empty() ||
      string.find_first_of(".eE") != std::string::npos)
    return false;
  errno = 0;
  long long value = std::strtoll(string.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return false;
  out = value;
  return true;
}

namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : text(text) {}

  bool parse(JsonValue &value, std::string &error) {
    if (!parseValue(value, 0) || (skipSpace(), pos != text.size())) {
      error =
          limit.empty() ? "invalid JSON at byte " + std::to_string(pos) : limit;
      return false;
    }
    return true;
  }

private:
  void skipSpace() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  bool parseString(std::string &out) {
    if (!consume('"'))
      return false;
    while (pos < text.size() && text[pos] != '"') {
      char c = text[pos++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= text.size())
        return false;
      char e = text[pos++];
      switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        // Bundles are ASCII; keep code points below 0x80, reject the rest.
        if (pos + 4 > text.size())
          return false;
        int code = 0;
        for (int i = 0; i < 4; ++i) {
          char h = text[pos++];
          if (!std::isxdigit(static_cast<unsigned char>(h)))
            return false;
          code = code * 16 + (std::isdigit(static_cast<unsigned char>(h))
                                  ? h - '0'
                                  : std::tolower(h) - 'a' + 10);
        }
        if (code >= 0x80)
          return false;
        out += static_cast<char>(code);
        break;
      }
      default:
        out += e; // \" \\ \/
      }
    }
    return consume('"');
  }

  /// Sets `limit` (and fails) when the value at `pos`, `depth` arrays and
  /// objects deep, is past a limit.
  bool withinLimits(int depth) {
    char c = text[pos];
    if ((c == '[' || c == '{') && depth >= kMaxJsonDepth)
      limit = "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
              " levels at byte " + std::to_string(pos);
    else if (++values > kMaxJsonValues)
      limit = "JSON has more than " + std::to_string(kMaxJsonValues) +
              " values (at byte " + std::to_string(pos) + ")";
    return limit.empty();
  }

  /// `depth`: the arrays and objects around the value.
  bool parseValue(JsonValue &value, int depth) {
    // A repeated key parses into the same value again: start afresh.
    value = JsonValue();
    skipSpace();
    if (pos >= text.size() || !withinLimits(depth))
      return false;
    char c = text[pos];
    if (c == '{') {
      ++pos;
      value.kind = JsonValue::Kind::Object;
      if (consume('}'))
        return true;
      do {
        std::string key;
        skipSpace();
        if (!parseString(key) || !consume(':') ||
            !parseValue(value.object[key], depth + 1))
          return false;
      } while (consume(','));
      return consume('}');
    }
    if (c == '[') {
      ++pos;
      value.kind = JsonValue::Kind::Array;
      if (consume(']'))
        return true;
      do {
        value.array.emplace_back();
        if (!parseValue(value.array.back(), depth + 1))
          return false;
      } while (consume(','));
      return consume(']');
    }
    if (c == '"') {
      value.kind = JsonValue::Kind::String;
      return parseString(value.string);
    }
    if (literal("true")) {
      value.kind = JsonValue::Kind::Bool;
      value.boolean = true;
      return true;
    }
    if (literal("false")) {
      value.kind = JsonValue::Kind::Bool;
      return true;
    }
    if (literal("null"))
      return true;
    return parseNumber(value);
  }

  /// JSON's grammar only: strtod alone would take "inf", "nan" and hex.
  bool parseNumber(JsonValue &value) {
    size_t start = pos;
    auto digits = [&] {
      size_t from = pos;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos])))
        ++pos;
      return pos > from;
    };
    if (pos < text.size() && text[pos] == '-')
      ++pos;
    if (pos < text.size() && text[pos] == '0')
      ++pos;
    else if (!digits())
      return false;
    if (pos < text.size() && text[pos] == '.' && (++pos, !digits()))
      return false;
    if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-'))
        ++pos;
      if (!digits())
        return false;
    }
    value.kind = JsonValue::Kind::Number;
    value.string = text.substr(start, pos - start);
    value.number = std::strtod(value.string.c_str(), nullptr);
    return true;
  }

  const std::string &text;
  size_t pos = 0;
  int64_t values = 0;
  /// Why parsing stopped, when a limit stopped it.
  std::string limit;
};

} // namespace

bool attn_runtime::parseJson(const std::string &text, JsonValue &value,
                             std::string &error) {
  return Parser(text).parse(value, error);
}

bool attn_runtime::nonFiniteNumber(const JsonValue &json, double &value) {
  if (json.kind != JsonValue::Kind::String)
    return false;
  if (json.string == "nan") {
    value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (json.string != "inf" && json.string != "-inf")
    return false;
  value = json.string[0] == '-' ? -std::numeric_limits<double>::infinity()
                                : std::numeric_limits<double>::infinity();
  return true;
}
