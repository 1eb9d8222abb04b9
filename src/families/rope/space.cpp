#include "families/rope/space.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "engine/ranked.h"

#include "graph/types.h"

namespace fact::realize {

RopeKernel rope_kernel(const RopeProblem& p) {
  RopeKernel k{p.form, p.head_dim, p.dtype};
  if (p.out_dtype != p.dtype) k.out_element = p.out_dtype;
  return k;
}

int64_t rope_threads_per_row(const RopeKernel& k, const RopeConfig& c) {
  return (k.form == RopeForm::half ? k.head_dim / 2 : k.head_dim) / c.vec;
}

bool rope_config_fits(const RopeKernel& k, const RopeConfig& c, const RopeProblem& p) {
  const int64_t split = k.form == RopeForm::half ? k.head_dim / 2 : k.head_dim;
  if (split % c.vec != 0 || (k.form == RopeForm::pairs && c.vec % 2 != 0)) return false;
  for (const RopeStrides* s : {&p.x, &p.cos, &p.sin, &p.out})
    for (size_t i = 0; i < 3; ++i)
      if (p.dims[i] > 1 && (*s)[i] % c.vec != 0) return false;
  return rope_threads_per_row(k, c) <= c.threads;
}

namespace {

// Whether a table with strides `s` is read once per row of x (no dim of size > 1 broadcast).
bool full_size(const RopeProblem& p, const RopeStrides& s) {
  for (size_t i = 0; i < 3; ++i)
    if (p.dims[i] > 1 && s[i] == 0) return false;
  return true;
}

}  // namespace

double rope_estimate_seconds(const RopeKernel& k, const RopeConfig& c, const RopeProblem& p, int sm_count) {
  const double cells = double(p.rows()) * double(k.head_dim), e = double(dtype_bytes(k.element));
  const double bytes = cells * e * (2.0 + (full_size(p, p.cos) ? 1.0 : 0.0) + (full_size(p, p.sin) ? 1.0 : 0.0));
  const double threads = double(p.rows()) * double(rope_threads_per_row(k, c));
  const double fill = std::sqrt(std::min(1.0, threads / (double(sm_count) * 2048.0)));
  const double width = double(c.vec) * e >= 16 ? 1.0 : 0.9;
  const double cta = c.threads == 512 ? 0.97 : c.threads == 128 ? 0.98 : 1.0;
  return bytes / 3.5e12 / (fill * width * cta);
}

std::vector<RopeConfig> rope_tuning_space(const RopeKernel& k, const RopeProblem& p, int sm_count, int budget) {
  std::vector<RankedConfig<RopeConfig>> ranked;
  const int e = int(dtype_bytes(k.element));
  for (int bytes : {16, 8}) {
    for (int t : {128, 256, 512}) {
      const RopeConfig c{t, bytes / e};
      if (rope_config_fits(k, c, p)) ranked.push_back({c, rope_estimate_seconds(k, c, p, sm_count), rope_kernel_name(k, c)});
    }
  }
  return fastest_first(std::move(ranked), size_t(budget > 0 ? budget : kRopeDefaultBudget));
}

std::string rope_kernel_name(const RopeKernel& k, const RopeConfig& c) {
  const std::string out = k.out_element ? "_to_" + std::string(graph::short_name(*k.out_element)) : "";
  return fmt::format("fact_rope_{}_{}{}_d{}_t{}_v{}", rope_form_name(k.form), graph::short_name(k.element), out,
                     k.head_dim, c.threads, c.vec);
}

}  // namespace fact::realize
