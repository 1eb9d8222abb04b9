// fact_erf_bounded (bounded_math.h) against float64 erf over its whole domain |z| <= 1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "families/gemm/epilogue/bounded_math.h"

namespace {
// |got - want| in units in the last place of want as an fp32 value.
double ulp_error(float got, double want) {
  const float w = float(std::fabs(want));
  const double ulp = double(std::nextafter(w, std::numeric_limits<float>::infinity())) - double(w);
  return std::fabs(double(got) - want) / ulp;
}
}  // namespace

TEST(BoundedMath, ErfWithinOneAndAHalfUlpOnADenseGridOfItsDomain) {
  double worst = 0, at = 0;
  const int n = 1 << 22;  // 4M points of [-1, 1]
  for (int i = 0; i <= n; ++i) {
    const float z = float(-1.0 + 2.0 * i / n);
    const double e = ulp_error(fact_erf_bounded(z), std::erf(double(z)));
    if (e > worst) worst = e, at = z;
  }
  EXPECT_LE(worst, 1.5) << "at z = " << at;
  EXPECT_GT(worst, 0.3);  // the grid does reach rounding error: the check is not vacuous
}

TEST(BoundedMath, ErfOfSmallArgumentsAndTheEnds) {
  double worst = 0;
  for (float z = 1e-37f; z < 1e-2f; z *= 1.001f) worst = std::fmax(worst, ulp_error(fact_erf_bounded(z), std::erf(double(z))));
  EXPECT_LE(worst, 1.0);
  EXPECT_EQ(fact_erf_bounded(0.0f), 0.0f);
  EXPECT_LE(ulp_error(fact_erf_bounded(1.0f), std::erf(1.0)), 1.5);
  // Every fp32 value just below 1 (the end the range analysis allows with its margin).
  for (float z = 0.99f; z <= 1.0f; z = std::nextafter(z, 2.0f)) ASSERT_LE(ulp_error(fact_erf_bounded(z), std::erf(double(z))), 1.5) << z;
}

TEST(BoundedMath, ErfIsOddAndPropagatesNaN) {
  for (float z : {1e-20f, 0.1f, 0.3333f, 0.7071068f, 0.999f}) EXPECT_EQ(fact_erf_bounded(-z), -fact_erf_bounded(z)) << z;
  EXPECT_TRUE(std::isnan(fact_erf_bounded(std::numeric_limits<float>::quiet_NaN())));
}
