// `factc realize plan.json -o realized.json --policy tf32`: stage 2 (docs/04-realization.md).
#include "cli/commands.h"
#include "engine/realize.h"

namespace fact::cli {

void add_realize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("realize", "generate, build, verify and tune kernels for a plan");
  auto opt = std::make_shared<realize::RealizeOptions>();
  auto policy = std::make_shared<std::string>();
  auto cache = std::make_shared<std::string>();
  auto plan = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("realized.json");
  cmd->add_option("plan", *plan, "plan.json from `factc discover`")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", *out, "realized.json to write");
  cmd->add_option("--policy", *policy, "precision policy: fp32 | tf32 | bf16 (docs/00-design.md §4; default: the plan's precision, else tf32)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}));
  cmd->add_option("--cache", *cache, "kernel cache directory (default $FACT_CACHE_DIR, else $XDG_CACHE_HOME/fact, else ~/.cache/fact)")
      ->check(directory_or_new());
  cmd->add_option("-j,--jobs", opt->jobs, "parallel nvcc processes (default 0: by cores and memory)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--tune-budget", opt->tune_budget, "CUTLASS candidates built per pattern, best-ranked first (0 = all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--nvcc", opt->nvcc, "nvcc to use");
  cmd->add_option("--cutlass", opt->cutlass_dir, "CUTLASS directory (with include/ and tools/util/include/)");
  cmd->add_option("--trials", opt->trials, "timed trials per candidate (>= 20)")->check(CLI::Range(20, 100000));
  cmd->add_flag("--no-gpu", opt->no_gpu, "build only, even when a GPU is present");
  auto no_registry = std::make_shared<bool>(false);
  cmd->add_flag("--no-registry", *no_registry, "tune afresh and record nothing");
  cmd->add_flag("-v,--verbose", opt->verbose, "print every verification result");
  cmd->callback([=] {
    opt->plan = *plan;
    opt->output = *out;
    opt->policy_given = !policy->empty();
    opt->policy = precision_from_name(policy->empty() ? "tf32" : *policy);
    opt->cache_dir = *cache;
    opt->use_registry = !*no_registry;
    if (int rc = realize::run_realize(*opt); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace fact::cli
