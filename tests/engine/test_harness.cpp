// The CPU-testable parts of the verify/tune harness (src/engine/harness.h): the standard
// draws, error statistics and quarantine. The GPU parts run in tests/families/*/test_gpu.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/harness.h"

namespace fact::realize {
namespace {

TEST(Harness, StandardDrawsAreFiveWithTheModerateOnesFirst) {
  const auto d = standard_draws(30.0, 1e-4);
  ASSERT_EQ(d.size(), 5u);
  const char* names[] = {"normal", "normal-2", "uniform01", "large", "small"};
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_STREQ(d[i].name, names[i]);
    EXPECT_EQ(d[i].moderate, i < 3);
  }
  EXPECT_EQ(d[2].dist, Distribution::Uniform01);
  EXPECT_EQ(d[3].scale, 30.0);
  EXPECT_EQ(d[4].scale, 1e-4);
}

TEST(Harness, RelativeErrorsAreInfiniteForAZeroReference) {
  const RelativeErrors e = relative_errors(1.0, 4.0, 1.0, 16.0);
  EXPECT_DOUBLE_EQ(e.max_rel, 0.25);
  EXPECT_DOUBLE_EQ(e.fro_rel, 0.25);
  const RelativeErrors z = relative_errors(1.0, 0.0, 1.0, 0.0);
  EXPECT_TRUE(std::isinf(z.max_rel));
  EXPECT_TRUE(std::isinf(z.fro_rel));
}

TEST(Harness, QuarantineKeepsTheReason) {
  CandidateOutcome o;
  EXPECT_EQ(o.status, "ok");
  quarantine(o, "can_implement returned 3");
  EXPECT_EQ(o.status, "quarantined");
  EXPECT_EQ(o.reason, "can_implement returned 3");
}

TEST(Harness, RecordTimesCopiesTheTrialStatistics) {
  CandidateOutcome o;
  record_times(o, TrialStats{1.5, 1.0, 2.0, 30});
  EXPECT_EQ(o.median_ms, 1.5);
  EXPECT_EQ(o.min_ms, 1.0);
  EXPECT_EQ(o.max_ms, 2.0);
  EXPECT_EQ(o.trials, 30);
}

}  // namespace
}  // namespace fact::realize
