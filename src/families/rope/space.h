// The rope kernel family (src/families/rope/templates/rope.cu.in): what a problem fixes
// about a kernel, its tuning space, a cost model that ranks it, and the procedural names.
//
// A kernel is fixed by (form, head_dim, element type) and a configuration (THREADS per CTA,
// VEC elements per vector load). A thread owns VEC elements of one row: for the half-split
// form VEC of the first half and the VEC at the same place in the second half (the pair
// rotate_half combines), for the pairs form VEC consecutive elements (VEC/2 whole pairs).
// Its name spells all of these and is the cache key part, report row and C symbol prefix:
//   fact_rope_<half|pairs>_<f32|bf16|f16>_d<head_dim>_t<THREADS>_v<VEC>
// (e.g. fact_rope_half_bf16_d128_t256_v8: 16-byte loads of bf16, 8 threads a row).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "families/rope/problem.h"

namespace fact::realize {

/// What the problem fixes about a rope kernel.
struct RopeKernel {
  RopeForm form;
  int64_t head_dim;
  DType element;
  std::optional<DType> out_element = std::nullopt;  // out's element type when it is not `element`
  bool operator==(const RopeKernel&) const = default;
};

/// One point of the tuning space.
struct RopeConfig {
  int threads;  // per CTA: 128 | 256 | 512
  int vec;      // elements per vector load: 16 or 8 bytes' worth of the element type
  bool operator==(const RopeConfig&) const = default;
};

/// The kernel of `p`.
RopeKernel rope_kernel(const RopeProblem& p);

/// The threads that own one row: (head_dim / 2) / vec for the half-split form, head_dim /
/// vec for pairs.
int64_t rope_threads_per_row(const RopeKernel& k, const RopeConfig& c);

/// A configuration is kept when vec divides the elements a row's threads split (head_dim / 2
/// for half, head_dim for pairs, and vec is even for pairs) and every leading stride of x,
/// cos, sin and out (the vectors then stay aligned from row to row), and a row's threads fit
/// in one CTA.
bool rope_config_fits(const RopeKernel& k, const RopeConfig& c, const RopeProblem& p);

/// Estimated seconds of `c` on `p` (a ranking key, not a prediction): x read and out
/// written once at 3.5 TB/s plus cos and sin read once each where they do not broadcast
/// (a broadcast table stays in L2), divided by an efficiency: 0.9 for 8-byte loads, and the
/// share of the GPU's threads the grid fills (at most 2048 per SM over `sm_count` SMs,
/// square-rooted), with 0.97 for 512 threads a CTA (fewer CTAs resident per SM) and 0.98
/// for 128 (more CTAs to schedule).
double rope_estimate_seconds(const RopeKernel& k, const RopeConfig& c, const RopeProblem& p, int sm_count);

/// Every configuration of threads {128, 256, 512} x vec {16, 8 bytes} that fits, ranked by
/// rope_estimate_seconds, best first (ties by name); at most `budget` entries, or
/// kRopeDefaultBudget when budget is 0.
std::vector<RopeConfig> rope_tuning_space(const RopeKernel& k, const RopeProblem& p, int sm_count, int budget);
inline constexpr int kRopeDefaultBudget = 4;

/// The procedural kernel name (see the header comment); also the C symbol prefix.
std::string rope_kernel_name(const RopeKernel& k, const RopeConfig& c);

}  // namespace fact::realize
