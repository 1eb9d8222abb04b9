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

}  // namespace fact::graph
