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

// The plan of <stem>.txt under `precision` against the golden file <stem><suffix>.
void expect_plan(const std::string& stem, Precision precision, const std::string& suffix) {
  const std::string name = stem + ".txt";
  graph::Graph g = graph::parse_text(read_file(kDir / name), name);
  test::expect_golden(kDir / (stem + suffix), plan_to_text(make_plan(g, builtin_rules(), precision)));
}

class PlanGolden : public testing::TestWithParam<std::string> {};

TEST_P(PlanGolden, PlanTextMatches) { expect_plan(GetParam(), Precision::tf32, ".plan"); }

INSTANTIATE_TEST_SUITE_P(Files, PlanGolden, testing::ValuesIn(test::golden_stems(kDir, ".txt")),
                         test::param_name);

// The same graphs under the bf16 policy, for those with a <name>.bf16.plan: what changes is
// which values are narrowed to bf16 (discover/narrow.h) and the problems that read and
// write them.
class PlanGoldenBf16 : public testing::TestWithParam<std::string> {};

TEST_P(PlanGoldenBf16, PlanTextMatches) { expect_plan(GetParam(), Precision::bf16, ".bf16.plan"); }

std::vector<std::string> bf16_stems() {
  std::vector<std::string> out;
  for (const std::string& stem : test::golden_stems(kDir, ".plan"))  // "<name>.bf16" of <name>.bf16.plan
    if (stem.size() > 5 && stem.ends_with(".bf16")) out.push_back(stem.substr(0, stem.size() - 5));
  return out;
}

INSTANTIATE_TEST_SUITE_P(Files, PlanGoldenBf16, testing::ValuesIn(bf16_stems()), test::param_name);

}  // namespace
}  // namespace fact::discover
