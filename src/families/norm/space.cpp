#include "families/norm/space.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "engine/ranked.h"

namespace fact::realize {

NormKernel norm_kernel(const NormProblem& p) {
  return {p.norm, p.cols, p.dtype, p.out_dtype, p.param_dtype, p.residual, p.weight, p.bias};
}

int norm_items(const NormKernel& k, const NormConfig& c) {
  const int64_t vectors = k.cols / c.vec;
  return int((vectors + c.threads_per_row - 1) / c.threads_per_row);
}

bool norm_config_fits(const NormKernel& k, const NormConfig& c, const NormProblem& p) {
  if (k.cols % c.vec != 0) return false;
  if (p.rows > 1 && (p.x_stride % c.vec != 0 || (p.residual && p.residual_stride % c.vec != 0))) return false;
  const int block = c.rows_per_cta * c.threads_per_row;
  if (block < 32 || block > 1024) return false;
  if (int64_t(c.threads_per_row) > k.cols / c.vec) return false;
  if (norm_items(k, c) * c.vec > 64) return false;
  return c.rows_per_cta <= p.rows;
}

double norm_estimate_seconds(const NormKernel& k, const NormConfig& c, const NormProblem& p, int sm_count) {
  const double e = double(dtype_bytes(k.element));
  double bytes = double(p.rows) * double(k.cols) * (e * (k.residual ? 2 : 1) + double(dtype_bytes(k.out)));
  if (p.writes_sum()) bytes += double(p.rows) * double(k.cols) * e;
  const double ctas = std::ceil(double(p.rows) / c.rows_per_cta);
  const double threads = ctas * c.rows_per_cta * c.threads_per_row;
  const double fill = std::sqrt(std::min(1.0, threads / (double(sm_count) * 2048.0)));
  // An SM holds at most 32 CTAs (sm_90: CUDA C++ Programming Guide, "Compute capabilities"
  // table): CTAs of fewer than 64 threads cannot fill its 2048 thread slots. Measured on the
  // H200: LayerNorm bf16 over 768 columns at one 32-thread row a CTA ran at 0.69x of one copy
  // of its bytes, the fp32 one at 16 rows a CTA at 0.97x (docs/perf-notes.md v11).
  const double resident = std::min(1.0, 32.0 * double(c.rows_per_cta * c.threads_per_row) / 2048.0);
  const int items = norm_items(k, c);
  const double vectors = double(k.cols / c.vec);
  const double lanes = vectors / (double(items) * c.threads_per_row);
  const double regs = items * c.vec > 32 ? 0.85 : 1.0;
  const double width = double(c.vec) * e >= 16 ? 1.0 : 0.9;
  return bytes / 3.5e12 / (fill * std::sqrt(resident) * lanes * regs * width);
}

std::vector<NormConfig> norm_tuning_space(const NormKernel& k, const NormProblem& p, int sm_count, int budget) {
  std::vector<RankedConfig<NormConfig>> ranked;
  const int e = int(dtype_bytes(k.element));
  for (int bytes : {16, 8, 4}) {
    if (bytes < e) continue;
    for (int t = 4; t <= 1024; t *= 2) {
      for (int r : {1, 2, 4, 8, 16}) {
        const NormConfig c{r, t, bytes / e};
        if (!norm_config_fits(k, c, p)) continue;
        ranked.push_back({c, norm_estimate_seconds(k, c, p, sm_count), norm_kernel_name(k, c)});
      }
    }
  }
  return fastest_first(std::move(ranked), size_t(budget > 0 ? budget : kNormDefaultBudget));
}

const char* norm_dtype_token(DType d) { return d == DType::f32 ? "f32" : d == DType::bf16 ? "bf16" : "f16"; }

std::string norm_kernel_name(const NormKernel& k, const NormConfig& c) {
  return fmt::format("fact_norm_{}_{}_{}_{}_c{}_{}{}{}_r{}_t{}_v{}", k.norm == NormKind::layer ? "ln" : "rms",
                     norm_dtype_token(k.element), norm_dtype_token(k.out), k.param ? norm_dtype_token(*k.param) : "np",
                     k.cols, k.residual ? 'r' : 'n', k.weight ? 'w' : 'n', k.bias ? 'b' : 'n', c.rows_per_cta,
                     c.threads_per_row, c.vec);
}

}  // namespace fact::realize
