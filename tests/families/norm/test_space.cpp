// The norm family's problem reader, tuning space, names and rendered source.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "families/family.h"
#include "families/norm/codegen.h"
#include "families/norm/space.h"

namespace fact::realize {

nlohmann::json llama_ffn_norm();  // Llama-3-8B's ffn_norm at full size, with its add and sum
nlohmann::json llama_ffn_norm() {
  return {{"kind", "norm"}, {"norm", "rms"}, {"rows", 32768}, {"cols", 4096}, {"dtype", "bfloat16"},
          {"out_dtype", "bfloat16"}, {"param_dtype", "bfloat16"}, {"eps", 1e-5}, {"weight", true}, {"bias", false},
          {"residual", true}, {"sum_output", "to_2"}, {"strides", {{"x", 4096}, {"residual", 4096}}}, {"form", "written"}};
}

namespace {

TEST(NormProblem, ReadsThePlansProblem) {
  const NormProblem p = norm_problem_from_json(llama_ffn_norm());
  EXPECT_EQ(p.norm, NormKind::rms);
  EXPECT_EQ(p.rows, 32768);
  EXPECT_EQ(p.dtype, DType::bf16);
  EXPECT_TRUE(p.writes_sum());
  EXPECT_EQ(p.sum_output, "to_2");
  EXPECT_EQ(p.residual_stride, 4096);
}

TEST(NormProblem, NamesTheBadField) {
  auto j = llama_ffn_norm();
  j["residual"] = false;
  EXPECT_THROW(norm_problem_from_json(j), Error);  // sum_output without a residual, strides.residual set
  j = llama_ffn_norm();
  j["strides"]["x"] = 100;
  try {
    norm_problem_from_json(j);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("strides.x"), std::string::npos) << e.what();
  }
  j = llama_ffn_norm();
  j["norm"] = "batch";
  EXPECT_THROW(norm_problem_from_json(j), Error);
  j = llama_ffn_norm();
  j.erase("eps");
  EXPECT_THROW(norm_problem_from_json(j), Error);
  j = llama_ffn_norm();
  auto error_of = [](const nlohmann::json& bad) -> std::string {
    try {
      norm_problem_from_json(bad);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  j["strides"]["residual"] = int64_t(1) << 50;
  EXPECT_EQ(error_of(j), "norm problem: strides.residual = 1125899906842624 passes 2^48");
  j = llama_ffn_norm();
  j["strides"]["x"] = int64_t(1) << 40;  // 32767 rows 2^40 apart: 2^56 bytes
  EXPECT_EQ(error_of(j), "norm problem: strides.x: spans 36027697507340288 elements of 2 bytes, more than 2^48 bytes");
  j = llama_ffn_norm();
  j["rows"] = int64_t(1) << 31;
  EXPECT_EQ(error_of(j), "norm problem: \"rows\" must be an integer from 1 to 2^31 - 1, got 2147483648");
}

TEST(NormSpace, PrunedByTheRowLengthAndRankedWithinTheBudget) {
  const NormProblem p = norm_problem_from_json(llama_ffn_norm());
  const NormKernel k = norm_kernel(p);
  const auto space = norm_tuning_space(k, p, 132, 100);
  ASSERT_FALSE(space.empty());
  for (const auto& c : space) {
    EXPECT_TRUE(norm_config_fits(k, c, p));
    EXPECT_EQ(k.cols % c.vec, 0);
    EXPECT_LE(norm_items(k, c) * c.vec, 64);
    EXPECT_LE(c.threads_per_row, k.cols / c.vec);
  }
  EXPECT_EQ(space.front().vec, 8);  // 16-byte bf16 loads rank first
  EXPECT_EQ(norm_tuning_space(k, p, 132, 0).size(), size_t(kNormDefaultBudget));
  EXPECT_EQ(norm_tuning_space(k, p, 132, 3).size(), 3u);
  // An odd row length leaves 4-byte vectors of bf16 pairs at most; 2 elements per vector.
  NormProblem odd = p;
  odd.cols = 4098;
  odd.x_stride = odd.residual_stride = 4098;
  for (const auto& c : norm_tuning_space(norm_kernel(odd), odd, 132, 100)) EXPECT_EQ(c.vec, 2);
  // A row of 3 fp32 elements with stride 3: no vector of 4 bytes or more divides it but one element.
  NormProblem tiny = p;
  tiny.dtype = tiny.out_dtype = DType::f32;
  tiny.cols = tiny.x_stride = tiny.residual_stride = 3;
  const auto t = norm_tuning_space(norm_kernel(tiny), tiny, 132, 100);
  for (const auto& c : t) EXPECT_EQ(c.vec, 1);
}

TEST(NormSpace, SmallCtasThatCannotFillAnSmRankBelowFullOnes) {
  // minGPT's LayerNorm in bf16 (65536 rows of 768): a 32-thread CTA a row ran at 0.69x of a
  // copy on the H200 (32 CTAs an SM hold 1024 threads); the budget of 2 must pick CTAs of at
  // least 64 threads.
  auto j = llama_ffn_norm();
  j["norm"] = "layer";
  j["rows"] = 65536;
  j["cols"] = 768;
  j["bias"] = true;
  j["residual"] = false;
  j["sum_output"] = nullptr;
  j["strides"] = {{"x", 768}, {"residual", nullptr}};
  const NormProblem p = norm_problem_from_json(j);
  const NormKernel k = norm_kernel(p);
  const auto two = norm_tuning_space(k, p, 132, 2);
  ASSERT_EQ(two.size(), 2u);
  for (const auto& c : two) EXPECT_GE(c.rows_per_cta * c.threads_per_row, 64) << norm_kernel_name(k, c);
  const NormConfig small{1, 32, 8}, full{4, 32, 8};
  EXPECT_GT(norm_estimate_seconds(k, small, p, 132), 1.3 * norm_estimate_seconds(k, full, p, 132));
}

TEST(NormCodegen, NameAndSourceSayTheKernel) {
  const NormProblem p = norm_problem_from_json(llama_ffn_norm());
  const NormKernel k = norm_kernel(p);
  const NormConfig c{2, 256, 8};
  EXPECT_EQ(norm_kernel_name(k, c), "fact_norm_rms_bf16_bf16_bf16_c4096_rwn_r2_t256_v8");
  const std::string src = render_norm_kernel(k, c);
  for (const char* s : {"constexpr int kNorm = 1;", "constexpr int64_t kCols = 4096;", "constexpr bool kResidual = true;",
                        "constexpr bool kBias = false;", "using Element = __nv_bfloat16;", "constexpr int kVec = 8;",
                        "fact_norm_rms_bf16_bf16_bf16_c4096_rwn_r2_t256_v8_can_implement", "typedef struct FactNormArgs"})
    EXPECT_NE(src.find(s), std::string::npos) << s;
  EXPECT_EQ(src.find("{{"), std::string::npos);
  EXPECT_THROW(render_norm("{{NOPE}}", k, c), Error);
}

}  // namespace
}  // namespace fact::realize

namespace fact::families {
namespace {

TEST(NormFamilyPlan, KernelsAreRequestedOnceAndOddRowsAreVendorOnly) {
  const Family* f = find_family("norm");
  ASSERT_NE(f, nullptr);
  const std::optional<GpuInfo> gpu;
  const PlanContext ctx{Precision::tf32, 2, &gpu, 132};
  std::map<std::string, BuildRequest> requests;
  nlohmann::json pat = {{"id", "p0"}, {"rule", "norm"}, {"problem", realize::llama_ffn_norm()}};
  const auto a = f->plan(pat, ctx, requests);
  const auto b = f->plan(pat, ctx, requests);  // the same problem: the same kernels, requested once
  ASSERT_EQ(a->kernels.size(), 2u);
  EXPECT_EQ(a->kernels, b->kernels);
  EXPECT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests.at(a->kernels[0]).symbol, a->kernels[0]);
  EXPECT_EQ(a->fields.at("aten_check"), "module");
  EXPECT_TRUE(a->unsupported.empty());
  // The tuning key says whether the sum is written, not where.
  EXPECT_EQ(a->tuning_problem(pat["problem"]).at("sum_output"), true);
  // bf16 rows of 3 elements: no 4-byte vector divides them.
  pat["problem"]["cols"] = 3;
  pat["problem"]["strides"] = {{"x", 3}, {"residual", 3}};
  const auto odd = f->plan(pat, ctx, requests);
  EXPECT_TRUE(odd->kernels.empty());
  EXPECT_NE(odd->unsupported.find("no configuration of the norm kernels fits cols 3"), std::string::npos) << odd->unsupported;
  // A problem that cannot be read throws (the pattern is then not realized at all).
  pat["problem"].erase("rows");
  EXPECT_THROW(f->plan(pat, ctx, requests), Error);
}

}  // namespace
}  // namespace fact::families
