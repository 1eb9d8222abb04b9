// Realizing one attention pattern, the attention family's plan and tune (family.cpp):
// plan_attention_pattern runs before the build (candidates and build requests),
// tune_attention_pattern on the GPU after it (docs/04-realization.md, "Attention").
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/attention/space.h"
#include "engine/build.h"
#include "engine/harness.h"
#include "engine/gpu_context.h"

namespace fact::realize {

/// One attention pattern between the stages of realization.
struct AttentionWork {
  AttentionProblem problem;
  std::optional<AttentionFamily> family;  // none: vendor-only
};

/// The space's GPU facts: `gpu`'s SM count, shared memory and registers where probed, else
/// the H200's (AttentionGpuLimits' defaults); the sm90 member only on a GPU of compute
/// capability 9.0 (the kernels are built for sm_90a), and without a GPU (an H200 assumed,
/// as for the GEMMs, which are all sm90a).
AttentionGpuLimits attention_limits(const std::optional<GpuInfo>& gpu);

/// Reads the problem, picks the family under `policy` and its tuning space (at most
/// `tune_budget` kernels, 0 = all), appends the kernels' names to `kernels` (cost-model
/// order) and their sources to `requests` (by name, shared across patterns). A problem no
/// kernel implements sets `unsupported` (the vendor-only reason). Throws fact::Error for a
/// problem that cannot be read (attention_problem_from_json).
AttentionWork plan_attention_pattern(const nlohmann::json& problem, Precision policy, const AttentionGpuLimits& limits,
                                     int tune_budget, std::map<std::string, BuildRequest>& requests,
                                     std::vector<std::string>& kernels, std::string& unsupported);

/// Verifies and times the candidates of pattern `id` on the GPU: the vendor lower bound and every
/// kernel of `kernels` that built (`built`); a kernel that failed to build or to load goes to
/// `build_failures` as a quarantined realized.json candidate. `verification` receives
/// verify_and_tune_attention's record.
std::vector<CandidateOutcome> tune_attention_pattern(const std::string& id, const AttentionWork& work,
                                                     const std::vector<std::string>& kernels,
                                                     const std::map<std::string, BuildResult>& built, Precision policy,
                                                     GpuContext& gpu, int warmup, int trials, bool verbose,
                                                     nlohmann::json& verification, nlohmann::json& build_failures);

}  // namespace fact::realize
