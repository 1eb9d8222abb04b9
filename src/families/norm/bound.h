// The error a correct norm kernel may make on one output element (docs/06-verification.md,
// "Norm"), evaluated by the float64 reference on the host: one definition, tested on the CPU.
//
// Statistics are fp32 (u = 2^-24) over a row of n elements s_j with A = sum_j |s_j| / n,
// gamma(k) = k u / (1 - k u) (Higham, "Accuracy and Stability of Numerical Algorithms",
// 2nd ed., Lemma 3.1 for gamma, §4.2 for the sum: n terms summed in floating point, in any
// order of additions — the kernel's per-thread sums and shuffle tree included — are off by
// at most gamma(n - 1) sum |terms|):
//  * the mean (LayerNorm): d_mu = gamma(n + 1) A (the sum, the division by n);
//  * the variance: LayerNorm's second pass sums (s_j - mu^)^2 = (s_j - mu)^2 + ... whose
//    exact mean is var + (mu^ - mu)^2 >= var: d_var = d_mu^2 + gamma(n + 3) (var + d_mu^2)
//    (the subtraction, the fused square-add, the sum, the division); RMSNorm's mean of
//    squares d_var = gamma(n + 2) var (var = mean s_j^2, all terms positive);
//  * rstd = 1 / sqrt(var + eps): t = var + eps, delta = (d_var + u eps + u t) / t (eps
//    rounded to fp32, the addition); for delta <= 1/2, |1/sqrt(1 + delta) - 1| <= 1.42 delta,
//    plus the IEEE sqrt's and reciprocal's roundings: rho = 1.42 delta + 2u;
//  * y_j = (s_j - mu) rstd: |dy| <= rstd (1 + rho) (d_mu + u |s_j - mu|) + rho |y_j| + u |y_j|;
//  * weight and bias: |w_j| |dy| + u |y_j w_j| + u |out_j|; the output's rounding, counted
//    twice (eager may round y before the weight, e.g. Hugging Face's .to(input_dtype)):
//    u_out (|out_j| + |y_j w_j|) + out_abs.
// Whatever rho: |y^_j| <= sqrt(n) (var^ >= (s_j - mu^)^2 / n), so the bound never exceeds
// |w_j| (sqrt(n) + |y_j|) + the roundings (this decides constant rows with a tiny eps, where
// any fp32 kernel's y is (s_j - mu^) / sqrt((s_j - mu^)^2 + eps), anywhere in [-1, 1]).
// The sum times `margin` (2). A large common offset (mean >> std) enters through A: the
// bound is gamma(n) |mu| / std, as it must be for any fp32 kernel that forms the mean.
#pragma once
#include <cmath>

#include "engine/host_device.h"

namespace fact::realize {

/// What a correct kernel may lose, by source (norm_error_terms derives them).
struct NormErrorTerms {
  double u;        // the statistics' unit roundoff (fp32: 2^-24)
  double u_out;    // the output dtype's unit roundoff
  double out_abs;  // absolute rounding near zero (fp16 subnormals: 2^-25; else 0)
  double margin;   // multiplies the sum
  int layer;       // 1: LayerNorm (the mean is subtracted), 0: RMSNorm
};

/// What the float64 reference knows about one row.
struct NormRowFacts {
  double n;         // cols
  double mean_abs;  // A = sum |s_j| / n
  double var;       // LayerNorm: mean (s - mu)^2; RMSNorm: mean s^2
  double eps;       // as the kernel gets it (fp32)
};

FACT_HD inline double norm_gamma(double k, double u) { return k * u / (1.0 - k * u); }

/// The relative error bound rho of the kernel's rstd, or INFINITY when delta > 1/2.
FACT_HD inline double norm_rstd_error(const NormErrorTerms& e, const NormRowFacts& f, double* d_mu_out = nullptr) {
  const double d_mu = e.layer ? norm_gamma(f.n + 1.0, e.u) * f.mean_abs : 0.0;
  const double d_var = e.layer ? d_mu * d_mu + norm_gamma(f.n + 3.0, e.u) * (f.var + d_mu * d_mu)
                               : norm_gamma(f.n + 2.0, e.u) * f.var;
  const double t = f.var + f.eps;
  if (d_mu_out) *d_mu_out = d_mu;
  if (!(t > 0)) return INFINITY;
  const double delta = (d_var + e.u * f.eps + e.u * t) / t;
  return delta <= 0.5 ? 1.42 * delta + 2.0 * e.u : INFINITY;
}

/// The bound on |out_kernel - out_j| for the element with centered value c = s_j - mu,
/// reference core y = c rstd, weight w (1 without), reference out = y w + b.
FACT_HD inline double norm_element_bound(const NormErrorTerms& e, const NormRowFacts& f, double c, double y, double w,
                                         double out) {
  double d_mu = 0;
  const double rho = norm_rstd_error(e, f, &d_mu);
  const double rstd = 1.0 / sqrt(f.var + f.eps);
  const double aw = fabs(w), yw = fabs(y * w);
  const double roundings = e.u * yw + e.u * fabs(out) + e.u_out * (fabs(out) + yw) + e.out_abs;
  const double worst = aw * (sqrt(f.n) + fabs(y)) + roundings;
  if (!(rho < INFINITY)) return e.margin * worst;
  const double dy = rstd * (1.0 + rho) * (d_mu + e.u * fabs(c)) + (rho + e.u) * fabs(y);
  return e.margin * fmin(aw * dy + roundings, worst);
}

}  // namespace fact::realize
