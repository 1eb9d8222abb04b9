// A discovered tail attached to a GEMM problem: what the fused kernel computes (bias and
// alpha folded in), which families carry it, and how its kernels are named.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "families/gemm/problem.h"
#include "families/gemm/space.h"
#include "families/gemm/verify_tune.h"

using namespace fact::realize;
using nlohmann::json;
using fact::Precision;

namespace {
GemmProblem linear_8192() {  // nn.Linear(8192, 8192) on 1024 rows: B = W^T, column-major
  GemmProblem p;
  p.m = 1024; p.n = 8192; p.k = 8192;
  p.layout_b = Layout::Col;
  p.lda = p.k; p.ldb = p.k; p.ldd = p.n;
  p.bias_n = true;
  return p;
}
json relu_plus_c0() {
  return {{"tree", {{"op", "relu"}, {"args", {{{"op", "add"}, {"args", {{{"acc", true}}, {{"input", "c0"}}}}}}}}},
          {"broadcast", {{"c0", "n"}}}};
}
}  // namespace

TEST(FusedTail, KernelTreeFoldsAlphaAndTheGemmsBias) {
  GemmProblem p = linear_8192();
  p.alpha = 2.0;
  ASSERT_EQ(attach_tail(p, relu_plus_c0()), "");
  ASSERT_TRUE(p.fused());
  EXPECT_EQ(kernel_tail_tree(p).dump(),
            R"({"args":[{"args":[{"args":[{"args":[{"acc":true},{"scalar":2.0}],"op":"mul"},{"input":"bias"}],"op":"add"},{"input":"c0"}],"op":"add"}],"op":"relu"})");
  EXPECT_EQ(kernel_tail_broadcast(p).dump(), R"({"bias":"n","c0":"n"})");
  // The plain GEMM: no tree at all.
  EXPECT_TRUE(kernel_tail_tree(linear_8192()).is_null());
}

TEST(FusedTail, WhatCannotBeGeneratedStaysUnfusedWithTheReason) {
  GemmProblem p = linear_8192();
  const json pow25 = {{"tree", {{"op", "pow"}, {"args", {{{"acc", true}}, {{"scalar", 2.5}}}}}}, {"broadcast", json::object()}};
  const std::string why = attach_tail(p, pow25);
  EXPECT_NE(why.find("exponent 2.5"), std::string::npos) << why;
  EXPECT_FALSE(p.fused());
  EXPECT_NE(attach_tail(p, json{{"expr", "relu(acc)"}}).find("no \"tree\""), std::string::npos);
  EXPECT_FALSE(p.fused());
}

TEST(FusedTail, EveryFamilyCarriesTheTailAndTheNameChangesWithIt) {
  GemmProblem p = linear_8192();
  std::string why;
  const auto plain = gemm_families(p, Precision::tf32, why);
  ASSERT_FALSE(plain.empty()) << why;
  ASSERT_EQ(attach_tail(p, relu_plus_c0()), "");
  const auto fused = gemm_families(p, Precision::tf32, why);
  ASSERT_EQ(fused.size(), plain.size());
  for (const auto& f : fused) EXPECT_EQ(f.epilogue_tree, kernel_tail_tree(p));
  const GemmConfig c{128, 256, 32, 1, 2, Schedule::Cooperative, TileScheduler::Persistent};
  const std::string plain_name = gemm_kernel_name(plain[0], c), fused_name = gemm_kernel_name(fused[0], c);
  EXPECT_NE(plain_name.find("_lincomb-biasn"), std::string::npos) << plain_name;
  EXPECT_NE(fused_name.find("_evt"), std::string::npos) << fused_name;
  // The same tree with c0 along M instead of N is another kernel.
  GemmProblem q = linear_8192();
  json along_m = relu_plus_c0();
  along_m["broadcast"]["c0"] = "m";
  ASSERT_EQ(attach_tail(q, along_m), "");
  EXPECT_NE(gemm_kernel_name(gemm_families(q, Precision::tf32, why)[0], c), fused_name);
}

TEST(FusedTail, UnalignedDHasNoFusedFamilyAndSaysWhy) {
  GemmProblem p;  // KernelBench level 1 #8: N = 5921 leaves D's rows off 16 bytes
  p.m = 8205; p.k = 2949; p.n = 5921;
  p.lda = p.k; p.ldb = p.n; p.ldd = p.n;
  ASSERT_EQ(attach_tail(p, json{{"tree", {{"op", "relu"}, {"args", {{{"acc", true}}}}}}}), "");
  std::string why;
  EXPECT_TRUE(gemm_families(p, Precision::tf32, why).empty());
  EXPECT_NE(why.find("fused tail needs D's leading stride"), std::string::npos) << why;
}

TEST(FusedTail, AHeavyTailRanksPingpongFirstWhereItsArithmeticWouldBeExposed) {
  // Tail (h): Swish, tanh, GELU, hardtanh on 8 M elements: about 0.02 ms of fp32 arithmetic
  // a cooperative kernel would add to its 0.36 ms; pingpong overlaps it with the mainloop.
  GemmProblem p = linear_8192();
  const json add = {{"op", "add"}, {"args", {{{"acc", true}}, {{"input", "c0"}}}}};
  const json swish = {{"op", "mul"}, {"args", {add, {{"op", "sigmoid"}, {"args", {add}}}}}};
  const json gelu_tanh = {{"op", "gelu"}, {"args", json::array({json{{"op", "tanh"}, {"args", json::array({swish})}}})}};
  const json tail = {{"op", "hardtanh"}, {"args", json::array({gelu_tanh, json{{"scalar", -1.0}}, json{{"scalar", 1.0}}})}};
  std::string why;
  const auto plain = gemm_families(p, Precision::tf32, why);
  ASSERT_EQ(attach_tail(p, json{{"tree", tail}, {"broadcast", {{"c0", "n"}}}}), "");
  const auto fused = gemm_families(p, Precision::tf32, why);
  const GemmConfig coop{128, 256, 32, 1, 1, Schedule::Cooperative, TileScheduler::Persistent};
  const double extra = estimate_seconds(fused[0], coop, p, 132) - estimate_seconds(plain[0], coop, p, 132);
  // sigmoid, tanh, gelu; hardtanh, mul and four adds (the GEMM's bias and c0, twice).
  EXPECT_NEAR(extra, 1024.0 * 8192 * (20 * 3 + 6) / 33e12, 1e-9);
  const GemmConfig ping{128, 128, 32, 1, 1, Schedule::Pingpong, TileScheduler::Persistent};
  EXPECT_DOUBLE_EQ(estimate_seconds(fused[0], ping, p, 132), estimate_seconds(plain[0], ping, p, 132));
}

TEST(FusedTail, TheAtenTailIsOnePassOverDPerNode) {
  GemmProblem p = linear_8192();
  ASSERT_EQ(attach_tail(p, json{{"tree", {{"op", "relu"}, {"args", {{{"acc", true}}}}}}, {"nodes", {"sub", "mul", "relu"}}}), "");
  EXPECT_EQ(p.tail_nodes, 3);
  // Three kernels, each reading and writing D (32 MiB of fp32) at 0.9 x 4.23 TB/s.
  EXPECT_NEAR(aten_tail_ms(p), 3 * 2.0 * 1024 * 8192 * 4 / (0.9 * 4.23e12) * 1e3, 1e-9);
}
