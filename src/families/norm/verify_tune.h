// Verification (docs/00-design.md §5) and tuning (§6) of norm candidates on the GPU
// (docs/06-verification.md, "Norm").
#pragma once
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/norm/candidates.h"
#include "families/norm/reference.h"

namespace fact::realize {

/// Verifies every verifiable candidate on the draws of norm_draws(): the whole of x (and
/// the residual) filled with normal values, then the sampled rows (norm_sample_rows)
/// overwritten with the draw's rows, weight and bias drawn once; the output (and the sum)
/// poisoned with NaN before each run. Per draw and candidate, on the sampled rows: every
/// output element finite and within its bound of the float64 reference (bound.h), the sum
/// bit for bit eager's rounding of x + residual, the output not constant along every row
/// where the reference is not; when the output has at most 2^24 elements, every element of
/// it written (no NaN left). Then times the survivors and the vendor bound alternating round
/// by round. A candidate's `tolerance` is the largest bound relative to max |ref| over the
/// moderate draws. `verification`, when given, receives {"draws": [{"draw", "rows_sampled",
/// "max_rel_err": {kernel: ...}}], "worst_bound_ratio": {kernel: max |out - ref| / bound}}.
/// Throws fact::Error only when the GPU itself fails.
std::vector<CandidateOutcome> verify_and_tune_norm(const NormProblem& p,
                                                   std::vector<std::unique_ptr<NormCandidate>>& candidates,
                                                   GpuContext& gpu, int warmup = 5, int trials = 30,
                                                   bool verbose = false, nlohmann::json* verification = nullptr);

}  // namespace fact::realize
