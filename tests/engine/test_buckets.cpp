// Buckets of symbolic patterns in realization (engine/buckets.h).
#include <gtest/gtest.h>

#include "engine/buckets.h"

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

}  // namespace
}  // namespace fact::realize
