// `factc discover GRAPH [-o plan.json] [--text | --canonical] [--policy tf32]`: run every rule over a
// graph and write the prioritized plan (docs/03-rules.md). A summary goes to stderr.
#include <iostream>

#include "cli/commands.h"
#include "base/file_io.h"
#include "discover/canonical/canonical.h"
#include "discover/plan.h"
#include "discover/symbolic_plan.h"
#include "graph/io.h"

namespace fact::cli {

void add_discover_command(CLI::App& app) {
  struct Options {
    std::string graph, output, policy = "tf32";
    bool text = false, canonical = false;
  };
  auto opt = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("discover", "match rules over a graph and write the plan");
  cmd->add_option("graph", opt->graph, "graph file: JSON (docs/02) or canonical text")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", opt->output, "plan JSON path (default: stdout unless --text)");
  cmd->add_flag("--text", opt->text, "print the plan's canonical text to stdout");
  cmd->add_flag("--canonical", opt->canonical,
                "print the canonical graph every rule sees (and what it dropped) to stdout");
  cmd->add_option("--policy", opt->policy, "precision policy for fp32 matmuls: fp32, tf32, bf16")
      ->capture_default_str();
  cmd->callback([opt] {
    const discover::Precision policy = discover::precision_from_name(opt->policy);
    // A graph with symbols is planned at its sample points (discover/symbolic_plan.h);
    // --canonical shows the graph at the symbols' hints.
    const auto symbolic = graph::load_symbolic_graph(opt->graph);
    const graph::Graph g = symbolic ? graph::specialize(*symbolic, symbolic->hints()) : graph::load_graph(opt->graph);
    const discover::Plan plan = symbolic ? discover::make_symbolic_plan(*symbolic, discover::builtin_rules(), policy)
                                         : discover::make_plan(g, discover::builtin_rules(), policy);
    if (!opt->output.empty()) write_file(opt->output, discover::plan_to_json_string(plan));
    if (opt->canonical) std::cout << discover::canonical_to_text(discover::canonicalize(g));
    else if (opt->text) std::cout << discover::plan_to_text(plan);
    else if (opt->output.empty()) std::cout << discover::plan_to_json_string(plan);
    std::cerr << "discover " << g.name << ": " << plan.patterns.size() << " patterns, "
              << plan.rejected.size() << " rejected, " << plan.fallback.size() << " fallback\n";
  });
}

}  // namespace fact::cli
