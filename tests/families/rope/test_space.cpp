// The rope family's problem reader, tuning space, names and rendered source.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "families/family.h"
#include "families/rope/codegen.h"
#include "families/rope/space.h"

namespace fact::realize {

nlohmann::json llama_rope_q(const char* dtype);  // Llama-3-8B's q at full size (B 16, T 2048, 32 heads of 128)
nlohmann::json llama_rope_q(const char* dtype) {
  const nlohmann::json bthd = {2048 * 4096, 128, 4096};  // view(B, T, H, D).transpose(1, 2)
  return {{"kind", "rope"},   {"form", "half"},  {"dims", {16, 32, 2048}}, {"head_dim", 128}, {"dtype", dtype},
          {"strides", {{"x", bthd}, {"cos", {0, 0, 128}}, {"sin", {0, 0, 128}}, {"out", bthd}}}};
}

namespace {

TEST(RopeProblem, ReadsThePlansProblem) {
  const RopeProblem p = rope_problem_from_json(llama_rope_q("bfloat16"));
  EXPECT_EQ(p.form, RopeForm::half);
  EXPECT_EQ(p.rows(), 16 * 32 * 2048);
  EXPECT_EQ(p.dtype, DType::bf16);
  EXPECT_EQ(p.x[2], 4096);
  EXPECT_EQ(p.extent(p.x), 16LL * 2048 * 4096);  // the [B, T, 4096] projection it is a view of
  EXPECT_EQ(p.extent(p.cos), 2048 * 128);        // one [T, D] table
}

std::string error_of(const nlohmann::json& j) {
  try {
    rope_problem_from_json(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RopeProblem, NamesTheBadField) {
  auto j = llama_rope_q("float32");
  j["head_dim"] = 127;
  EXPECT_NE(error_of(j).find("head_dim"), std::string::npos) << error_of(j);
  j = llama_rope_q("float32");
  j["form"] = "complex";
  EXPECT_NE(error_of(j).find("form"), std::string::npos);
  j = llama_rope_q("float64");
  EXPECT_NE(error_of(j).find("dtype"), std::string::npos);
  j = llama_rope_q("float32");
  j["strides"]["out"] = {0, 0, 128};  // every batch and head written to one place
  EXPECT_NE(error_of(j).find("strides.out"), std::string::npos) << error_of(j);
  j = llama_rope_q("float32");
  j["strides"].erase("sin");
  EXPECT_NE(error_of(j).find("missing \"sin\""), std::string::npos) << error_of(j);
  j = llama_rope_q("float32");
  j["dims"] = {16, 0, 2048};
  EXPECT_NE(error_of(j).find("dims"), std::string::npos);
  // Sizes whose extent or row count a 64-bit integer does not hold.
  j = llama_rope_q("float32");
  j["strides"]["cos"] = {0, 0, int64_t(1) << 60};
  EXPECT_EQ(error_of(j), "rope problem: strides.cos[2] = 1152921504606846976 passes 2^48");
  j = llama_rope_q("float32");
  j["strides"]["cos"] = {0, 0, int64_t(1) << 40};  // 2047 rows 2^40 apart
  EXPECT_EQ(error_of(j), "rope problem: cos: spans 2250700302057600 elements of 4 bytes, more than 2^48 bytes");
  j = llama_rope_q("float32");
  j["dims"] = {int64_t(1) << 40, 1, 1};
  EXPECT_NE(error_of(j).find("overflows int64"), std::string::npos) << error_of(j);
}

TEST(RopeSpace, SixteenByteVectorsRankFirstAndEveryConfigFits) {
  for (const char* dtype : {"float32", "bfloat16", "float16"}) {
    const RopeProblem p = rope_problem_from_json(llama_rope_q(dtype));
    const RopeKernel k = rope_kernel(p);
    const auto space = rope_tuning_space(k, p, 132, 100);
    ASSERT_EQ(space.size(), 6u) << dtype;  // 3 CTA sizes x 2 vector widths, all fit d 128
    EXPECT_EQ(space[0].vec * int(dtype_bytes(p.dtype)), 16) << dtype;
    EXPECT_EQ(space[0].threads, 256) << dtype;
    for (const auto& c : space) EXPECT_TRUE(rope_config_fits(k, c, p));
    EXPECT_EQ(rope_tuning_space(k, p, 132, 0).size(), size_t(kRopeDefaultBudget));
  }
}

TEST(RopeProblem, ANarrowedOutputIsWrittenInBf16FromFp32Inputs) {
  nlohmann::json j = llama_rope_q("float32");
  j["out_dtype"] = "bfloat16";
  const RopeProblem p = rope_problem_from_json(j);
  EXPECT_EQ(p.dtype, DType::f32);
  EXPECT_EQ(p.out_dtype, DType::bf16);
  const RopeKernel k = rope_kernel(p);
  ASSERT_TRUE(k.out_element.has_value());
  const RopeConfig c{256, 4};
  EXPECT_EQ(rope_kernel_name(k, c), "fact_rope_half_f32_to_bf16_d128_t256_v4");
  const std::string src = render_rope_kernel(k, c);
  EXPECT_NE(src.find("using ElementOut = __nv_bfloat16;"), std::string::npos);
  EXPECT_NE(src.find("using Element = float;"), std::string::npos);
  // Absent: out is x's dtype; bf16 x cannot be written as fp32, nor fp32 as int.
  EXPECT_EQ(rope_problem_from_json(llama_rope_q("bfloat16")).out_dtype, DType::bf16);
  nlohmann::json wider = llama_rope_q("bfloat16");
  wider["out_dtype"] = "float32";
  EXPECT_THROW(rope_problem_from_json(wider), fact::Error);
}

TEST(RopeSpace, PrunedByTheStridesAndTheRowSplit) {
  RopeProblem p = rope_problem_from_json(llama_rope_q("bfloat16"));
  const RopeKernel k = rope_kernel(p);
  p.x[2] = 4100;  // rows 8-byte aligned only: no 16-byte vector of bf16 stays aligned
  for (const auto& c : rope_tuning_space(k, p, 132, 100)) EXPECT_EQ(c.vec, 4);
  p.x[2] = 4101;  // odd: nothing fits
  EXPECT_TRUE(rope_tuning_space(k, p, 132, 100).empty());
  RopeProblem q = rope_problem_from_json(llama_rope_q("float32"));
  q.head_dim = 6;  // half of 6 is 3: no 16- or 8-byte vector of fp32 splits it
  EXPECT_TRUE(rope_tuning_space(rope_kernel(q), q, 132, 100).empty());
  q.form = RopeForm::pairs;  // 6 = 3 pairs, 8-byte vectors of 2 fp32 hold one pair
  const auto pairs = rope_tuning_space(rope_kernel(q), q, 132, 100);
  ASSERT_FALSE(pairs.empty());
  for (const auto& c : pairs) EXPECT_EQ(c.vec, 2);
}

TEST(RopeSpace, NamesSpellTheKernel) {
  const RopeProblem p = rope_problem_from_json(llama_rope_q("bfloat16"));
  EXPECT_EQ(rope_kernel_name(rope_kernel(p), {256, 8}), "fact_rope_half_bf16_d128_t256_v8");
  RopeKernel k = rope_kernel(p);
  k.form = RopeForm::pairs;
  k.element = DType::f32;
  EXPECT_EQ(rope_kernel_name(k, {128, 2}), "fact_rope_pairs_f32_d128_t128_v2");
  EXPECT_EQ(rope_threads_per_row(rope_kernel(p), {256, 8}), 8);
  EXPECT_EQ(rope_threads_per_row(k, {128, 2}), 64);
}

TEST(RopeCodegen, FillsEveryPlaceholder) {
  const RopeProblem p = rope_problem_from_json(llama_rope_q("float16"));
  const std::string src = render_rope_kernel(rope_kernel(p), {512, 8});
  EXPECT_EQ(src.find("{{"), std::string::npos);
  EXPECT_NE(src.find("fact_rope_half_f16_d128_t512_v8_run"), std::string::npos);
  EXPECT_NE(src.find("using Element = __half;"), std::string::npos);
  EXPECT_NE(src.find("constexpr int kHeadDim = 128;"), std::string::npos);
  EXPECT_NE(src.find("typedef struct FactRopeArgs"), std::string::npos);  // the ABI pasted in
  EXPECT_THROW(render_rope("{{NAME}} {{UNKNOWN}}", rope_kernel(p), {512, 8}), Error);
}

TEST(RopeFamily, IsListedWithItsRule) {
  const families::Family* f = families::find_family("rope");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->rules().size(), 1u);
  EXPECT_EQ(f->rules()[0].kernel_family, "rope");
  EXPECT_EQ(f->problem_text(llama_rope_q("bfloat16")), "rope half [16x32x2048x128] bfloat16");
}

}  // namespace
}  // namespace fact::realize
