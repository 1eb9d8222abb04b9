// Golden plans of symbolic graphs: tests/golden/symbolic/<name>.graph.json (written by
// export_graphs.py there, which says what each one shows) -> expected plan text
// <name>.plan. FACT_UPDATE_GOLDEN=1 rewrites the .plan files.
#include <gtest/gtest.h>

#include "../golden_util.h"
#include "discover/symbolic_plan.h"
#include "graph/io.h"

namespace fact::discover {
namespace {

const std::filesystem::path kDir = test::test_dir() / "golden" / "symbolic";

class SymbolicPlanGolden : public testing::TestWithParam<std::string> {};

TEST_P(SymbolicPlanGolden, PlanTextMatches) {
  const auto g = graph::load_symbolic_graph(kDir / (GetParam() + ".json"));
  ASSERT_TRUE(g.has_value()) << GetParam() << " has no symbols";
  const Plan plan = make_symbolic_plan(*g, builtin_rules(), Precision::tf32);
  EXPECT_EQ(plan.symbols, g->symbols);
  test::expect_golden(kDir / (std::filesystem::path(GetParam()).stem().string() + ".plan"), plan_to_text(plan));
}

// <name>.graph.json: the stem golden_stems gives is "<name>.graph".
INSTANTIATE_TEST_SUITE_P(Files, SymbolicPlanGolden, testing::ValuesIn(test::golden_stems(kDir, ".json")),
                         test::param_name);

TEST(SymbolicPlan, SamplePointsAreHintMinOddAndMax) {
  const auto g = graph::load_symbolic_graph(kDir / "mlp_batch.graph.json");
  ASSERT_TRUE(g.has_value());
  const auto points = sample_points(*g);  // B in [2, 4096], seen 8
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].at("B"), 8);
  EXPECT_EQ(points[1].at("B"), 2);
  EXPECT_EQ(points[2].at("B"), 3);
  EXPECT_EQ(points[3].at("B"), 4096);
}

TEST(SymbolicPlan, PlanJsonIsVersionTwoWithSymbols) {
  const auto g = graph::load_symbolic_graph(kDir / "mlp_batch.graph.json");
  ASSERT_TRUE(g.has_value());
  const auto j = plan_to_json(make_symbolic_plan(*g, builtin_rules(), Precision::tf32));
  EXPECT_EQ(j.at("version"), 2);
  EXPECT_EQ(j.at("symbols").at("B").at("seen"), nlohmann::ordered_json::array({8}));
  EXPECT_EQ(j.at("patterns").at(0).at("problem").at("m"), "4*B");
}

}  // namespace
}  // namespace fact::discover
