// A causal mask with a sliding window (Mistral's `kv_pos > q_pos - W`, docs/03-rules.md,
// "Mask proofs"), on the host: which keys a row keeps, the pairs the problem's flops count,
// the key blocks a kernel's tile visits (every kept pair inside, only fully masked blocks
// skipped), the cost model counting only the window, and the family and arguments that now
// run it on FACT's kernels.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"
#include "families/attention/candidates.h"
#include "families/attention/key_sums.h"
#include "families/attention/space.h"
#include "families/attention/space_sm90.h"

using namespace fact::realize;
using fact::Precision;

namespace {

AttentionProblem causal(int64_t tq, int64_t tk, int64_t window, DType dtype = DType::bf16, int64_t d = 128) {
  AttentionProblem p;
  p.batch = 1; p.heads = 32; p.kv_heads = 8; p.seq_q = tq; p.seq_k = tk; p.head_dim = d;
  p.dtype = dtype;
  p.scale = 0.08838834764;
  p.mask = MaskKind::causal;
  p.window = window;
  p.q = p.o = {32 * tq * d, tq * d, d};
  p.k = p.v = {8 * tk * d, tk * d, d};
  return p;
}

// Pairs (i, j) with i < seq_q, j < seq_k that attention_causal_keeps keeps.
double kept_pairs(const AttentionProblem& p) {
  double n = 0;
  for (int64_t i = 0; i < p.seq_q; ++i)
    for (int64_t j = 0; j < p.seq_k; ++j) n += attention_causal_keeps(i, j, p.window) ? 1 : 0;
  return n;
}

}  // namespace

TEST(AttentionWindow, ARowKeepsItsLastWindowKeys) {
  // Window 3: row 5 keeps keys 3, 4, 5; row 1 keys 0, 1; no window: every j <= i.
  for (int64_t j = 0; j < 8; ++j) {
    EXPECT_EQ(attention_causal_keeps(5, j, 3), j >= 3 && j <= 5) << j;
    EXPECT_EQ(attention_causal_keeps(1, j, 3), j <= 1) << j;
    EXPECT_EQ(attention_causal_keeps(5, j, 0), j <= 5) << j;
  }
  EXPECT_EQ(attention_causal_first_key(5, 3), 3);
  EXPECT_EQ(attention_causal_first_key(1, 3), 0);
  EXPECT_EQ(attention_causal_first_key(9, 0), 0);
}

TEST(AttentionWindow, FlopsCountOnlyTheWindow) {
  // T 128, window 16: rows 0..15 keep i + 1 keys (136), rows 16..127 keep 16 (1792).
  const AttentionProblem p = causal(128, 128, 16);
  EXPECT_DOUBLE_EQ(p.flops(), 4.0 * 1928 * 128 * 32);
  EXPECT_LT(p.flops(), causal(128, 128, 0).flops() / 3);
  // Brute force, with more queries than keys (rows past seq_k + W - 1 keep none) and fewer,
  // and a window wider than the sequence (the plain causal count).
  for (auto [tq, tk, w] : {std::tuple{40, 24, 5}, std::tuple{24, 40, 7}, std::tuple{33, 33, 1}, std::tuple{30, 30, 64}}) {
    const AttentionProblem q = causal(tq, tk, w);
    EXPECT_DOUBLE_EQ(q.flops(), 4.0 * kept_pairs(q) * 128 * 32) << tq << " " << tk << " " << w;
  }
  EXPECT_DOUBLE_EQ(causal(30, 30, 64).flops(), causal(30, 30, 0).flops());
}

