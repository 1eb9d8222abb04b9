// Tuning space, kernel names, symbols, family selection and codegen of the sm90 GEMM family.
#include <gtest/gtest.h>

#include <set>

#include "realize/codegen.h"
#include "realize/gemm_space.h"
#include "realize/gemm_verify_tune.h"

using namespace fact::realize;
using fact::Precision;

namespace {
GemmProblem square_f32(int64_t n) {
  GemmProblem p;
  p.m = p.n = p.k = n;
  p.lda = p.ldb = p.ldd = n;
  return p;
}
}  // namespace

TEST(GemmFamily, Fp32UnderTf32IsTf32Family) {
  std::string why;
  auto f = gemm_family(square_f32(4096), Precision::tf32, why);
  ASSERT_TRUE(f.has_value()) << why;
  EXPECT_EQ(f->mma, "tf32");
  EXPECT_EQ(f->layout_a, Layout::Row);
}

TEST(GemmFamily, Fp32UnderFp32HasNoCutlassFamilyAndSaysWhy) {
  std::string why;
  EXPECT_FALSE(gemm_family(square_f32(4096), Precision::fp32, why).has_value());
  EXPECT_NE(why.find("fp32 policy"), std::string::npos);
}

TEST(GemmFamily, UnalignedLeadingDimensionIsRefused) {
  auto p = square_f32(4096);
  p.lda = 4097;  // not a multiple of 4 floats = 16 bytes
  std::string why;
  EXPECT_FALSE(gemm_family(p, Precision::tf32, why).has_value());
  EXPECT_NE(why.find("16 bytes"), std::string::npos);
}

TEST(GemmSpace, HasAtLeastEightDistinctConfigsWithBothSchedules) {
  std::string why;
  auto p = square_f32(4096);
  auto f = *gemm_family(p, Precision::tf32, why);
  auto space = gemm_tuning_space(f, p, 132, 0);
  ASSERT_GE(space.size(), 8u);
  std::set<std::string> names;
  bool coop = false, pingpong = false, cluster2 = false;
  for (const auto& c : space) {
    names.insert(gemm_kernel_name(f, c));
    coop |= c.schedule == Schedule::Cooperative;
    pingpong |= c.schedule == Schedule::Pingpong;
    cluster2 |= c.cluster_m * c.cluster_n == 2;
    EXPECT_EQ(c.tile_k, 32);  // 128 bytes of fp32
    if (c.schedule == Schedule::Cooperative) EXPECT_GE(c.tile_m, 128);
  }
  EXPECT_EQ(names.size(), space.size());
  EXPECT_TRUE(coop && pingpong && cluster2);
}

