// Readable JSON output: nested objects and arrays indented, small ones kept on one line.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace fact {

/// `j` indented by two spaces per level, except that an object or array whose one-line
/// form fits in `width` columns stays on one line. Ends with a newline. Any JSON reader
/// reads it back to the same value.
std::string pretty_json(const nlohmann::ordered_json& j, size_t width = 100);

}  // namespace fact
