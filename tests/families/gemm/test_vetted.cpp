// Vetted examples: the shipped data parses, retrieval picks the nearest example of the same
// family, and the seed leads the search so a budget of 1 builds it.
#include <gtest/gtest.h>

#include "base/error.h"
#include "families/gemm/vetted.h"

using namespace fact::realize;

namespace {
GemmProblem problem(int64_t m, int64_t n, int64_t k, int64_t l = 1) {
  GemmProblem p;
  p.m = m; p.n = n; p.k = k; p.l = l;
  p.lda = k; p.ldb = n; p.ldd = n;
  return p;
}
const GemmFamilyKey kTf32RowRow{"tf32", DType::f32, Layout::Row, Layout::Row, false};
}  // namespace

TEST(Vetted, ShippedExamplesParseAndAreInTheSpace) {
  const auto& ex = shipped_vetted();
  ASSERT_GE(ex.size(), 4u);
  for (const auto& v : ex) {
    auto space = gemm_tuning_space(v.family, problem(v.m, v.n, v.k, v.l), 132, 0);
    bool found = false;
    for (const auto& c : space) found |= gemm_kernel_name(v.family, c) == gemm_kernel_name(v.family, v.config);
    EXPECT_TRUE(found) << v.name << " is not a configuration of the tuning space";
    EXPECT_GT(v.median_ms, 0.0) << v.name;
  }
}

TEST(Vetted, NearestShapeOfTheSameFamilyWins) {
  const auto& ex = shipped_vetted();
  auto near_square = nearest_vetted(ex, kTf32RowRow, problem(3072, 3072, 4096));
  ASSERT_TRUE(near_square.has_value());
  EXPECT_EQ(near_square->name, "square_4096_tf32");
  auto near_large_k = nearest_vetted(ex, kTf32RowRow, problem(128, 384, 1 << 20));
  ASSERT_TRUE(near_large_k.has_value());
  EXPECT_EQ(near_large_k->name, "large_k_256x256x524288_tf32");
  EXPECT_EQ(near_large_k->config.scheduler, TileScheduler::StreamK);
  const GemmFamilyKey f16_col_col{"f16", DType::f16, Layout::Col, Layout::Col, false};
  EXPECT_FALSE(nearest_vetted(ex, f16_col_col, problem(4096, 4096, 4096)).has_value());
}

TEST(Vetted, AFusedTailMatchesTheExamplesOfItsGemmFamily) {
  // The wide layer with its Swish tail (an EVT family): its shape's example still applies.
  GemmFamilyKey fused{"tf32", DType::f32, Layout::Row, Layout::Col, true};
  fused.epilogue_tree = nlohmann::json::parse(R"({"op":"mul","args":[{"op":"silu","args":[{"op":"add","args":[{"acc":true},{"input":"bias"}]}]},{"scalar":2.0}]})");
  fused.epilogue_broadcast = nlohmann::json::parse(R"({"bias":"n"})");
  auto v = nearest_vetted(shipped_vetted(), fused, problem(128, 32768, 32768));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->name, "wide_linear_128x32768x32768_tf32_bias");
  EXPECT_EQ(v->config.cluster_n, 2);
  // The 1024-row Linear of tails (a)-(i) finds its own example, not the wide one.
  v = nearest_vetted(shipped_vetted(), fused, problem(1024, 8192, 8192));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->name, "linear_1024x8192x8192_tf32_bias");
}

TEST(Vetted, SeedLeadsTheSpaceWithoutDuplicates) {
  auto p = problem(4096, 4096, 4096);
  auto space = gemm_kernel_choices({kTf32RowRow}, p, 132, 0);
  const size_t before = space.size();
  const GemmConfig seed = space.back().config;
  seed_choices(space, kTf32RowRow, seed);
  EXPECT_EQ(space.size(), before);
  EXPECT_EQ(gemm_kernel_name(kTf32RowRow, space.front().config), gemm_kernel_name(kTf32RowRow, seed));
}

TEST(Vetted, StagedAndThreeXTf32FamiliesMatchOnlyTheirOwn) {
  const auto ex = parse_vetted(R"({"format": "fact.vetted", "version": 1, "examples": [
    {"name": "ta", "mma": "tf32", "layout_a": "col", "layout_b": "row", "bias": false, "stage": "A",
     "m": 2048, "n": 4096, "k": 8192, "median_ms": 0.39,
     "config": {"tile": [128, 256, 32], "cluster": [2, 1], "schedule": "coop", "scheduler": "persistent"}},
    {"name": "x3", "mma": "3xtf32", "layout_a": "row", "layout_b": "row", "bias": false,
     "m": 4096, "n": 4096, "k": 4096, "median_ms": 1.27,
     "config": {"tile": [128, 128, 32], "cluster": [2, 1], "schedule": "coop", "scheduler": "persistent"}}]})");
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_TRUE(ex[0].family.stage_a && !ex[0].family.stage_b);
  EXPECT_EQ(ex[1].family.split, 3);
  EXPECT_TRUE(ex[1].family.stage_a && ex[1].family.stage_b);
  GemmFamilyKey ta{"tf32", DType::f32, Layout::Col, Layout::Row, false, true, false};
  GemmFamilyKey tab{"tf32", DType::f32, Layout::Col, Layout::Row, false, true, true};
  EXPECT_EQ(nearest_vetted(ex, ta, problem(2048, 4096, 8192))->name, "ta");
  EXPECT_FALSE(nearest_vetted(ex, tab, problem(2048, 4096, 8192)).has_value());
  GemmFamilyKey x3{"3xtf32", DType::f32, Layout::Row, Layout::Row, false, true, true, 3};
  EXPECT_EQ(nearest_vetted(ex, x3, problem(8192, 8192, 1024))->name, "x3");
  EXPECT_THROW(parse_vetted(R"({"format": "fact.vetted", "version": 1, "examples": [
    {"name": "bad", "mma": "tf32", "layout_a": "row", "layout_b": "row", "bias": false, "stage": "C",
     "m": 1, "n": 1, "k": 1, "config": {"tile": [128, 128, 32], "cluster": [1, 1], "schedule": "coop",
     "scheduler": "persistent"}}]})"), fact::Error);
}

TEST(Vetted, MalformedDocumentNamesTheEntry) {
  EXPECT_THROW(parse_vetted("{}"), fact::Error);
  try {
    parse_vetted(R"({"format": "fact.vetted", "version": 1, "examples": [{"name": "bad", "mma": "int8"}]})");
    FAIL();
  } catch (const fact::Error& e) {
    EXPECT_NE(std::string(e.what()).find("vetted example bad"), std::string::npos);
  }
}
