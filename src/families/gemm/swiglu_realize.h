// Realizing a SwiGLU pattern (swiglu.h; docs/04-realization.md, "SwiGLU"): its candidates,
// their verification against float64 and their tuning.
#pragma once
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "families/family.h"

namespace fact::families {

/// The GEMM family's realization of a plan pattern whose problem is a SwiGLU one: the
/// SwiGLU kernels of swiglu_kernel_choices (budget ctx.tune_budget) are added to `requests`;
/// on the GPU the candidates are the vendor path (cuBLAS over the interleaved weight, then
/// the pairing pass; timed as the ATen path the runtime would run when it wins) and every
/// kernel that built, verified against the float64 reference silu(A·Wgᵀ)·(A·Wuᵀ) on the
/// standard draws (NaN-poisoned D, the bound of swiglu_compare) and timed alternating.
/// Throws fact::Error for a problem swiglu_problem_from_json refuses.
std::unique_ptr<PatternRealization> plan_swiglu(const nlohmann::json& pattern, const PlanContext& ctx,
                                                std::map<std::string, BuildRequest>& requests);

}  // namespace fact::families
