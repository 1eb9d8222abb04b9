// The SwiGLU error bound (src/families/gemm/swiglu_bound.h) on the host: it must cover every
// g' and u' within delta of the float64 g and u, including a g far below zero whose GEMM
// error is larger than |g| (the 'large' draw of Llama's gate/up, where a first-order bound
// at g alone was about 1e-68 against a kernel value of -3.5e10).
#include <gtest/gtest.h>

#include <cmath>

#include "families/gemm/swiglu_bound.h"

using namespace fact::realize;

namespace {
double silu(double x) { return x / (1.0 + std::exp(-x)); }

// The largest |silu(g') u' - silu(g) u| over a grid of g', u' within delta.
double worst_error(double g, double u, double delta) {
  double worst = 0;
  for (int i = -20; i <= 20; ++i)
    for (int j = -2; j <= 2; ++j) {
      const double gp = g + delta * i / 20.0, up = u + delta * j / 2.0;
      worst = std::fmax(worst, std::fabs(silu(gp) * up - silu(g) * u));
    }
  return worst;
}
}  // namespace

TEST(SwigluBound, CoversEveryValueWithinDeltaOfGAndU) {
  const double unit = std::ldexp(1.0, -8);
  const struct { double g, u, delta; } cases[] = {
      {-199.875, -1.3e8, 3e8},  // the gate far below zero, its error larger than |g|
      {-120296.352, 2.6e10, 1e8},
      {-30.0, 5.0, 0.5},        // all of [g - delta, g + delta] below -3
      {40.0, -7.0, 2.0},        // all above 3
      {0.3, 2.0, 0.01},         // inside [-3, 3]
      {-2.4, 1.0, 1e-3},        // at silu's smallest slope
  };
  for (const auto& c : cases) {
    const double bound = swiglu_error_bound(c.g, c.u, c.delta, unit);
    EXPECT_GE(bound, worst_error(c.g, c.u, c.delta)) << "g " << c.g << " u " << c.u << " delta " << c.delta;
  }
}

TEST(SwigluBound, StaysTightWhereTheGateIsFarFromZeroAndExact) {
  // g = -30 within 0.5: silu' is at most about 1.6e-11 there, so the bound is tiny; the
  // first-order term alone at g would be smaller still, but not zero.
  const double bound = swiglu_error_bound(-30.0, 5.0, 0.5, std::ldexp(1.0, -8));
  EXPECT_LT(bound, 1e-9);
  EXPECT_GT(bound, 0.0);
  // Where the interval meets [-3, 3] the slope is bounded by 1.1, not less.
  EXPECT_DOUBLE_EQ(silu_slope_max(0.0, 0.1), 1.1);
  EXPECT_NEAR(silu_slope_max(-30.0, 0.5), std::fabs(silu_slope(-29.5)), 1e-20);
}
