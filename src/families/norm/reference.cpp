#include "families/norm/reference.h"

#include <cmath>
#include <random>

#include "base/error.h"

namespace fact::realize {

std::vector<NormDraw> norm_draws() {
  return {{"normal", true},   {"uniform01", true}, {"large", false},     {"small", false},
          {"offset", false},  {"constant", false}, {"near-range", false}};
}

std::vector<float> norm_draw_row(const std::string& draw, int64_t cols, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<float> row(static_cast<size_t>(cols));
  const double range = dtype == DType::f16 ? std::ldexp(1.0, 13) : std::ldexp(1.0, 120);
  for (auto& v : row) {
    double x;
    if (draw == "normal") x = normal(rng);
    else if (draw == "uniform01") x = uniform(rng);
    else if (draw == "large") x = normal(rng) * (dtype == DType::f16 ? 1e2 : 1e3);
    else if (draw == "small") x = normal(rng) * 1e-4;
    else if (draw == "offset") x = (dtype == DType::f16 ? 1e2 : 1e3) + normal(rng) * 0.1;
    else if (draw == "constant") x = 3.25;
    else if (draw == "near-range") x = normal(rng) * range;
    else throw Error("norm verification: unknown draw '" + draw + "'");
    v = round_to(dtype, float(x));
  }
  return row;
}

std::vector<float> norm_draw_param(int64_t cols, DType dtype, uint64_t seed, bool bias) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> v(static_cast<size_t>(cols));
  for (auto& x : v) x = round_to(dtype, float((bias ? 0.0 : 1.0) + 0.1 * normal(rng)));
  return v;
}

NormErrorTerms norm_error_terms(const NormProblem& p) {
  NormErrorTerms e{};
  e.u = std::ldexp(1.0, -24);
  e.u_out = p.out_dtype == DType::f32 ? std::ldexp(1.0, -24) : p.out_dtype == DType::bf16 ? std::ldexp(1.0, -8)
                                                                                        : std::ldexp(1.0, -11);
  e.out_abs = p.out_dtype == DType::f16 ? std::ldexp(1.0, -25) : 0.0;
  e.margin = 2.0;
  e.layer = p.norm == NormKind::layer ? 1 : 0;
  return e;
}

NormRowReference norm_reference_row(const NormProblem& p, const std::vector<float>& x, const std::vector<float>& residual,
                                    const std::vector<float>& weight, const std::vector<float>& bias) {
  const size_t n = x.size();
  NormRowReference r;
  r.sum.resize(n);
  for (size_t j = 0; j < n; ++j) r.sum[j] = residual.empty() ? x[j] : round_to(p.dtype, x[j] + residual[j]);
  double mu = 0, abs_sum = 0;
  for (float s : r.sum) {
    mu += s;
    abs_sum += std::fabs(double(s));
  }
  mu = p.norm == NormKind::layer ? mu / double(n) : 0.0;
  double var = 0;
  for (float s : r.sum) var += (s - mu) * (s - mu);
  var /= double(n);
  const double eps = double(float(p.eps));
  r.facts = {double(n), abs_sum / double(n), var, eps};
  const NormErrorTerms e = norm_error_terms(p);
  const double rstd = 1.0 / std::sqrt(var + eps);
  r.out.resize(n);
  r.bound.resize(n);
  for (size_t j = 0; j < n; ++j) {
    const double c = double(r.sum[j]) - mu, y = c * rstd;
    const double w = weight.empty() ? 1.0 : weight[j];
    const double out = y * w + (bias.empty() ? 0.0 : bias[j]);
    r.out[j] = out;
    r.bound[j] = norm_element_bound(e, r.facts, c, y, w, out);
  }
  return r;
}

std::vector<int64_t> norm_sample_rows(int64_t rows) {
  std::vector<int64_t> out;
  if (rows <= 64) {
    for (int64_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  for (int s = 0; s < 64; ++s) out.push_back(int64_t(std::llround(double(s) * double(rows - 1) / 63.0)));
  return out;
}

}  // namespace fact::realize
