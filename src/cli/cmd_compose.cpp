// `factc compose plan.json realized.json -o artifact/`: stage 3 (docs/05-composition.md).
#include "cli/commands.h"
#include "compose/compose.h"

namespace fact::cli {

void add_compose_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compose", "link the tuned kernels into an artifact");
  auto opt = std::make_shared<compose::ComposeOptions>();
  auto plan = std::make_shared<std::string>();
  auto realized = std::make_shared<std::string>();
  auto graph = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("artifact");
  cmd->add_option("plan", *plan, "plan.json")->required()->check(CLI::ExistingFile);
  cmd->add_option("realized", *realized, "realized.json from `factc realize`")->required()->check(CLI::ExistingFile);
  cmd->add_option("--graph", *graph, "graph.json (default: graph.json beside the plan)");
  cmd->add_option("-o,--output", *out, "artifact directory to write");
  cmd->add_option("--nvcc", opt->nvcc, "nvcc to link with");
  cmd->callback([=] {
    opt->plan = *plan;
    opt->realized = *realized;
    opt->graph = graph->empty() ? opt->plan.parent_path() / "graph.json" : std::filesystem::path(*graph);
    opt->output = *out;
    compose::run_compose(*opt);
  });
}

}  // namespace fact::cli
