// Round trips over tests/golden/graph/<name>.json and its expected canonical text <name>.txt:
// JSON -> text matches the golden text; text -> JSON -> text is the identity; JSON -> text
// -> JSON gives the same JSON.
#include <gtest/gtest.h>

#include "../golden_util.h"
#include "graph/json.h"
#include "graph/text.h"

namespace fact::graph {
namespace {

const std::filesystem::path kDir = test::test_dir() / "golden" / "graph";

class GraphGolden : public testing::TestWithParam<std::string> {};

TEST_P(GraphGolden, JsonPrintsGoldenText) {
  Graph g = graph_from_json_string(read_file(kDir / (GetParam() + ".json")));
  test::expect_golden(kDir / (GetParam() + ".txt"), print_text(g));
}

TEST_P(GraphGolden, TextToJsonToTextIsIdentity) {
  if (test::update_golden()) GTEST_SKIP() << "updating goldens";
  const std::string text = read_file(kDir / (GetParam() + ".txt"));
  Graph g = parse_text(text, GetParam() + ".txt");
  Graph back = graph_from_json_string(graph_to_json_string(g));
  EXPECT_EQ(print_text(back), text);
}

TEST_P(GraphGolden, JsonToTextToJsonIsIdentity) {
  Graph g = graph_from_json_string(read_file(kDir / (GetParam() + ".json")));
  Graph back = parse_text(print_text(g));
  EXPECT_EQ(graph_to_json(back).dump(), graph_to_json(g).dump());
}

INSTANTIATE_TEST_SUITE_P(Files, GraphGolden, testing::ValuesIn(test::golden_stems(kDir, ".json")),
                         test::param_name);

}  // namespace
}  // namespace fact::graph
