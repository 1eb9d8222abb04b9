// Tuning space, kernel names, symbols, family selection and codegen of the sm90 GEMM family.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <set>

#include "base/error.h"
#include "discover/plan.h"
#include "families/family.h"
#include "families/gemm/codegen.h"
#include "families/gemm/space.h"
#include "families/gemm/verify_tune.h"
#include "graph/text.h"

using namespace fact::realize;
using fact::Precision;

namespace {
GemmProblem square_f32(int64_t n) {
  GemmProblem p;
  p.m = p.n = p.k = n;
  p.lda = p.ldb = p.ldd = n;
  return p;
}

GemmProblem with_layouts(GemmProblem p, Layout a, Layout b) {
  p.layout_a = a;
  p.layout_b = b;
  return p;
}

// Every one of `parts` occurs in the generated source `src`.
void expect_in_source(const std::string& src, std::initializer_list<std::string> parts) {
  for (const auto& part : parts) EXPECT_NE(src.find(part), std::string::npos) << part;
}

std::set<std::string> staging_of(const std::vector<GemmFamilyKey>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs) out.insert(std::string(f.stage_a ? "A" : "") + (f.stage_b ? "B" : "") + "|");
  return out;
}
}  // namespace

TEST(GemmFamily, Fp32UnderTf32RowRowRunsAsGivenOrWithBStaged) {
  std::string why;
  auto fs = gemm_families(square_f32(4096), Precision::tf32, why);
  ASSERT_EQ(fs.size(), 2u) << why;
  for (const auto& f : fs) EXPECT_EQ(f.mma, "tf32");
  EXPECT_EQ(staging_of(fs), (std::set<std::string>{"|", "B|"}));
}

TEST(GemmFamily, TransposedAIsStagedEveryWayThatHelps) {
  // A column-major with B row-major: tf32 WGMMA cannot read both MN-major operands.
  std::string why;
  auto fs = gemm_families(with_layouts(square_f32(4096), Layout::Col, Layout::Row), Precision::tf32, why);
  EXPECT_EQ(staging_of(fs), (std::set<std::string>{"A|", "B|", "AB|"}));
  // Both K-major (B transposed): nothing to stage.
  fs = gemm_families(with_layouts(square_f32(4096), Layout::Row, Layout::Col), Precision::tf32, why);
  EXPECT_EQ(staging_of(fs), (std::set<std::string>{"|"}));
}