TEST(AttentionWindow, KeptPairsInClosedFormMatchTheRowByRowCount) {
  // Every (Tq, Tk, W) up to 24 x 24, windows 0 (none) to past both lengths.
  for (int64_t tq = 1; tq <= 24; ++tq)
    for (int64_t tk = 1; tk <= 24; ++tk)
      for (int64_t w = 0; w <= 50; w += (w < 26 ? 1 : 24)) {
        int64_t brute = 0;
        for (int64_t i = 0; i < tq; ++i)
          for (int64_t j = 0; j < tk; ++j) brute += attention_causal_keeps(i, j, w) ? 1 : 0;
        ASSERT_EQ(attention_kept_pairs(tq, tk, MaskKind::causal, w), brute) << tq << " " << tk << " " << w;
        ASSERT_EQ(attention_kept_pairs(tq, tk, MaskKind::none, w), tq * tk);
      }
  // Kernel-sized lengths in constant time: T = 2^31 - 1, window 4096: a triangle of 4096 rows
  // then 4096 keys a row.
  const int64_t t = (int64_t(1) << 31) - 1, w = 4096;
  EXPECT_EQ(attention_kept_pairs(t, t, MaskKind::causal, w), w * (w + 1) / 2 + (t - w) * w);
  EXPECT_EQ(attention_kept_pairs(t, t, MaskKind::causal, 0), t * (t + 1) / 2);
  // Past int64: an error, not a wrapped count.
  EXPECT_THROW(attention_kept_pairs(int64_t(1) << 40, int64_t(1) << 40, MaskKind::none, 0), fact::Error);
  EXPECT_THROW(attention_kept_pairs(int64_t(1) << 40, int64_t(1) << 40, MaskKind::causal, 0), fact::Error);
}

TEST(AttentionWindow, TileKeysHoldEveryKeptPairAndSkipOnlyFullyMaskedBlocks) {
  int64_t skipped_total = 0;
  for (auto [tq, tk] : {std::pair<int64_t, int64_t>{700, 700}, {500, 300}, {300, 520}}) {
    for (int64_t w : {0, 1, 50, 100, 129, 4096}) {
      const AttentionProblem p = causal(tq, tk, w);
      for (int64_t bm : {64, 128}) {
        for (int64_t bn : {32, 64, 96, 128, 160, 192}) {
          for (int64_t q0 = 0; q0 < tq; q0 += bm) {
            const AttentionKeyRange r = attention_tile_keys(p, q0, bm, bn);
            SCOPED_TRACE(testing::Message() << tq << "x" << tk << " w" << w << " " << bm << "x" << bn << " q0 " << q0);
            ASSERT_EQ(r.begin % bn, 0);
            ASSERT_GE(r.blocks(bn), 1);
            ASSERT_EQ(r.end, std::min(tk, q0 + bm));
            bool kept_left = false;  // a kept pair left of begin
            for (int64_t i = q0; i < std::min(tq, q0 + bm); ++i)
              for (int64_t j = 0; j < tk; ++j)
                if (attention_causal_keeps(i, j, w)) {
                  ASSERT_LT(j, r.end);
                  kept_left |= j < r.begin;
                }
            ASSERT_FALSE(kept_left);
            // The block just left of begin holds a kept pair of the tile's first row, unless
            // begin is 0 or the tile's rows keep no key at all.
            if (r.begin > 0 && attention_causal_first_key(q0, w) < tk) {
              EXPECT_GT(attention_causal_first_key(q0, w), r.begin - 1);
              EXPECT_LT(attention_causal_first_key(q0, w), r.begin + bn);
            }
            skipped_total += r.begin / bn;
          }
        }
      }
    }
  }
  EXPECT_GT(skipped_total, 1000);  // the windows do skip blocks
  // Without a causal mask every key is visited.
  AttentionProblem none = causal(256, 256, 0);
  none.mask = MaskKind::none;
  EXPECT_EQ(attention_tile_keys(none, 128, 128, 64).begin, 0);
  EXPECT_EQ(attention_tile_keys(none, 128, 128, 64).end, 256);
}

