// `factc print FILE [--json] [--at B=8]`: a graph (JSON or text) printed as canonical text, or as
// JSON with --json. docs/02-graph-format.md.
#include <iostream>

#include "base/error.h"
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
  auto at = std::make_shared<std::string>();
  cmd->add_flag("--json", *as_json, "print JSON instead of text");
  cmd->add_option("--at", *at, "a graph with symbols (version 2) specialized at NAME=SIZE[,NAME=SIZE...]");
  cmd->callback([path, as_json, at] {
    const auto symbolic = graph::load_symbolic_graph(*path);
    if (symbolic && at->empty()) {
      std::string names;
      for (const auto& s : symbolic->symbols) names += (names.empty() ? "" : ", ") + s.name;
      throw Error(*path + " has symbolic sizes (" + names + "); the text form is static: pass --at " +
                  symbolic->symbols.front().name + "=" + std::to_string(symbolic->symbols.front().hint()));
    }
    if (!symbolic && !at->empty()) throw Error(*path + " has no symbols; --at specializes a graph that has");
    graph::Graph g = symbolic ? graph::specialize(*symbolic, graph::parse_symbol_values(*at)) : graph::load_graph(*path);
    std::cout << (*as_json ? graph::graph_to_json_string(g) : graph::print_text(g));
  });
}

}  // namespace fact::cli