TEST(GemmFamily, UnalignedOperandsAreStagedAndUnalignedDDropsTma) {
  // KernelBench level 1 #8: M 8205, K 2949, N 5921, all row-major.
  GemmProblem p;
  p.m = 8205; p.k = 2949; p.n = 5921;
  p.lda = p.k; p.ldb = p.n; p.ldd = p.n;
  std::string why;
  auto fs = gemm_families(p, Precision::tf32, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_TRUE(fs[0].stage_a && fs[0].stage_b);
  EXPECT_TRUE(fs[0].align1_d);
  // A bias cannot ride on the no-TMA epilogue.
  p.bias_n = true;
  EXPECT_TRUE(gemm_families(p, Precision::tf32, why).empty());
  EXPECT_NE(why.find("bias"), std::string::npos);
}

TEST(GemmFamily, AContiguousExtentOffSixteenBytesIsStaged) {
  // x[:, :1022] @ W: lda 1024 is aligned, but K = 1022 rows of A are not whole 16-byte
  // units (CUTLASS's check_alignment), so A and B (K % 4 != 0) are staged.
  GemmProblem p;
  p.m = 512; p.k = 1022; p.n = 1024;
  p.lda = 1024; p.ldb = 1024; p.ldd = 1024;
  std::string why;
  auto fs = gemm_families(p, Precision::tf32, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_TRUE(fs[0].stage_a && fs[0].stage_b);
  // bf16 cannot stage: vendor only.
  p.dtype_a = p.dtype_b = p.dtype_d = DType::bf16;
  EXPECT_TRUE(gemm_families(p, Precision::bf16, why).empty());
  EXPECT_NE(why.find("contiguous extent"), std::string::npos);
  // An N off 16 bytes writes D without TMA.
  auto q = square_f32(1024);
  q.n = 1022;
  q.ldd = 1024;
  q.ldb = 1024;
  fs = gemm_families(q, Precision::tf32, why);
  ASSERT_FALSE(fs.empty());
  for (const auto& f : fs) EXPECT_TRUE(f.align1_d && f.stage_b);
}

TEST(GemmFamily, Fp32UnderBf16StagesBothOperandsAsBf16) {
  // MiniGPT's c_fc (L3 #44: x 65536 x 768 row-major, the weight as linear's B^T) and an
  // unaligned problem: every layout and stride is served by staging both, D stays fp32.
  GemmProblem p = with_layouts(square_f32(768), Layout::Row, Layout::Col);
  p.m = 65536; p.n = 3072;
  p.ldb = 768; p.ldd = 3072;
  p.bias_n = true;
  std::string why;
  auto fs = gemm_families(p, Precision::bf16, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_EQ(fs[0].mma, "bf16");
  EXPECT_EQ(fs[0].element, DType::f32);
  EXPECT_TRUE(fs[0].stage_a && fs[0].stage_b);
  EXPECT_EQ(fs[0].split, 1);
  EXPECT_EQ(gemm_operand_element(fs[0]), DType::bf16);
  EXPECT_FALSE(gemm_transposes_problem(fs[0]));
  GemmProblem odd;
  odd.m = 8205; odd.k = 2949; odd.n = 5921;
  odd.lda = odd.k; odd.ldb = odd.n; odd.ldd = odd.n;
  fs = gemm_families(odd, Precision::bf16, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_TRUE(fs[0].stage_a && fs[0].stage_b && fs[0].align1_d);
  // bf16 inputs under bf16 are not staged (their own dtype).
  GemmProblem h = square_f32(4096);
  h.dtype_a = h.dtype_b = h.dtype_d = DType::bf16;
  fs = gemm_families(h, Precision::bf16, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_FALSE(fs[0].stage_a || fs[0].stage_b);
}

TEST(GemmFamily, NarrowedValuesGiveBf16OperandsOrDWithFp32BiasAndTail) {
  // MiniGPT's attention projection with its input and weight narrowed to bf16
  // (discover/narrow.h): bf16 operands as given, D, the bias and the residual in fp32.
  GemmProblem p = with_layouts(square_f32(768), Layout::Row, Layout::Col);
  p.m = 65536;
  p.bias_n = true;
  p.dtype_a = p.dtype_b = DType::bf16;
  std::string why;
  auto fs = gemm_families(p, Precision::bf16, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_EQ(fs[0].mma, "bf16");
  EXPECT_FALSE(fs[0].stage_a || fs[0].stage_b);
  EXPECT_EQ(gemm_d_element(fs[0]), DType::f32);
  EXPECT_EQ(gemm_epi_element(fs[0]), DType::f32);
  const GemmConfig cfg{128, 256, 64, 1, 1, Schedule::Cooperative, TileScheduler::Persistent};
  EXPECT_EQ(gemm_kernel_name(fs[0], cfg), "cutlass3x_sm90a_bf16_rcr_128x256x64_1x1x1_coop_persistent_lincomb-biasn-df32");
  const std::string src = render_gemm_sm90(fs[0], cfg);
  EXPECT_NE(src.find("using ElementD = float;"), std::string::npos);
  EXPECT_NE(src.find("using ElementEpi = float;"), std::string::npos);
  EXPECT_NE(src.find("using ElementA = cutlass::bfloat16_t;"), std::string::npos);
  // BERT's q projection: fp32 operands staged to bf16, D narrowed to bf16, the bias fp32.
  GemmProblem q = with_layouts(square_f32(768), Layout::Row, Layout::Col);
  q.bias_n = true;
  q.dtype_d = DType::bf16;
  fs = gemm_families(q, Precision::bf16, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_TRUE(fs[0].stage_a && fs[0].stage_b);
  EXPECT_EQ(gemm_d_element(fs[0]), DType::bf16);
  EXPECT_EQ(gemm_epi_element(fs[0]), DType::f32);
  EXPECT_EQ(gemm_kernel_name(fs[0], cfg), "cutlass3x_sm90a_bf16_rcr-stAB_128x256x64_1x1x1_coop_persistent_lincomb-biasn-dbf16-ef32");
  // Not a narrowing: fp32 operands with a bf16 D under tf32, and A and B of two dtypes.
  EXPECT_TRUE(gemm_families(q, Precision::tf32, why).empty());
  EXPECT_NE(why.find("mixed operand dtypes"), std::string::npos) << why;
  GemmProblem mixed = p;
  mixed.dtype_b = DType::f32;
  EXPECT_TRUE(gemm_families(mixed, Precision::bf16, why).empty());
  EXPECT_NE(why.find("A bfloat16, B float32"), std::string::npos) << why;
}

TEST(GemmSpace, Bf16StagedKernelsRankAtTheBf16PeakWithTheirStagingCost) {
  // tile K is 64 (128 bytes of bf16); the estimate is faster than tf32's on a compute-bound
  // problem (the bf16 peak is twice tf32's) and slower than a bf16-input kernel's (staging).
  auto p = with_layouts(square_f32(4096), Layout::Row, Layout::Col);
  std::string why;
  const GemmFamilyKey staged = gemm_families(p, Precision::bf16, why).at(0);
  const GemmFamilyKey tf32 = gemm_families(p, Precision::tf32, why).at(0);
  GemmProblem h = p;
  h.dtype_a = h.dtype_b = h.dtype_d = DType::bf16;
  const GemmFamilyKey native = gemm_families(h, Precision::bf16, why).at(0);
  const GemmConfig c = gemm_tuning_space(staged, p, 132, 1).at(0);
  EXPECT_EQ(c.tile_k, 64);
  const double t_staged = estimate_seconds(staged, c, p, 132);
  GemmConfig c32 = c;
  c32.tile_k = 32;
  EXPECT_LT(t_staged, estimate_seconds(tf32, c32, p, 132));
  const double t_native = estimate_seconds(native, c, h, 132);
  EXPECT_GT(t_staged, t_native);
  // Staging reads 4 and writes 2 bytes per element of A and B at 3.0 TB/s; D is fp32
  // (written at 4.0 TB/s inside the max with compute, so the gap is at least the copy).
  EXPECT_GE(t_staged - t_native, 2 * 4096.0 * 4096 * 6 / 3.0e12 * 0.999);
}

TEST(GemmFamily, StagingLaunchLimitsAndThirtyTwoBitSizes) {
  GemmProblem tall;  // M = 4M rows: staging's grid would exceed 65535 block rows
  tall.m = int64_t(1) << 22; tall.k = 63; tall.n = 64;
  tall.lda = 63; tall.ldb = 64; tall.ldd = 64;
  std::string why;
  EXPECT_TRUE(gemm_families(tall, Precision::tf32, why).empty());
  EXPECT_NE(why.find("staging"), std::string::npos);
  auto huge = square_f32(4096);
  huge.k = int64_t(1) << 32;
  huge.lda = huge.k;
  EXPECT_TRUE(gemm_families(huge, Precision::tf32, why).empty());
  EXPECT_NE(why.find("32 bits"), std::string::npos);
}

TEST(GemmFamily, Fp32PolicyIs3xTf32WhenComputeBound) {
  std::string why;
  auto fs = gemm_families(square_f32(4096), Precision::fp32, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_EQ(fs[0].mma, "3xtf32");
  EXPECT_EQ(fs[0].split, 3);
  EXPECT_TRUE(fs[0].stage_a && fs[0].stage_b);
}

TEST(GemmFamily, Fp32PolicyBuilds3xTf32ForTheBatchedProblem) {
  // KernelBench level 1 #3: 128 x (512 x 1024 . 1024 x 2048); staging writes 4 GB, but the
  // 275 GFLOP at a third of the tf32 rate still beats SGEMM (5.34 ms measured).
  GemmProblem p;
  p.m = 512; p.n = 2048; p.k = 1024; p.l = 128;
  p.lda = 1024; p.ldb = 2048; p.ldd = 2048;
  p.batch_stride_a = 512 * 1024; p.batch_stride_b = 1024 * 2048; p.batch_stride_d = 512 * 2048;
  std::string why;
  auto fs = gemm_families(p, Precision::fp32, why);
  ASSERT_EQ(fs.size(), 1u) << why;
  EXPECT_EQ(fs[0].mma, "3xtf32");
}

TEST(GemmFamily, Fp32PolicyLeavesMemoryBoundProblemsToSgemmAndSaysWhy) {
  GemmProblem p;  // KernelBench level 1 #6: 256 x 256 x 524288
  p.m = p.n = 256; p.k = 524288;
  p.lda = p.k; p.ldb = p.n; p.ldd = p.n;
  std::string why;
  EXPECT_TRUE(gemm_families(p, Precision::fp32, why).empty());
  EXPECT_NE(why.find("SGEMM"), std::string::npos);
}

TEST(GemmFamily, GemvAndUnalignedHalfPrecisionGoToTheVendor) {
  GemmProblem gemv;
  gemv.m = 2048; gemv.k = 1 << 20; gemv.n = 1;
  gemv.lda = gemv.k; gemv.ldb = 1; gemv.ldd = 1;
  std::string why;
  EXPECT_TRUE(gemm_families(gemv, Precision::tf32, why).empty());
  EXPECT_NE(why.find("GEMV"), std::string::npos);
  auto h = square_f32(4096);
  h.dtype_a = h.dtype_b = h.dtype_d = DType::bf16;
  h.lda = 4100;  // 8200 bytes: not a multiple of 16
  EXPECT_TRUE(gemm_families(h, Precision::bf16, why).empty());
  EXPECT_NE(why.find("16 bytes"), std::string::npos);
}

TEST(GemmFamily, StagingCostRanksTheSmallerOperandFirst) {
  // C = A^T B with A 8192 x 2048 (A^T column-major, 64 MiB) and B 8192 x 4096 (128 MiB).
  GemmProblem p;
  p.m = 2048; p.k = 8192; p.n = 4096;
  p.layout_a = Layout::Col; p.lda = 2048; p.ldb = 4096; p.ldd = 4096;
  std::string why;
  auto choices = gemm_kernel_choices(gemm_families(p, Precision::tf32, why), p, 132, 0);
  ASSERT_FALSE(choices.empty());
  EXPECT_TRUE(choices[0].family.stage_a);
  EXPECT_FALSE(choices[0].family.stage_b);
  // Every family's best configuration comes before any family's second.
  std::set<std::string> first_three;
  for (int i = 0; i < 3; ++i) first_three.insert(staging_of({choices[i].family}).begin()->c_str());
  EXPECT_EQ(first_three.size(), 3u);
  EXPECT_EQ(gemm_kernel_choices(gemm_families(p, Precision::tf32, why), p, 132, 4).size(), 4u);
}

TEST(RuntimeVariants, SplitKForFewTilesAndSwizzleForManyWaves) {
  GemmProblem p;
  p.m = p.n = 256; p.k = 524288;
  GemmConfig sk{128, 128, 32, 1, 1, Schedule::Cooperative, TileScheduler::StreamK};
  auto v = gemm_runtime_variants(sk, p, 132);
  ASSERT_EQ(v.size(), 4u);  // default, then about 16, 33 and 66 splits for 4 tiles
  EXPECT_EQ(v[0], GemmRuntime{});
  EXPECT_EQ(v[1].splits, 17);
  EXPECT_EQ(v[2].splits, 33);
  EXPECT_EQ(v[3].splits, 66);
  GemmConfig pers{128, 256, 32, 2, 1, Schedule::Cooperative, TileScheduler::Persistent};
  auto big = square_f32(8192);
  ASSERT_EQ(gemm_runtime_variants(pers, big, 132).size(), 2u);
  EXPECT_EQ(gemm_runtime_variants(pers, big, 132)[1].swizzle, 4);
  EXPECT_EQ(gemm_runtime_variants(pers, square_f32(1024), 132).size(), 1u);
}

TEST(RuntimeVariants, CandidateNamesRoundTrip) {
  const std::string k = "cutlass3x_sm90a_tf32_rrr_128x128x32_1x1x1_coop_streamk_lincomb";
  for (GemmRuntime r : {GemmRuntime{}, GemmRuntime{16, 0, 0}, GemmRuntime{0, 2, 4}, GemmRuntime{0, 1, 0}}) {
    GemmRuntime back{7, 7, 7};
    EXPECT_EQ(split_candidate_name(k + runtime_suffix(r), back), k);
    EXPECT_EQ(back, r) << runtime_suffix(r);
  }
  EXPECT_EQ(runtime_suffix({16, 2, 4}), "+splitk16+rasterN+swz4");
  GemmRuntime r;
  for (const char* bad : {"+turbo", "+splitk-3", "+splitk16abc", "+splitk1", "+swz3", "+swz", "+"}) {
    EXPECT_THROW(split_candidate_name(k + bad, r), fact::Error) << bad;
  }
  EXPECT_THROW(split_candidate_name("+swz4", r), fact::Error);  // no kernel name
}

TEST(GemmSpace, HasAtLeastEightDistinctConfigsWithBothSchedules) {
  std::string why;
  auto p = square_f32(4096);
  auto f = gemm_families(p, Precision::tf32, why).at(0);
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
  auto f = gemm_families(p, Precision::tf32, why).at(0);
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
  auto f = gemm_families(p, Precision::tf32, why).at(0);
  auto space = gemm_tuning_space(f, p, 132, 0);
  EXPECT_EQ(space.front().scheduler, TileScheduler::StreamK);
}

TEST(KernelName, SpellsTheWholeConfiguration) {
  GemmFamilyKey f{"bf16", DType::bf16, Layout::Row, Layout::Col, true};
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
  GemmFamilyKey f{"tf32", DType::f32, Layout::Row, Layout::Row, false};
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
  EXPECT_NE(src.find("kStageA = false"), std::string::npos);
  EXPECT_NE(src.find("kSplit = 1;"), std::string::npos);
}

TEST(Codegen, StagedThreeXTf32ReadsKMajorOperands) {
  GemmFamilyKey f{"3xtf32", DType::f32, Layout::Col, Layout::Row, false, true, true, 3, true};
  GemmConfig c{128, 256, 32, 2, 1, Schedule::Cooperative, TileScheduler::StreamK};
  EXPECT_EQ(gemm_kernel_name(f, c), "cutlass3x_sm90a_3xtf32_crr-stAB_128x256x32_2x1x1_coop_streamk_lincomb-align1");
  EXPECT_FALSE(gemm_transposes_problem(f));
  const std::string src = render_gemm_sm90(f, c);
  expect_in_source(src, {"using LayoutA = cutlass::layout::RowMajor", "using LayoutB = cutlass::layout::ColumnMajor",
                         "kCallerARowMajor = false", "kCallerBRowMajor = true", "kSplit = 3;", "AlignmentD = 1;",
                         "kStreamK = true", "using ElementA = float;"});
  // The staging kernels live in a namespace of the kernel's own symbol (one library holds
  // many kernels): the element-by-element copy and the 16-byte-vector one.
  expect_in_source(src, {"namespace st = " + kernel_symbol(gemm_kernel_name(f, c)) + "_staging;",
                         "st::stage_operand<kSplit, IsB, Out>", "st::stage_operand_v4<kSplit, IsB, true, Out>",
                         "st::stage_operand_v4<kSplit, IsB, false, Out>"});
  // PDL after staging only for persistent kernels: CUTLASS's stream-K scheduler does not
  // compile with CUTLASS_ENABLE_GDC_FOR_SM90, and an unstaged GEMM has no copy to overlap.
  EXPECT_NE(src.find("#define FACT_PDL 0"), std::string::npos);
  c.scheduler = TileScheduler::Persistent;
  EXPECT_NE(render_gemm_sm90(f, c).find("#define FACT_PDL 1"), std::string::npos);
  f.stage_a = f.stage_b = false;
  f.split = 1;
  f.mma = "tf32";
  EXPECT_NE(render_gemm_sm90(f, c).find("#define FACT_PDL 0"), std::string::npos);
}

TEST(Codegen, TwoByteOperandsAndKMajorBAreNotTransposed) {
  GemmFamilyKey bf16_rr{"bf16", DType::bf16, Layout::Row, Layout::Row, true};
  GemmFamilyKey tf32_rc{"tf32", DType::f32, Layout::Row, Layout::Col, false};
  EXPECT_FALSE(gemm_transposes_problem(bf16_rr));
  EXPECT_FALSE(gemm_transposes_problem(tf32_rc));
  GemmConfig c{128, 128, 64, 1, 1, Schedule::Cooperative, TileScheduler::Persistent};
  const std::string src = render_gemm_sm90(bf16_rr, c);
  EXPECT_NE(src.find("kTransposeProblem = false"), std::string::npos);
  EXPECT_NE(src.find("using LayoutB = cutlass::layout::RowMajor"), std::string::npos);
}

TEST(Codegen, Fp32UnderBf16RoundsInTheStagingCopyAndWritesFp32) {
  GemmFamilyKey f{"bf16", DType::f32, Layout::Row, Layout::Col, true, true, true};
  GemmConfig c{128, 256, 64, 1, 1, Schedule::Cooperative, TileScheduler::Persistent};
  EXPECT_EQ(gemm_kernel_name(f, c), "cutlass3x_sm90a_bf16_rcr-stAB_128x256x64_1x1x1_coop_persistent_lincomb-biasn");
  const std::string src = render_gemm_sm90(f, c);
  expect_in_source(src, {"using ElementIn = float;", "using ElementA = cutlass::bfloat16_t;",
                         "using ElementB = cutlass::bfloat16_t;", "using ElementD = float;", "kStageA = true",
                         "kStageB = true", "operand staging: A and B, rounded to bfloat16", "#define FACT_PDL 1"});
  // The kernel differs from the bf16-input one of the same configuration.
  GemmFamilyKey native{"bf16", DType::bf16, Layout::Row, Layout::Col, true};
  EXPECT_NE(gemm_kernel_name(native, c), gemm_kernel_name(f, c));
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
  // fp32 inputs under bf16 are rounded to bf16 (u_in 2^-8) and written in fp32: the bound
  // of bf16 inputs with an fp32 output, about four times tf32's.
  const double bf16 = gemm_tolerance(p, Precision::bf16);
  EXPECT_NEAR(bf16, 8 * std::ldexp(1.0, -8) + std::ldexp(1.0, -24) + 8 * std::ldexp(1.0, -24) * 64, 1e-12);
  EXPECT_GT(bf16, 3.5 * tf32);
}

namespace fact::families {
namespace {

// The run-time options of a GEMM candidate's name are its realized.json "runtime" (the
// engine only knows that the kernel comes before the first '+').
TEST(GemmFamilyPlan, CandidateFieldsAreTheRunTimeOptionsOfItsName) {
  const std::string text = "graph G {\n  input %x : f32[64,32]{32,1}\n  input %w : f32[32,16]{16,1}\n"
                           "  %mm : f32[64,16]{16,1} = aten.mm.default(%x, %w)\n  output (%mm)\n}\n";
  const auto plan = discover::make_plan(graph::parse_text(text), discover::builtin_rules(), Precision::tf32);
  const nlohmann::json pat = nlohmann::json::parse(discover::plan_to_json_string(plan)).at("patterns").at(0);
  const Family* f = family_of_pattern(pat);
  ASSERT_NE(f, nullptr);
  const std::optional<GpuInfo> gpu;
  const PlanContext ctx{Precision::tf32, 1, &gpu, 132};
  std::map<std::string, BuildRequest> requests;
  const auto r = f->plan(pat, ctx, requests);
  ASSERT_FALSE(r->kernels.empty());
  const std::string k = r->kernels[0];
  EXPECT_EQ(realize::candidate_kernel(k + "+splitk4+swz2"), k);
  EXPECT_EQ(r->candidate_fields(k), nlohmann::json::object());
  EXPECT_EQ(r->candidate_fields(k + "+splitk4+swz2"),
            (nlohmann::json{{"runtime", {{"splits", 4}, {"raster", 0}, {"swizzle", 2}}}}));
  EXPECT_THROW(r->candidate_fields(k + "+turbo"), Error);
}

}  // namespace
}  // namespace fact::families
