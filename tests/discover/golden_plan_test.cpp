// Golden plan tests: tests/golden/discover/<name>.txt (graph text, one behaviour per
// file, described in its header comment) -> expected plan text <name>.plan.
// FACT_UPDATE_GOLDEN=1 rewrites the .plan files.
#include <gtest/gtest.h>

#include "../golden_util.h"
#include "discover/plan.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

const std::filesystem::path kDir = test::test_dir() / "golden" / "discover";

class PlanGolden : public testing::TestWithParam<std::string> {};

TEST_P(PlanGolden, PlanTextMatches) {
  const std::string name = GetParam() + ".txt";
  graph::Graph g = graph::parse_text(read_file(kDir / name), name);
  Plan plan = make_plan(g, builtin_rules(), Precision::tf32);
  test::expect_golden(kDir / (GetParam() + ".plan"), plan_to_text(plan));
}

INSTANTIATE_TEST_SUITE_P(Files, PlanGolden, testing::ValuesIn(test::golden_stems(kDir, ".txt")),
                         test::param_name);

}  // namespace
}  // namespace fact::discover
