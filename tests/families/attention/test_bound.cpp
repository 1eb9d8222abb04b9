// The per-element error bound a correct attention kernel meets (attention_bound.h), its terms
// per family, and which heads are checked against the float64 reference.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "families/attention/verify_tune.h"

using namespace fact::realize;

namespace {

// One output element of a row of unit-normal inputs, D = 64, scale 1/8, 1024 keys with a
// nearly flat softmax: sum_d |q_d k_d| at most 60, sum_j p_j |v_j| = 0.8, deviation from the
// top key's v 1.1, range 7, |O| = 0.05.
AttentionElementFacts flat_row() {
  AttentionElementFacts f{};
  f.abs_scale = 0.125;
  f.head_dim = 64;
  f.seq_k = 1024;
  f.max_qk_abs = 60;
  f.keys = 1024;
  f.l = 400;
  f.w0 = 0.8;
  f.w1 = 1.1;
  f.v_range = 7;
  f.v_abs = 3.5;
  f.o = 0.05;
  return f;
}

const AttentionFamily kTf32{"tf32", DType::f32, 64, MaskKind::none};
const AttentionFamily kBf16{"bf16", DType::bf16, 64, MaskKind::none};
const AttentionFamily kF16{"f16", DType::f16, 64, MaskKind::none};

}  // namespace

TEST(AttentionBound, TermsPerFamily) {
  const auto tf32 = attention_error_terms(kTf32);
  EXPECT_EQ(tf32.u_qk, std::ldexp(1.0, -9));  // Q and K each rounded to tf32 (2^-10)
  EXPECT_EQ(tf32.u_v, std::ldexp(1.0, -10));
  EXPECT_EQ(tf32.u_p, std::ldexp(1.0, -10));
  EXPECT_EQ(tf32.u_out, std::ldexp(1.0, -24));
  EXPECT_EQ(tf32.margin, 2.0);
  const auto bf16_math = attention_error_terms({"bf16", DType::f32, 64, MaskKind::none});
  EXPECT_EQ(bf16_math.u_qk, std::ldexp(1.0, -7));
  EXPECT_EQ(bf16_math.u_out, std::ldexp(1.0, -24));  // O stays fp32
  const auto bf16 = attention_error_terms(kBf16);
  EXPECT_EQ(bf16.u_qk, 0.0);  // bf16 inputs are exact MMA operands
  EXPECT_EQ(bf16.u_v, 0.0);
  EXPECT_EQ(bf16.u_p, std::ldexp(1.0, -8));
  EXPECT_EQ(bf16.u_out, std::ldexp(1.0, -8));
  const auto x3 = attention_error_terms({"3xtf32", DType::f32, 64, MaskKind::none});
  EXPECT_EQ(x3.u_qk, std::ldexp(1.0, -20));
  EXPECT_EQ(x3.u_p, std::ldexp(1.0, -21));
  const auto f16 = attention_error_terms(kF16);
  EXPECT_EQ(f16.p_subnormal, 1);
  EXPECT_EQ(f16.out_abs, std::ldexp(1.0, -25));
  EXPECT_EQ(f16.u_p, std::ldexp(1.0, -11));
}

TEST(AttentionBound, ScalesWithHeadDimAndMagnitude) {
  const auto tf32 = attention_error_terms(kTf32);
  const AttentionElementFacts f = flat_row();
  const double base = attention_element_bound(tf32, f);
  // tf32 on a flat unit-normal row: scores off by ~0.015, O by a few percent of sum p|v - v*|.
  EXPECT_GT(base, 0.02);
  EXPECT_LT(base, 0.1);
  AttentionElementFacts wide = f;
  wide.head_dim = 128;
  wide.max_qk_abs = 110;  // sum_d |q_d k_d| grows with D
  EXPECT_GT(attention_element_bound(tf32, wide), 1.5 * base);
  AttentionElementFacts larger = f;
  larger.max_qk_abs *= 4;  // x2 magnitudes of q and k
  EXPECT_GT(attention_element_bound(tf32, larger), 3.5 * base);
  // bf16 inputs are exact: only P's and O's rounding remain, far tighter than tf32's scores.
  const double bf16 = attention_element_bound(attention_error_terms(kBf16), f);
  EXPECT_LT(bf16, 0.2 * base);
  EXPECT_GT(bf16, 2 * std::ldexp(1.0, -8) * f.w0);
  // 3xtf32: worst-case fp32 accumulation dominates; two orders below tf32's.
  EXPECT_LT(attention_element_bound(attention_error_terms({"3xtf32", DType::f32, 64, MaskKind::none}), f), 0.01 * base);
}

