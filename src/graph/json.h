// FACT graph <-> JSON (version 1), exactly as docs/02-graph-format.md specifies.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "graph/graph.h"

namespace fact::graph {

/// Builds a graph from parsed JSON and validates it. Throws fact::Error naming the JSON
/// path of the problem ("nodes[3].outputs[0].type.dtype: unknown dtype 'float8'").
/// ordered_json keeps kwargs in file order.
Graph graph_from_json(const nlohmann::ordered_json& j);
/// Parses JSON text; a syntax error becomes fact::Error with nlohmann's byte position.
Graph graph_from_json_string(std::string_view text);

/// The graph as JSON (keys in the order of docs/02).
nlohmann::ordered_json graph_to_json(const Graph& graph);
/// graph_to_json as readable text (base/json_format.h) with a final newline.
std::string graph_to_json_string(const Graph& graph);

/// One argument value as JSON and back (shared with other writers). arg_from_json throws
/// fact::Error mentioning `path`.
nlohmann::ordered_json arg_to_json(const Arg& arg);
Arg arg_from_json(const nlohmann::ordered_json& j, const std::string& path);

}  // namespace fact::graph
