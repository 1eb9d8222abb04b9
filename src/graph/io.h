// Loading a graph file in either form (JSON or canonical text).
#pragma once

#include <filesystem>
#include <string_view>

#include <optional>

#include "graph/graph.h"
#include "graph/symbolic.h"

namespace fact::graph {

/// Parses `contents` as JSON when its first non-space character is '{', else as the
/// canonical text form. `source` names the input in error messages.
Graph parse_graph(std::string_view contents, std::string_view source);

/// Reads and parses a graph file (JSON or text, see parse_graph). Throws fact::Error.
Graph load_graph(const std::filesystem::path& path);

/// A graph file that is JSON with symbols (version 2) as a SymbolicGraph; nullopt for any
/// other graph file (read those with load_graph). Throws fact::Error for a malformed file.
std::optional<SymbolicGraph> load_symbolic_graph(const std::filesystem::path& path);

}  // namespace fact::graph
