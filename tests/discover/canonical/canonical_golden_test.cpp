// Golden tests of the canonical form: tests/golden/canonical/<name>.txt (graph text, one
// behaviour per file, described in its header comment) -> expected canonical text
// <name>.canon (the canonical graph and what was dropped or rewritten, canonical_to_text).
// FACT_UPDATE_GOLDEN=1 rewrites the .canon files.
#include <gtest/gtest.h>

#include "../../golden_util.h"
#include "discover/canonical/canonical.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

const std::filesystem::path kDir = test::test_dir() / "golden" / "canonical";

class CanonicalGolden : public testing::TestWithParam<std::string> {};

TEST_P(CanonicalGolden, CanonicalTextMatches) {
  const std::string name = GetParam() + ".txt";
  const graph::Graph g = graph::parse_text(read_file(kDir / name), name);
  const CanonicalGraph c = canonicalize(g);
  test::expect_golden(kDir / (GetParam() + ".canon"), canonical_to_text(c));
  // The canonical graph is a graph: it prints and parses back to itself.
  EXPECT_EQ(graph::parse_text(graph::print_text(c.graph), name), c.graph);
}

INSTANTIATE_TEST_SUITE_P(Files, CanonicalGolden, testing::ValuesIn(test::golden_stems(kDir, ".txt")),
                         test::param_name);

TEST(Canonical, GraphWithNothingToCanonicalizeIsUnchanged) {
  const graph::Graph g = graph::parse_text(read_file(test::test_dir() / "golden" / "discover" /
                                                     "attention_mha_sdpa.txt"), "sdpa");
  const CanonicalGraph c = canonicalize(g);
  EXPECT_EQ(c.graph, g);
  EXPECT_TRUE(c.dropped.empty());
  EXPECT_TRUE(c.rewritten.empty());
}

}  // namespace
}  // namespace fact::discover
