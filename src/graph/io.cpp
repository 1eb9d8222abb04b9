#include "graph/io.h"

#include "base/error.h"
#include "base/file_io.h"
#include "graph/json.h"
#include "graph/text.h"

namespace fact::graph {

Graph parse_graph(std::string_view contents, std::string_view source) {
  size_t first = contents.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && contents[first] == '{') {
    try {
      return graph_from_json_string(contents);
    } catch (const Error& e) {
      throw Error(std::string(source) + ": " + e.what());
    }
  }
  return parse_text(contents, source);
}

Graph load_graph(const std::filesystem::path& path) {
  return parse_graph(read_file(path), path.string());
}

std::optional<SymbolicGraph> load_symbolic_graph(const std::filesystem::path& path) {
  const std::string contents = read_file(path);
  size_t first = contents.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || contents[first] != '{') return std::nullopt;
  const auto j = nlohmann::ordered_json::parse(contents, nullptr, false);
  if (j.is_discarded() || !has_symbols(j)) return std::nullopt;  // load_graph says what is wrong
  try {
    return symbolic_from_json(j);
  } catch (const Error& e) {
    throw Error(path.string() + ": " + e.what());
  }
}

}  // namespace fact::graph