TEST(AttentionBound, Fp32PolicyTolerance) {
  AttentionProblem p;
  p.head_dim = 96;
  p.seq_k = 512;
  // 16 2^-24 (1 + sqrt 96 + sqrt 512) + 2^-24: 3.2e-5, far below tf32's measured 6.7e-4 and
  // far above 3xtf32's 9.2e-7 (docs/perf-notes.md v6).
  EXPECT_NEAR(attention_fp32_tolerance(p), 3.16e-5, 0.05e-5);
  p.seq_k = 8192;
  EXPECT_GT(attention_fp32_tolerance(p), 2.5 * 3.16e-5);
}

TEST(AttentionBound, PeakySoftmaxIsTightAndTiesAreCappedByTheRange) {
  const auto tf32 = attention_error_terms(kTf32);
  // x30 inputs: scores off by ~13, but the top key carries all the weight (w1 ~ 0): O is that
  // key's v, up to the rounding of P V.
  AttentionElementFacts peaky = flat_row();
  peaky.max_qk_abs = 60 * 900;
  peaky.w1 = 1e-100;
  peaky.w0 = 30;
  peaky.o = 30;
  const double b = attention_element_bound(tf32, peaky);
  EXPECT_LT(b, 1e-2 * peaky.o);
  // Two keys nearly tied: the bound is the range of the values averaged (twice, the margin).
  AttentionElementFacts tie = peaky;
  tie.w1 = 20;
  tie.v_range = 90;
  EXPECT_NEAR(attention_element_bound(tf32, tie), 2 * 90.0, 1.0);
  // A single key: the scores do not matter; twice the rounding of P and V (and the fp32
  // accumulation) remains.
  AttentionElementFacts one = flat_row();
  one.keys = 1;
  one.w1 = 0;
  one.v_range = 0;
  EXPECT_LT(attention_element_bound(tf32, one), 5 * std::ldexp(1.0, -10) * one.w0);
  EXPECT_GT(attention_element_bound(tf32, one), 4 * std::ldexp(1.0, -10) * one.w0);
}

TEST(AttentionBound, AConstantOutputIsNotWithinTheBound) {
  // The small draw (x1e-4): softmax uniform, O = the mean of V, ~1e-4 / sqrt(Tk). Writing 0
  // is off by |O|, far beyond the bound.
  AttentionElementFacts small = flat_row();
  small.max_qk_abs = 60e-8;
  small.w0 = 0.8e-4;
  small.w1 = 1.1e-4;
  small.v_range = 7e-4;
  small.o = 3e-6;
  small.l = 1024;
  for (const auto& f : {kTf32, kBf16}) {
    EXPECT_LT(attention_element_bound(attention_error_terms(f), small), 0.5 * small.o) << f.math;
  }
}

TEST(AttentionBound, SampledHeads) {
  const auto all = attention_sample_pairs(4, 16);
  ASSERT_EQ(all.size(), 64u);
  EXPECT_EQ(all.front(), 0);
  EXPECT_EQ(all.back(), 63);
  const auto some = attention_sample_pairs(16, 32);  // 512 heads
  ASSERT_EQ(some.size(), 32u);
  EXPECT_EQ(some.front(), 0);
  EXPECT_EQ(some.back(), 511);
  EXPECT_EQ(std::set<int64_t>(some.begin(), some.end()).size(), 32u);
  for (size_t i = 1; i < some.size(); ++i) EXPECT_GT(some[i], some[i - 1]);
  EXPECT_EQ(attention_sample_pairs(1, 1), std::vector<int64_t>{0});
}
