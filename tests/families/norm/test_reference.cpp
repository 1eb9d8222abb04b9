// The norm family's host side of verification (reference.h, bound.h): the float64
// reference and each element's bound, the draws (a large common offset, constant rows,
// rows near fp32's range), the sum's rounding as eager's add, and the element encodings.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "families/norm/reference.h"

namespace fact::realize {
namespace {

NormProblem problem(NormKind k, int64_t cols, DType d = DType::f32) {
  NormProblem p;
  p.norm = k;
  p.rows = 4;
  p.cols = cols;
  p.dtype = p.out_dtype = d;
  p.x_stride = cols;
  return p;
}

// An fp32 two-pass LayerNorm as the template computes it (sequential sums).
std::vector<float> fp32_layer_norm(const std::vector<float>& x, float eps) {
  float s = 0;
  for (float v : x) s += v;
  const float mean = s / float(x.size());
  float q = 0;
  for (float v : x) q = std::fma(v - mean, v - mean, q);
  const float rstd = 1.0f / std::sqrt(q / float(x.size()) + eps);
  std::vector<float> y;
  for (float v : x) y.push_back((v - mean) * rstd);
  return y;
}

TEST(NormReference, LayerNormOfAKnownRow) {
  const NormProblem p = problem(NormKind::layer, 4);
  const auto r = norm_reference_row(p, {1, 2, 3, 4}, {}, {}, {});
  // mean 2.5, variance 1.25
  const double rstd = 1.0 / std::sqrt(1.25 + double(float(1e-5)));
  EXPECT_NEAR(r.out[0], -1.5 * rstd, 1e-15);
  EXPECT_NEAR(r.out[3], 1.5 * rstd, 1e-15);
  EXPECT_DOUBLE_EQ(r.facts.var, 1.25);
  EXPECT_DOUBLE_EQ(r.facts.mean_abs, 2.5);
}

TEST(NormReference, RmsNormWithWeightAndTheSumRoundedAsEager) {
  NormProblem p = problem(NormKind::rms, 2, DType::bf16);
  p.residual = p.weight = true;
  // bf16: 1 + 2^-9 is not representable; the sum rounds to nearest even.
  const auto r = norm_reference_row(p, {1.0f, 3.0f}, {std::ldexp(1.0f, -9), 1.0f}, {2.0f, 0.5f}, {});
  EXPECT_EQ(r.sum[0], 1.0f);
  EXPECT_EQ(r.sum[1], 4.0f);
  const double rstd = 1.0 / std::sqrt((1.0 + 16.0) / 2.0 + double(float(p.eps)));
  EXPECT_NEAR(r.out[0], 1.0 * rstd * 2.0, 1e-15);
  EXPECT_NEAR(r.out[1], 4.0 * rstd * 0.5, 1e-15);
}

TEST(NormBound, ScalesWithTheRowLengthAndTheOffset) {
  const NormProblem p = problem(NormKind::layer, 0);
  const NormErrorTerms e = norm_error_terms(p);
  const NormRowFacts small{256, 1.0, 1.0, 1e-5}, long_row{4096, 1.0, 1.0, 1e-5}, offset{4096, 1000.0, 1.0, 1e-5};
  const double b_small = norm_element_bound(e, small, 1.0, 1.0, 1.0, 1.0);
  const double b_long = norm_element_bound(e, long_row, 1.0, 1.0, 1.0, 1.0);
  const double b_offset = norm_element_bound(e, offset, 1.0, 1.0, 1.0, 1.0);
  EXPECT_GT(b_long, 10 * b_small);
  EXPECT_GT(b_offset, 500 * b_long);
  EXPECT_LT(b_long, 1e-2);
  // gamma(n + 1) A rstd dominates, times 1 + rho, plus rho |y| (rho grows with d_mu^2 / var: 8.5 % here), x 2.
  const double lead = 2 * 1000.0 * 4097 * std::ldexp(1.0, -24);
  EXPECT_GT(b_offset, lead);
  EXPECT_LT(b_offset, 1.5 * lead);
}

TEST(NormBound, NeverAboveTheWorstCaseOfAnyFp32Kernel) {
  const NormErrorTerms e = norm_error_terms(problem(NormKind::layer, 0));
  // A constant row with BERT's eps 1e-12: rho is uninformative; the bound is |w| (sqrt(n) + |y|).
  const NormRowFacts constant{768, 3.25, 0.0, double(float(1e-12))};
  EXPECT_TRUE(std::isinf(norm_rstd_error(e, constant)));
  EXPECT_NEAR(norm_element_bound(e, constant, 0.0, 0.0, 1.0, 0.0), 2 * std::sqrt(768.0), 1e-9);
}

TEST(NormBound, AFp32TwoPassKernelStaysWithinItOnEveryDraw) {
  for (NormKind k : {NormKind::layer, NormKind::rms}) {
    const NormProblem p = problem(k, 1024);
    for (const NormDraw& d : norm_draws()) {
      if (d.name == "near-range") continue;  // the unscaled fp32 reference below overflows there
      const auto x = norm_draw_row(d.name, p.cols, p.dtype, 7);
      const auto r = norm_reference_row(p, x, {}, {}, {});
      std::vector<float> y;
      if (k == NormKind::layer) {
        y = fp32_layer_norm(x, float(p.eps));
      } else {
        float q = 0;
        for (float v : x) q = std::fma(v, v, q);
        const float rstd = 1.0f / std::sqrt(q / float(x.size()) + float(p.eps));
        for (float v : x) y.push_back(v * rstd);
      }
      for (size_t j = 0; j < y.size(); ++j)
        ASSERT_LE(std::fabs(y[j] - r.out[j]), r.bound[j]) << d.name << " " << j << " kind " << int(k);
    }
  }
}

TEST(NormBound, AMissingMeanFails) {
  const NormProblem p = problem(NormKind::layer, 512);
  const auto x = norm_draw_row("uniform01", p.cols, p.dtype, 3);
  const auto r = norm_reference_row(p, x, {}, {}, {});
  NormProblem rms = p;
  rms.norm = NormKind::rms;  // LayerNorm computed as RMSNorm (no centering)
  const auto wrong = norm_reference_row(rms, x, {}, {}, {});
  int over = 0;
  for (size_t j = 0; j < x.size(); ++j) over += std::fabs(wrong.out[j] - r.out[j]) > r.bound[j];
  EXPECT_GT(over, 480);
}

TEST(NormDraws, RowsHaveTheirShape) {
  const auto offset = norm_draw_row("offset", 4096, DType::f32, 1);
  double mean = 0;
  for (float v : offset) mean += v;
  mean /= 4096;
  EXPECT_NEAR(mean, 1000.0, 0.05);
  const auto constant = norm_draw_row("constant", 64, DType::bf16, 1);
  for (float v : constant) EXPECT_EQ(v, 3.25f);
  const auto near = norm_draw_row("near-range", 4096, DType::f32, 1);
  double ms = 0;
  for (float v : near) ms += double(v) * v;
  EXPECT_GT(ms, 3.5e38);  // the fp32 sum of squares overflows: the kernel must scale
  for (float v : norm_draw_row("near-range", 64, DType::f16, 1)) EXPECT_TRUE(std::isfinite(round_to(DType::f16, v)));
  EXPECT_THROW(norm_draw_row("nope", 4, DType::f32, 1), Error);
}

TEST(NormElements, EncodeAndDecodeRoundTrip) {
  const std::vector<float> v{0.0f, -1.5f, 3.25f, 65504.0f, std::ldexp(1.0f, -24), -std::ldexp(1.0f, -14)};
  for (DType d : {DType::f32, DType::bf16, DType::f16}) {
    const auto bytes = encode_elements(d, v);
    ASSERT_EQ(bytes.size(), v.size() * dtype_bytes(d));
    for (size_t i = 0; i < v.size(); ++i) {
      if (d == DType::bf16 && i == 3) continue;  // 65504 is not a bf16 value
      EXPECT_EQ(decode_element(d, bytes.data(), int64_t(i)), round_to(d, v[i])) << to_string(d) << " " << i;
    }
  }
  EXPECT_EQ(round_to(DType::bf16, 1.0f + std::ldexp(1.0f, -8)), 1.0f);  // ties to even
  EXPECT_EQ(round_to(DType::f16, 1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_TRUE(std::isinf(round_to(DType::f16, 70000.0f)));
}

TEST(NormSampleRows, AllOrSpreadWithFirstAndLast) {
  EXPECT_EQ(norm_sample_rows(3), (std::vector<int64_t>{0, 1, 2}));
  const auto s = norm_sample_rows(32768);
  ASSERT_EQ(s.size(), 64u);
  EXPECT_EQ(s.front(), 0);
  EXPECT_EQ(s.back(), 32767);
}

}  // namespace
}  // namespace fact::realize
