// The norm kernel family (src/families/norm/templates/norm.cu.in): what a problem fixes
// about a kernel, its tuning space, a cost model that ranks it, and the procedural names.
//
// A kernel is fixed by (norm, cols, x/out/param element types, residual, weight, bias) and a
// configuration (ROWS rows per CTA, THREADS per row, VEC elements per vector load). Its name
// spells all of these and is the cache key part, report row and C symbol prefix:
//   fact_norm_<ln|rms>_<x>_<out>_<param|np>_c<cols>_<r><w><b>_r<ROWS>_t<THREADS>_v<VEC>
// with x/out/param f32 | bf16 | f16 and r/w/b each the letter or "-" spelled "n" (e.g.
// fact_norm_rms_f32_f32_f32_c4096_nwn_r1_t256_v4: RMSNorm with a weight, no residual/bias).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "families/norm/problem.h"

namespace fact::realize {

/// What the problem fixes about a norm kernel.
struct NormKernel {
  NormKind norm;
  int64_t cols;
  DType element, out;                 // x/residual/sum, and the output
  std::optional<DType> param;         // weight/bias (none: neither)
  bool residual, weight, bias;
  bool operator==(const NormKernel&) const = default;
};

/// One point of the tuning space.
struct NormConfig {
  int rows_per_cta;     // 1 | 2 | 4 | 8 | 16
  int threads_per_row;  // 4 .. 1024, a power of two (rows of a CTA never share a warp's lanes unevenly)
  int vec;              // elements per vector load: 16, 8 or 4 bytes' worth of x's dtype
  bool operator==(const NormConfig&) const = default;
};

/// The kernel of `p` (every problem the rule writes has one).
NormKernel norm_kernel(const NormProblem& p);

/// Vectors per thread of `c` over a row of `cols`: ceil(cols / vec / threads).
int norm_items(const NormKernel& k, const NormConfig& c);

/// A configuration is kept when vec divides cols and both row strides (16-, 8- or 4-byte
/// vectors then stay aligned from row to row), rows_per_cta x threads_per_row is 32..1024,
/// every thread of a row owns at least one vector (threads <= cols / vec), the row stays in
/// registers (items x vec <= 64 fp32 values a thread) and rows_per_cta <= rows.
bool norm_config_fits(const NormKernel& k, const NormConfig& c, const NormProblem& p);

/// Estimated seconds of `c` on `p` (a ranking key, not a prediction): the bytes moved at
/// 3.5 TB/s divided by an efficiency: the share of the GPU's threads the grid fills (at most
/// 2048 per SM over `sm_count` SMs, square-rooted: half the threads already saturate HBM
/// with 16-byte loads), the share of lanes with a vector to load in the last item, and 0.85
/// when a thread holds more than 32 fp32 values (register pressure), 0.9 for loads under 16
/// bytes.
double norm_estimate_seconds(const NormKernel& k, const NormConfig& c, const NormProblem& p, int sm_count);

/// Every configuration of rows {1, 2, 4, 8, 16} x threads {4 .. 1024} x vec {16, 8, 4
/// bytes} that fits (norm_config_fits), ranked by norm_estimate_seconds, best first (ties by
/// name); at most `budget` entries, or kNormDefaultBudget when budget is 0 (each kernel is
/// a compile of its own).
std::vector<NormConfig> norm_tuning_space(const NormKernel& k, const NormProblem& p, int sm_count, int budget);
inline constexpr int kNormDefaultBudget = 8;

/// The procedural kernel name (see the header comment); also the C symbol prefix.
std::string norm_kernel_name(const NormKernel& k, const NormConfig& c);

/// The token of a dtype in kernel names: f32 | bf16 | f16.
const char* norm_dtype_token(DType d);

}  // namespace fact::realize
