// Buckets of symbolic patterns in realization (engine/buckets.h).
#include <gtest/gtest.h>

#include "../golden_util.h"
#include "discover/symbolic_plan.h"
#include "engine/buckets.h"
#include "engine/realize.h"
#include "graph/io.h"

namespace fact::realize {
namespace {

using json = nlohmann::json;

const std::vector<graph::Symbol> kSymbols{{"B", 2, 4096, {8}, {}, std::nullopt}, {"T", 1, 512, {16}, {}, std::nullopt}};

TEST(Buckets, RangesStartAtTheSymbolMinAndFollowTheBounds) {
  const auto b = buckets_of(kSymbols[0]);
  ASSERT_EQ(b.size(), 10u);
  EXPECT_EQ(b[0].lo, 2);
  EXPECT_EQ(b[0].hi, 8);
  EXPECT_EQ(b[1].lo, 9);
  EXPECT_EQ(b[1].hi, 16);
  EXPECT_EQ(b.back().lo, 2049);
  EXPECT_EQ(b.back().hi, 4096);
}

TEST(Buckets, ProblemSymbolsAreSizeExpressionsOnly) {
  const json p{{"kind", "gemm"}, {"m", "4*B"}, {"n", 32}, {"lda", 64}, {"dtype_a", "float32"}, {"layout_a", "row"},
               {"strides", {{"q", {"B*T", 1}}}}};
  EXPECT_EQ(problem_symbols(p, kSymbols), (std::vector<std::string>{"B", "T"}));
  const json at = specialize_problem(p, kSymbols, {{"B", 16}, {"T", 3}});
  EXPECT_EQ(at.at("m"), 64);
  EXPECT_EQ(at.at("strides").at("q").at(0), 48);
  EXPECT_EQ(at.at("dtype_a"), "float32");
  EXPECT_TRUE(problem_symbols(json{{"m", 8}, {"dtype_a", "float32"}}, kSymbols).empty());
}

// Realization plans one static problem per bucket, at the bucket's upper size: the golden
// MLP (M = 4*B, buckets 16, 256, 1024 named) gives three candidate lists per GEMM.
TEST(Buckets, RealizationPlansEachBucketAtItsUpperSize) {
  const auto g = graph::load_symbolic_graph(test::test_dir() / "golden" / "symbolic" / "mlp_batch_named_buckets.graph.json");
  ASSERT_TRUE(g.has_value());
  const json plan = json::parse(discover::plan_to_json_string(
      discover::make_symbolic_plan(*g, discover::builtin_rules(), Precision::tf32)));
  std::map<std::string, BuildRequest> requests;
  const auto planned = plan_candidates(plan, Precision::tf32, 1, std::nullopt, requests);
  std::vector<std::string> ids;
  for (const auto& p : planned) {
    ids.push_back(p.id);
    EXPECT_FALSE(p.kernels.empty()) << p.id << ": " << p.unsupported;
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"p0[B<=16]", "p0[B<=256]", "p0[B<=1024]", "p1[B<=16]", "p1[B<=256]",
                                           "p1[B<=1024]"}));
}

TEST(Buckets, AProblemOverTwoSymbolsIsNotRealized) {
  json plan{{"format", "fact.plan"}, {"version", 2}, {"precision", "tf32"},
            {"symbols", {{"B", {{"min", 2}, {"seen", {8}}}}, {"T", {{"min", 1}, {"seen", {16}}}}}},
            {"patterns", {{{"id", "p0"}, {"rule", "gemm"}, {"problem", {{"kind", "gemm"}, {"m", "B*T"}}}}}}};
  std::map<std::string, BuildRequest> requests;
  const auto planned = plan_candidates(plan, Precision::tf32, 1, std::nullopt, requests);
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_TRUE(planned[0].kernels.empty());
  EXPECT_NE(planned[0].unsupported.find("depends on B and T: buckets are over one symbol"), std::string::npos)
      << planned[0].unsupported;
}

}  // namespace
}  // namespace fact::realize