TEST(GemmSpace, BudgetKeepsTheBestRanked) {
  std::string why;
  auto p = square_f32(4096);
  auto f = *gemm_family(p, Precision::tf32, why);
  auto all = gemm_tuning_space(f, p, 132, 0);
  auto two = gemm_tuning_space(f, p, 132, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(gemm_kernel_name(f, two[0]), gemm_kernel_name(f, all[0]));
  EXPECT_EQ(gemm_kernel_name(f, two[1]), gemm_kernel_name(f, all[1]));
}

TEST(GemmSpace, FewOutputTilesRankStreamKFirst) {
  // 256 x 256 output with K = 524288: 4 tiles of 128x128 on 132 SMs; only stream-K fills the GPU.
  GemmProblem p;
  p.m = p.n = 256;
  p.k = 524288;
  p.lda = 524288;
  p.ldb = 256;
  p.ldd = 256;
  std::string why;
  auto f = *gemm_family(p, Precision::tf32, why);
  auto space = gemm_tuning_space(f, p, 132, 0);
  EXPECT_EQ(space.front().scheduler, TileScheduler::StreamK);
}

TEST(KernelName, SpellsTheWholeConfiguration) {
  GemmFamilyKey f{"bf16", DType::BF16, Layout::Row, Layout::Col, true};
  GemmConfig c{128, 256, 64, 2, 1, Schedule::Cooperative, TileScheduler::Persistent};
  EXPECT_EQ(gemm_kernel_name(f, c), "cutlass3x_sm90a_bf16_rcr_128x256x64_2x1x1_coop_persistent_lincomb-biasn");
  const auto sym = kernel_symbol(gemm_kernel_name(f, c));
  EXPECT_EQ(sym.size(), 7u + 16u);
  EXPECT_EQ(sym.rfind("fact_k_", 0), 0u);
  GemmConfig c2 = c;
  c2.cluster_m = 1;
  EXPECT_NE(kernel_symbol(gemm_kernel_name(f, c2)), sym);
}

TEST(Codegen, FillsEveryPlaceholderAndExportsTheAbi) {
  GemmFamilyKey f{"tf32", DType::F32, Layout::Row, Layout::Row, false};
  GemmConfig c{128, 128, 32, 1, 2, Schedule::Pingpong, TileScheduler::Persistent};
  const std::string src = render_gemm_sm90(f, c);
  const std::string sym = kernel_symbol(gemm_kernel_name(f, c));
  EXPECT_EQ(src.find("{{NAME}}"), std::string::npos);
  EXPECT_EQ(src.find("{{TILE_M}}"), std::string::npos);
  EXPECT_NE(src.find(sym + "_run("), std::string::npos);
  EXPECT_NE(src.find(sym + "_can_implement("), std::string::npos);
  EXPECT_NE(src.find("typedef struct FactGemmArgs"), std::string::npos);
  EXPECT_NE(src.find("KernelTmaWarpSpecializedPingpong"), std::string::npos);
  EXPECT_NE(src.find("Shape<_128, _128, _32>"), std::string::npos);
  EXPECT_NE(src.find("Shape<_1, _2, _1>"), std::string::npos);
  // tf32 with A and B row-major: the kernel computes D^T = B^T A^T, both column-major.
  EXPECT_TRUE(gemm_transposes_problem(f));
  EXPECT_NE(src.find("kTransposeProblem = true"), std::string::npos);
  EXPECT_NE(src.find("using LayoutA = cutlass::layout::ColumnMajor"), std::string::npos);
  EXPECT_NE(src.find("using LayoutB = cutlass::layout::ColumnMajor"), std::string::npos);
  EXPECT_NE(src.find("kHasBias = false"), std::string::npos);
}

TEST(Codegen, TwoByteOperandsAndKMajorBAreNotTransposed) {
  GemmFamilyKey bf16_rr{"bf16", DType::BF16, Layout::Row, Layout::Row, true};
  GemmFamilyKey tf32_rc{"tf32", DType::F32, Layout::Row, Layout::Col, false};
  EXPECT_FALSE(gemm_transposes_problem(bf16_rr));
  EXPECT_FALSE(gemm_transposes_problem(tf32_rc));
  GemmConfig c{128, 128, 64, 1, 1, Schedule::Cooperative, TileScheduler::Persistent};
  const std::string src = render_gemm_sm90(bf16_rr, c);
  EXPECT_NE(src.find("kTransposeProblem = false"), std::string::npos);
  EXPECT_NE(src.find("using LayoutB = cutlass::layout::RowMajor"), std::string::npos);
}

TEST(Tolerance, ScalesWithPolicyAndK) {
  auto p = square_f32(4096);
  const double tf32 = gemm_tolerance(p, Precision::tf32);
  const double fp32 = gemm_tolerance(p, Precision::fp32);
  EXPECT_GT(tf32, 1e-3);
  EXPECT_LT(tf32, 1e-2);
  EXPECT_LT(fp32, 1e-4);
  auto big_k = p;
  big_k.k = 524288;
  EXPECT_GT(gemm_tolerance(big_k, Precision::fp32), fp32);
}
