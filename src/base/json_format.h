// Readable JSON output: nested objects and arrays indented, small ones kept on one line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fact {

/// Reads one JSON document as every FACT reader does (graph, plan, realized, manifest,
/// registry import). Stricter than nlohmann::json::parse in two ways: nesting deeper than
/// check_nesting_depth's limit, and an object that holds the same key twice (which
/// nlohmann would resolve silently to the last), are errors. Throws fact::Error naming
/// `what` and the problem: "<what>: duplicate key \"k\" in one object (inside \"p\")",
/// "<what>: nesting deeper than ...", or "<what>: <the parser's message>". Json is
/// nlohmann::json (keys sorted) or nlohmann::ordered_json (keys in file order).
template <typename Json = nlohmann::json>
Json parse_json_document(std::string_view text, std::string_view what);

/// The integer `j[key]`, or `fallback` where `j` is not an object, lacks `key` or holds
/// anything but an integer. For the fields of files a user hands FACT: nlohmann's
/// j.value(key, 0) casts a float such as 2.57e117 to int, which is undefined behaviour.
template <typename Json>
int64_t integer_or(const Json& j, std::string_view key, int64_t fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->template get<int64_t>() : fallback;
}

/// `j` indented by two spaces per level, except that an object or array whose one-line
/// form fits in `width` columns stays on one line. Ends with a newline. Any JSON reader
/// reads it back to the same value.
std::string pretty_json(const nlohmann::ordered_json& j, size_t width = 100);

}  // namespace fact
