// The rope family's host side of verification (reference.h): the float64 reference of both
// forms on known rows, the bound against what the template computes in fp32 (inside) and
// against the near misses of the rule (outside), the sampled rows and their offsets.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "families/rope/reference.h"

namespace fact::realize {
namespace {

RopeProblem problem(RopeForm f, int64_t d, DType t = DType::f32) {
  RopeProblem p;
  p.form = f;
  p.dims = {2, 4, 8};
  p.head_dim = d;
  p.dtype = p.out_dtype = t;
  p.x = p.out = {4 * 8 * d, 8 * d, d};
  p.cos = p.sin = {0, 0, d};
  return p;
}

// One row as the template computes it: fma(x, c, -(r s)) / fma(x, c, r s) in fp32, rounded
// to the element type.
std::vector<float> fp32_rope(const RopeProblem& p, const std::vector<float>& x, const std::vector<float>& c,
                             const std::vector<float>& s) {
  const int64_t d = p.head_dim, h = d / 2;
  std::vector<float> y(static_cast<size_t>(d));
  for (int64_t j = 0; j < d; ++j) {
    const bool first = p.form == RopeForm::half ? j < h : j % 2 == 0;
    const int64_t k = p.form == RopeForm::half ? (first ? j + h : j - h) : (first ? j + 1 : j - 1);
    const float rs = x[size_t(k)] * s[size_t(j)];
    y[size_t(j)] = round_to(p.dtype, std::fma(x[size_t(j)], c[size_t(j)], first ? -rs : rs));
  }
  return y;
}

std::vector<float> draw(int64_t n, DType t, uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = round_to(t, float(normal(rng)));
  return v;
}

TEST(RopeReference, HalfSplitOfAKnownRow) {
  const RopeProblem p = problem(RopeForm::half, 4);
  // x = [1, 2, 3, 4], rotate_half(x) = [-3, -4, 1, 2]
  const auto r = rope_reference_row(p, {1, 2, 3, 4}, {1, 0.5f, 2, 0}, {10, 1, 0.25f, 3});
  EXPECT_DOUBLE_EQ(r.out[0], 1 * 1 - 3 * 10);
  EXPECT_DOUBLE_EQ(r.out[1], 2 * 0.5 - 4 * 1);
  EXPECT_DOUBLE_EQ(r.out[2], 3 * 2 + 1 * 0.25);
  EXPECT_DOUBLE_EQ(r.out[3], 4 * 0 + 2 * 3);
}

TEST(RopeReference, PairsOfAKnownRow) {
  const RopeProblem p = problem(RopeForm::pairs, 4);
  // rotate_every_two(x) = [-2, 1, -4, 3]
  const auto r = rope_reference_row(p, {1, 2, 3, 4}, {1, 1, 1, 1}, {1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(r.out[0], 1 - 2 * 1);
  EXPECT_DOUBLE_EQ(r.out[1], 2 + 1 * 2);
  EXPECT_DOUBLE_EQ(r.out[2], 3 - 4 * 3);
  EXPECT_DOUBLE_EQ(r.out[3], 4 + 3 * 4);
}

TEST(RopeReference, TheFp32KernelIsInsideItsBoundInEveryDtypeAndForm) {
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    for (RopeForm f : {RopeForm::half, RopeForm::pairs}) {
      const RopeProblem p = problem(f, 128, t);
      for (double scale : {1.0, 1e-4, t == DType::f16 ? 1e2 : 1e3}) {
        for (uint64_t seed = 1; seed <= 20; ++seed) {
          const auto x = draw(128, t, seed, scale), c = draw(128, t, seed + 100, 1), s = draw(128, t, seed + 200, 1);
          const auto r = rope_reference_row(p, x, c, s);
          const auto y = fp32_rope(p, x, c, s);
          for (size_t j = 0; j < 128; ++j)
            ASSERT_LE(std::fabs(double(y[j]) - r.out[j]), r.bound[j]) << to_string(t) << " j " << j << " scale " << scale;
        }
      }
    }
  }
}

TEST(RopeReference, TheRulesNearMissesAreOutsideTheBound) {
  // What a kernel computing a near miss would write: the wrong half (cat(x1, -x2)), the
  // other form, cos and sin swapped. Each must fail on a normal row in every dtype.
  for (DType t : {DType::f32, DType::bf16, DType::f16}) {
    const RopeProblem p = problem(RopeForm::half, 64, t);
    const auto x = draw(64, t, 7, 1), c = draw(64, t, 8, 1), s = draw(64, t, 9, 1);
    const auto r = rope_reference_row(p, x, c, s);
    std::vector<float> neg_s(s.size());  // cat(x1, -x2) = -rotate_half(x): the sine term's sign flipped
    for (size_t j = 0; j < s.size(); ++j) neg_s[j] = -s[j];
    RopeProblem pairs = p;
    pairs.form = RopeForm::pairs;
    const std::vector<std::vector<float>> wrong = {fp32_rope(p, x, c, neg_s), fp32_rope(pairs, x, c, s),
                                                   fp32_rope(p, x, s, c)};
    for (size_t w = 0; w < wrong.size(); ++w) {
      size_t over = 0;
      for (size_t j = 0; j < 64; ++j) over += std::fabs(double(wrong[w][j]) - r.out[j]) > r.bound[j];
      EXPECT_GT(over, 32u) << to_string(t) << " variant " << w;
    }
  }
}

TEST(RopeReference, SampledRowsAndTheirOffsets) {
  EXPECT_EQ(rope_sample_rows(5), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  const auto rows = rope_sample_rows(1 << 20);
  ASSERT_EQ(rows.size(), 64u);
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), (1 << 20) - 1);
  EXPECT_EQ(rope_sample_rows(1 << 20), rows);  // the same rows every run
  const RopeProblem p = problem(RopeForm::half, 32);
  EXPECT_EQ(rope_row_index(p, 8 * 4 + 8 + 3), (std::array<int64_t, 3>{1, 1, 3}));
  EXPECT_EQ(rope_row_offset(p, p.x, 8 * 4 + 8 + 3), 4 * 8 * 32 + 8 * 32 + 3 * 32);
  EXPECT_EQ(rope_row_offset(p, p.cos, 8 * 4 + 8 + 3), 3 * 32);  // the table broadcasts over n0, n1
}

}  // namespace
}  // namespace fact::realize
