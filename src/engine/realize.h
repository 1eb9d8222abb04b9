// Stage 2, realization (docs/00-design.md §1, docs/04-realization.md): plan.json in, realized.json out.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/build.h"
#include "base/precision.h"
#include "engine/gpu_context.h"

namespace fact::realize {

struct RealizeOptions {
  std::filesystem::path plan;          // plan.json from `factc discover`
  std::filesystem::path output;        // realized.json to write
  Precision policy = Precision::tf32;
  bool policy_given = false;           // false: the plan's "precision" (the policy it was discovered under)
  std::filesystem::path cache_dir;     // empty: default_cache_dir()
  int jobs = 0;                        // parallel nvcc; 0: default_jobs()
  int tune_budget = 0;                 // CUTLASS candidates built per pattern; 0: all
  std::string nvcc, cutlass_dir;       // overrides for find_toolchain
  bool no_gpu = false;                 // build only, even if a GPU is present
  bool use_registry = true;            // replay and record tunings (src/registry)
  int trials = 30, warmup = 5;
  bool verbose = false;
};

/// One plan pattern's candidates as realization plans them, before anything is built.
struct PlannedPattern {
  std::string id;
  std::vector<std::string> kernels;  // kernel names, in the order they are tuned
  std::vector<std::string> companions;  // built too, run by candidates besides them
  std::string unsupported;           // non-empty: why no kernel of FACT's implements it
};

/// Step 1 of run_realize on its own: for every pattern of `plan` (a parsed plan.json), the
/// kernels realization would build under `policy` with at most `tune_budget` kernels per
/// pattern (0: all), for `gpu` (none: an H200's SM count and limits). Each kernel's build
/// request (name, complete source, symbol) goes into `requests`, keyed by name; its cache key
/// is cache_key(request, toolchain). Nothing is compiled and no GPU is touched, so the
/// candidates of a plan can be compared with a list on any machine. A pattern whose problem
/// cannot be read comes back with no kernels and the reason in `unsupported`. Throws
/// fact::Error for a plan that is not a plan (format, version, patterns list).
std::vector<PlannedPattern> plan_candidates(const nlohmann::json& plan, Precision policy, int tune_budget,
                                            const std::optional<GpuInfo>& gpu,
                                            std::map<std::string, BuildRequest>& requests);

/// What one pattern's kernels cost to compile in a run (realized.json's `compile_s` and
/// `shares_kernels_with`).
struct CompileCharge {
  double seconds = 0;                    // compile + link seconds of the kernels first asked for here
  std::vector<std::string> shares_with;  // earlier patterns charged for kernels it also tunes
};

/// Charges each kernel's build (`built`, by name) to the first of `patterns` (id, kernel
/// names) that asks for it: one build serves every pattern with the same problem, so its
/// seconds are counted once and the report's per-pattern seconds add up to what the pool
/// compiled. A kernel served from the cache costs 0; a name missing from `built` costs 0.
std::vector<CompileCharge> charge_compile(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& patterns,
    const std::map<std::string, BuildResult>& built);

/// Realizes every pattern of the plan: builds every pattern's candidates in one parallel pool
/// (a kernel two patterns ask for is built once), and on a GPU verifies and tunes them and
/// picks a winner; a pattern with the tuning problem of an earlier one takes its tuning
/// (`"tuned_with"`). Prints progress to stderr and a summary to stdout.
/// Returns 0 on success (also without a GPU, which realized.json records as "gpu": null).
/// Throws fact::Error for an unreadable plan or a missing toolchain.
int run_realize(const RealizeOptions& options);

}  // namespace fact::realize
