#pragma once
// Typed reads of a JSON object's keys for the checkpoint's JSON files. Every fault is a
// FormatError naming the file and the key: a missing key, a wrong type, a fraction where a count
// belongs, or a number outside the range the field holds (nlohmann's get<> would truncate 64.5
// to 64 and wrap 2^64 - 1 to -1 without a word).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tinygpt/io/safetensors.hpp"

namespace tinygpt::train::json_fields {

using nlohmann::json;

// The largest size, count or id a config file may hold: far beyond any model tinygpt can hold.
constexpr int64_t kMaxSize = int64_t{1} << 31;

// Whether `name` is one of `names` (the keys a reader knows, the values a field takes).
template <class Names>
bool one_of(const Names& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

template <class... Args>
[[noreturn]] inline void fail(const std::string& source, fmt::format_string<Args...> what,
                              Args&&... args) {
  throw io::FormatError(fmt::format("{}: {}", source, fmt::format(what, std::forward<Args>(args)...)));
}

// The text of a JSON value for a message, cut short.
inline std::string shown(const json& value) { return excerpt(value.dump()); }

inline json parse(const std::string& text, const std::string& source) {
  try {
    json j = json::parse(text);
    if (!j.is_object()) fail(source, "expected a JSON object, got a JSON {}", j.type_name());
    return j;
  } catch (const json::exception& e) {
    fail(source, "not valid JSON ({})", e.what());
  }
}

inline const json& required(const json& j, const char* key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end()) fail(source, "missing key '{}'", excerpt(key));
  return *it;
}

// An integer in [min, max]; a fraction (64.5, 1e3) or a number beyond the range is refused.
inline int64_t integer(const json& value, const char* key, const std::string& source,
                       int64_t min = std::numeric_limits<int64_t>::min(),
                       int64_t max = std::numeric_limits<int64_t>::max()) {
  if (!value.is_number_integer()) {
    fail(source, "key '{}' must be an integer, got {}", key, shown(value));
  }
  // A parsed file holds every non-negative number as unsigned: it must still meet min.
  const bool in_range =
      value.is_number_unsigned()
          ? value.get<uint64_t>() <= static_cast<uint64_t>(max) &&
                (min <= 0 || value.get<uint64_t>() >= static_cast<uint64_t>(min))
          : value.get<int64_t>() >= min && value.get<int64_t>() <= max;
  if (!in_range) fail(source, "key '{}' must be in [{}, {}], got {}", key, min, max, shown(value));
  return value.get<int64_t>();
}

// An unsigned 64-bit integer (a seed): negative numbers and fractions are refused.
inline uint64_t unsigned_integer(const json& value, const char* key, const std::string& source) {
  if (!value.is_number_unsigned()) {
    fail(source, "key '{}' must be an integer in [0, 2^64), got {}", key, shown(value));
  }
  return value.get<uint64_t>();
}

// A finite number.
inline double number(const json& value, const char* key, const std::string& source) {
  if (!value.is_number() || !std::isfinite(value.get<double>())) {
    fail(source, "key '{}' must be a finite number, got {}", key, shown(value));
  }
  return value.get<double>();
}

inline bool boolean(const json& value, const char* key, const std::string& source) {
  if (!value.is_boolean()) fail(source, "key '{}' must be true or false, got {}", key, shown(value));
  return value.get<bool>();
}

inline std::string string(const json& value, const char* key, const std::string& source) {
  if (!value.is_string()) fail(source, "key '{}' must be a string, got {}", key, shown(value));
  return value.get<std::string>();
}

// A path under `key`: a Linux path is bytes, a JSON string UTF-8. One that is not UTF-8 is stored
// with each invalid byte shown as U+FFFD (for a reader's eyes) and, exactly, as "<key>_hex", its
// bytes in hex, which path() reads back instead.
inline void put_path(json& object, const std::string& key, const std::string& path) {
  try {
    (void)json(path).dump();
    object[key] = path;
  } catch (const json::type_error&) {
    object[key] = json::parse(json(path).dump(-1, ' ', false, json::error_handler_t::replace));
    std::string hex;
    for (const unsigned char byte : path) hex += fmt::format("{:02x}", byte);
    object[key + "_hex"] = hex;
  }
}

inline std::string path(const json& object, const std::string& key, const std::string& source) {
  const auto hex = object.find(key + "_hex");
  if (hex == object.end()) return string(required(object, key.c_str(), source), key.c_str(), source);
  const std::string digits = string(*hex, (key + "_hex").c_str(), source);
  if (digits.empty() || digits.size() % 2 != 0 || digits.find_first_not_of("0123456789abcdef") != std::string::npos) {
    fail(source, "key '{}_hex' is not a path's bytes in hex: '{}'", key, excerpt(digits));
  }
  std::string bytes;
  for (size_t i = 0; i < digits.size(); i += 2) bytes += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  if (bytes.find('\0') != std::string::npos) fail(source, "key '{}_hex' holds a NUL byte, which no path does", key);
  return bytes;
}

}  // namespace tinygpt::train::json_fields
