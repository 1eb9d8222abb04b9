// `factc print FILE [--json]`: a graph (JSON or text) printed as canonical text, or as
// JSON with --json. docs/02-graph-format.md.
#include <iostream>

#include "cli/commands.h"
#include "graph/io.h"
#include "graph/json.h"
#include "graph/text.h"

namespace fact::cli {

void add_print_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("print", "print a graph (JSON or text) as canonical text or JSON");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("graph", *path, "graph file: JSON (docs/02) or canonical text")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", *as_json, "print JSON instead of text");
  cmd->callback([path, as_json] {
    graph::Graph g = graph::load_graph(*path);
    std::cout << (*as_json ? graph::graph_to_json_string(g) : graph::print_text(g));
  });
}

}  // namespace fact::cli
