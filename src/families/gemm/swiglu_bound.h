// The error bound of one SwiGLU output silu(g)·u against its float64 reference, evaluated
// the same way on the host (tests) and in swiglu_kernels.cu's comparison.
#pragma once
#include <cmath>

#include "engine/host_device.h"

namespace fact::realize {

/// d silu / dg = s (1 + g (1 - s)), s = sigmoid(g).
FACT_HD inline double silu_slope(double g) {
  const double s = 1.0 / (1.0 + exp(-g));
  return s * (1.0 + g * (1.0 - s));
}

/// The largest |silu'| over [g - delta, g + delta]. silu' has its extremes at about
/// -2.3994 (-0.0998) and 2.3994 (1.0998) and is monotone outside [-3, 3]: |silu'| grows
/// from 0 towards -3 on (-inf, -3] and falls towards 1 on [3, inf). So the largest value
/// is at an end of the interval, or 1.0998 (bounded by 1.1) when the interval meets [-3, 3].
FACT_HD inline double silu_slope_max(double g, double delta) {
  const double lo = g - delta, hi = g + delta;
  if (hi >= -3.0 && lo <= 3.0) return 1.1;
  return fmax(fabs(silu_slope(lo)), fabs(silu_slope(hi)));
}

/// The bound on |kernel - silu(g)·u| when the kernel's g and u are each within `delta`
/// of the float64 g and u (the GEMM's bound: tolerance x max |acc|): by the mean value
/// theorem |silu(g') u' - silu(g) u| <= max|silu'|·delta·(|u| + delta) + |silu(g)|·delta,
/// with max|silu'| over the whole interval (silu_slope_max), not at g alone: a g that the
/// GEMM computes from large cancelling products can move by far more than |g|. Plus D's
/// rounding and the fp32 arithmetic, 2·out_unit·|ref|.
FACT_HD inline double swiglu_error_bound(double g, double u, double delta, double out_unit) {
  const double silu = g / (1.0 + exp(-g));
  return silu_slope_max(g, delta) * delta * (fabs(u) + delta) + fabs(silu) * delta + 2.0 * out_unit * fabs(silu * u);
}

}  // namespace fact::realize
