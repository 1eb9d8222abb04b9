// Verification (docs/00-design.md §5) and tuning (§6) of rope candidates on the GPU
// (docs/06-verification.md, "Rope").
#pragma once
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/rope/candidates.h"
#include "families/rope/reference.h"

namespace fact::realize {

/// Verifies every verifiable candidate on the draws of rope_draws(): x, cos and sin filled
/// on the device over their whole extents, the sampled rows (rope_sample_rows) read back and
/// their float64 references formed; the output poisoned with NaN before each run. Per draw
/// and candidate, on the sampled rows: every output element finite and within its bound
/// (reference.h), the output not constant along every row where the reference is not; when
/// the output spans at most 2^24 elements, every element written (no NaN left). Then times
/// the survivors and the vendor bound alternating round by round. `verification`, when
/// given, receives {"draws": [{"draw", "max_rel_err": {kernel: ...}}], "rows_sampled",
/// "worst_bound_ratio": {kernel: max |out - ref| / bound}}. Throws fact::Error only when
/// the GPU itself fails.
std::vector<CandidateOutcome> verify_and_tune_rope(const RopeProblem& p,
                                                   std::vector<std::unique_ptr<RopeCandidate>>& candidates,
                                                   GpuContext& gpu, int warmup = 5, int trials = 30,
                                                   bool verbose = false, nlohmann::json* verification = nullptr);

}  // namespace fact::realize
