// Stage 2, realization (docs/00-design.md §1, docs/04-realization.md): plan.json in, realized.json out.
#pragma once
#include <filesystem>
#include <string>

#include "realize/gemm_problem.h"

namespace fact::realize {

struct RealizeOptions {
  std::filesystem::path plan;          // plan.json from `factc discover`
  std::filesystem::path output;        // realized.json to write
  Precision policy = Precision::tf32;
  std::filesystem::path cache_dir;     // empty: default_cache_dir()
  int jobs = 0;                        // parallel nvcc; 0: default_jobs()
  int tune_budget = 0;                 // CUTLASS candidates built per pattern; 0: all
  std::string nvcc, cutlass_dir;       // overrides for find_toolchain
  bool no_gpu = false;                 // build only, even if a GPU is present
  bool use_registry = true;            // replay and record tunings (src/registry)
  int trials = 30, warmup = 5;
  bool verbose = false;
};

/// Realizes every pattern of the plan: builds its candidates, and on a GPU verifies and
/// tunes them and picks a winner. Prints progress to stderr and a summary to stdout.
/// Returns 0 on success (also without a GPU, which realized.json records as "gpu": null).
/// Throws fact::Error for an unreadable plan or a missing toolchain.
int run_realize(const RealizeOptions& options);

}  // namespace fact::realize