TEST(AttentionWindow, KeySumsInClosedFormMatchVisitingEveryQueryBlock) {
  // Lengths around the block sizes, windows from none to past both lengths, block shapes
  // whose period (block_n / gcd) runs from 1 to 11.
  int64_t checked = 0;
  for (int64_t tq : {1, 63, 64, 65, 300, 700})
    for (int64_t tk : {1, 64, 129, 300, 520})
      for (int64_t w : {0, 1, 50, 64, 129, 4096})
        for (MaskKind mask : {MaskKind::causal, MaskKind::none}) {
          if (mask == MaskKind::none && w > 0) continue;
          AttentionProblem p = causal(tq, tk, w);
          p.mask = mask;
          for (int64_t bm : {64, 128})
            for (int64_t bn : {32, 64, 96, 128, 176, 192}) {
              AttentionKeySums brute;
              for (int64_t qb = 0; qb * bm < tq; ++qb) {
                const AttentionKeyRange r = attention_tile_keys(p, qb * bm, bm, bn);
                ++brute.query_blocks;
                brute.blocks += r.blocks(bn);
                brute.max_blocks = std::max(brute.max_blocks, r.blocks(bn));
                brute.keys += r.end - r.begin;
              }
              const AttentionKeySums s = attention_key_sums(p, bm, bn);
              SCOPED_TRACE(testing::Message() << tq << "x" << tk << " w" << w << " " << bm << "x" << bn);
              ASSERT_EQ(s.query_blocks, brute.query_blocks);
              ASSERT_EQ(s.blocks, brute.blocks);
              ASSERT_EQ(s.max_blocks, brute.max_blocks);
              ASSERT_EQ(s.keys, brute.keys);
              ++checked;
            }
        }
  EXPECT_EQ(checked, 6 * 5 * (6 + 1) * 12);
  // Kernel-sized lengths in O(block_n): T = 2^31 - 1 with a 4096-key window, 128 x 128
  // tiles: 16777216 query blocks; past the first 32 each sees 33 blocks (32 + the partial).
  const int64_t t = (int64_t(1) << 31) - 1;
  const AttentionKeySums big = attention_key_sums(causal(t, t, 4096), 128, 128);
  EXPECT_EQ(big.query_blocks, 16777216);
  EXPECT_EQ(big.max_blocks, 33);
  EXPECT_GT(big.blocks, 32 * big.query_blocks);
  EXPECT_LT(big.blocks, 33 * big.query_blocks);
}

TEST(AttentionWindow, TheKernelsRunItAndTheCostModelCountsOnlyTheWindow) {
  // Mistral-7B at 8192 tokens with its 4096-key window: a family (not vendor-only), both members.
  const AttentionProblem w = causal(8192, 8192, 4096), full = causal(8192, 8192, 0);
  std::string why;
  const auto f = attention_family(w, Precision::bf16, why);
  ASSERT_TRUE(f) << why;
  EXPECT_TRUE(attention_sm90_applies(*f, w, why)) << why;
  const AttentionGpuLimits h200;
  const std::vector<AttentionConfig> space = attention_tuning_space(*f, w, h200, 0);
  ASSERT_GE(space.size(), 2u);
  EXPECT_TRUE(space[0].sm90);
  EXPECT_FALSE(space[1].sm90);
  for (const AttentionConfig& c : {space[0], space[1]}) {
    const double sw = attention_estimate_seconds(*f, c, w, h200), sf = attention_estimate_seconds(*f, c, full, h200);
    // Rows past 4096 see 4096 keys instead of up to 8192: 3/8 of the causal work is left out.
    EXPECT_LT(sw, 0.8 * sf) << attention_kernel_name(*f, c);
    EXPECT_GT(sw, 0.5 * sf) << attention_kernel_name(*f, c);
  }
  EXPECT_NEAR(w.flops() / full.flops(), 0.75, 0.01);
}

TEST(AttentionWindow, ArgsCarryIt) {
  const AttentionProblem p = causal(256, 256, 100);
  int q, k, v, o;
  const FactAttentionArgs a = make_attention_args(p, &q, &k, &v, &o, nullptr);
  EXPECT_EQ(a.window, 100);
  EXPECT_EQ(make_attention_args(causal(256, 256, 0), &q, &k, &v, &o, nullptr).window, 0);
}
