// The sm90 member of the attention space: when it applies (bf16/fp16 inputs, fp32 inputs
// under bf16, an sm_90 GPU or none), its configurations pruned by shared memory and registers as the template
// computes them, its ranking next to the sm80 member on the three problems it was measured
// on (docs/perf-notes.md v10), the budget, and its names (bench/attention_kernels.py's).
#include <algorithm>
#include <gtest/gtest.h>

#include <limits>

#include <cstdio>
#include <string>
#include <vector>

#include "families/attention/realize.h"
#include "families/attention/space_sm90.h"

using namespace fact::realize;
using fact::Precision;

namespace {

// Q, K, V [B, T, H, D] transposed to [B, H, T, D] (Llama's projections); O merged [B, T, H, D].
AttentionProblem bthd(DType dtype, int64_t b, int64_t h, int64_t kv, int64_t t, int64_t d, MaskKind mask) {
  AttentionProblem p;
  p.batch = b; p.heads = h; p.kv_heads = kv; p.seq_q = p.seq_k = t; p.head_dim = d;
  p.dtype = dtype;
  p.scale = 1.0 / 11.3137;
  p.mask = mask;
  p.q = p.o = {t * h * d, d, h * d};
  p.k = p.v = {t * kv * d, d, kv * d};
  p.output_layout = "bthd";
  return p;
}

AttentionProblem llama_block(DType dt = DType::bf16) { return bthd(dt, 16, 32, 8, 2048, 128, MaskKind::none); }
AttentionProblem hf_causal(DType dt = DType::bf16) { return bthd(dt, 4, 32, 8, 2048, 128, MaskKind::causal); }
AttentionProblem mingpt(DType dt = DType::bf16) {  // q/k/v views of [B, T, 3C], O merged [B, T, C]
  AttentionProblem p = bthd(dt, 128, 8, 8, 512, 96, MaskKind::causal);
  p.q = p.k = p.v = {512 * 3 * 768, 96, 3 * 768};
  p.o = {512 * 768, 96, 768};
  return p;
}

AttentionFamily family_of(const AttentionProblem& p, Precision policy = Precision::tf32) {
  std::string why;
  const auto f = attention_family(p, policy, why);
  EXPECT_TRUE(f) << why;
  return *f;
}

std::vector<std::string> ranked_names(const AttentionProblem& p, int budget = 0, AttentionGpuLimits gpu = {}) {
  const AttentionFamily f = family_of(p);
  std::vector<std::string> out;
  for (const auto& c : attention_tuning_space(f, p, gpu, budget)) out.push_back(attention_kernel_name(f, c));
  return out;
}

}  // namespace

AttentionConfig sm90(int bm, int bn, int mb, AttentionSm90Options o = {}) { return {bm, bn, mb, o}; }

TEST(AttentionSm90, AppliesToBf16AndFp16InputsOnAnSm90) {
  std::string why;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (Precision pol : {Precision::tf32, Precision::fp32, Precision::bf16}) {
      const AttentionProblem p = hf_causal(dt);
      EXPECT_TRUE(attention_sm90_applies(family_of(p, pol), p, why)) << why;
    }
  }
  {  // fp32 inputs in 3xTF32 math (the fp32 policy): sm80 only
    const AttentionProblem p = hf_causal(DType::f32);
    EXPECT_FALSE(attention_sm90_applies(family_of(p, Precision::fp32), p, why));
    EXPECT_NE(why.find("bf16 or fp16 inputs"), std::string::npos) << why;
    EXPECT_FALSE(attention_sm90_transposes(family_of(p, Precision::fp32)));
  }
  {  // fp32 inputs in tf32 math: the transposing producer, ranked first; not with an additive mask
    const AttentionProblem p = hf_causal(DType::f32);
    const AttentionFamily tf = family_of(p, Precision::tf32);
    EXPECT_TRUE(attention_sm90_transposes(tf));
    EXPECT_FALSE(attention_sm90_converts(tf));
    EXPECT_TRUE(attention_sm90_applies(tf, p, why)) << why;
    const std::vector<std::string> names = ranked_names(p);
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names[0].rfind("fact_attn_sm90_tf32_f32_d128_causal_128x", 0), 0u) << names[0];
    const AttentionProblem add = bthd(DType::f32, 2, 8, 8, 256, 64, MaskKind::additive);
    EXPECT_FALSE(attention_sm90_applies(family_of(add, Precision::tf32), add, why));
    EXPECT_NE(why.find("additive mask"), std::string::npos) << why;
  }
  // fp32 inputs under bf16: the converting producer, except with an additive mask (fp32 mask
  // elements; the template reads 16-bit pairs).
  const AttentionProblem f32 = hf_causal(DType::f32);
  const AttentionFamily f32_bf16 = family_of(f32, Precision::bf16);
  EXPECT_TRUE(attention_sm90_converts(f32_bf16));
  EXPECT_FALSE(attention_sm90_converts(family_of(f32, Precision::tf32)));
  EXPECT_FALSE(attention_sm90_converts(family_of(hf_causal(), Precision::bf16)));
  EXPECT_TRUE(attention_sm90_applies(f32_bf16, f32, why)) << why;
  const AttentionProblem f32_add = bthd(DType::f32, 2, 8, 8, 256, 64, MaskKind::additive);
  EXPECT_FALSE(attention_sm90_applies(family_of(f32_add, Precision::bf16), f32_add, why));
  EXPECT_NE(why.find("additive mask"), std::string::npos) << why;
  // A keep mask with an odd row stride (uint8 elements), a stride at 2^39.
  AttentionProblem keep = bthd(DType::bf16, 2, 8, 8, 255, 64, MaskKind::keep);
  keep.mask_strides = {256 * 255, 0, 255};
  EXPECT_FALSE(attention_sm90_applies(family_of(keep), keep, why));
  EXPECT_NE(why.find("mask stride 255 is odd"), std::string::npos) << why;
  keep.mask_strides = {256 * 255, 0, 256};
  EXPECT_TRUE(attention_sm90_applies(family_of(keep), keep, why)) << why;
  AttentionProblem far = hf_causal();
  far.q.batch = int64_t(1) << 39;
  EXPECT_FALSE(attention_sm90_applies(family_of(far), far, why));
  // An additive mask with a prologue ((1 - M) * finfo.min): the sm90 kernel reads M as it
  // is, so only the sm80 member is ranked.
  AttentionProblem pad = bthd(DType::bf16, 2, 8, 8, 256, 64, MaskKind::additive);
  pad.mask_strides = {256, 0, 0};
  EXPECT_TRUE(attention_sm90_applies(family_of(pad), pad, why)) << why;
  pad.mask_prologue = AttentionMaskPrologue{1.0, -3.3895313892515355e+38};
  EXPECT_FALSE(attention_sm90_applies(family_of(pad), pad, why));
  EXPECT_NE(why.find("mask with a prologue"), std::string::npos) << why;
  const std::vector<std::string> names = ranked_names(pad);
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) EXPECT_EQ(n.rfind("fact_attn_sm80_bf16_bf16_d64_additive_", 0), 0u) << n;
  // The GPU: cc 9.0 or none (an H200 assumed) takes the member; cc 8.0 and 10.0 do not.
  EXPECT_TRUE(attention_limits(std::nullopt).sm90);
  GpuInfo g;
  g.cc_major = 9;
  EXPECT_TRUE(attention_limits(g).sm90);
  g.cc_major = 8;
  EXPECT_FALSE(attention_limits(g).sm90);
  g.cc_major = 10;
  EXPECT_FALSE(attention_limits(g).sm90);
  AttentionGpuLimits a100;
  a100.sm90 = false;
  for (const auto& n : ranked_names(hf_causal(), 0, a100)) EXPECT_EQ(n.rfind("fact_attn_sm80_", 0), 0u) << n;
}

TEST(AttentionSm90, SharedMemoryAndRegistersAsTheTemplateComputesThem) {
  const AttentionFamily d128{"bf16", DType::bf16, 128, MaskKind::causal};
  AttentionSm90Options chain, wide, one;
  chain.chain = true;
  wide.epilogue = 2;
  one.consumer_wg = 1;
  one.pingpong = false;
  one.epilogue = 0;
  // Q 32 KiB, K/V 2 x 2 x 32 KiB, O 32 KiB, 96 B of barriers, 1 KiB of slack.
  EXPECT_EQ(attention_sm90_smem_bytes(d128, sm90(128, 128, 1)), 32768u + 131072 + 32768 + 96 + 1024);
  EXPECT_EQ(attention_sm90_smem_bytes(d128, sm90(128, 128, 1, chain)), 65536u + 131072 + 32768 + 1120);
  EXPECT_EQ(attention_sm90_smem_bytes(d128, sm90(128, 192, 1, wide)), 32768u + 196608 + 1120);
  EXPECT_EQ(attention_sm90_smem_bytes(d128, sm90(64, 128, 2, one)), 16384u + 131072 + 1120);
  const AttentionGpuLimits h200;
  EXPECT_TRUE(attention_sm90_config_fits(d128, sm90(128, 128, 1, chain), h200));  // 230496 <= 232448
  EXPECT_TRUE(attention_sm90_config_fits(d128, sm90(128, 192, 1, wide), h200));
  EXPECT_FALSE(attention_sm90_config_fits(d128, sm90(128, 192, 1), h200));       // epilogue 1: 263264
  EXPECT_FALSE(attention_sm90_config_fits(d128, sm90(64, 128, 2, one), h200));    // 148576 > 232448 / 2
  const AttentionFamily d96{"bf16", DType::bf16, 96, MaskKind::causal};
  EXPECT_TRUE(attention_sm90_config_fits(d96, sm90(64, 128, 2, one), h200));      // 111712, two per SM
  // Registers: the launch allocation A (65536 / MIN_BLOCKS / threads) plus (A - producer) / WG,
  // at most 240, >= 160: 168 + (168 - 24) / 2; with 64 producer registers 216, not the 224 of
  // (512 - 64) / 2, which the producer does not free (setmaxnreg.inc hung on the H200).
  EXPECT_EQ(attention_sm90_consumer_registers(sm90(128, 128, 1), h200), 240);
  AttentionSm90Options p64;
  p64.producer_regs = 64;
  EXPECT_EQ(attention_sm90_consumer_registers(sm90(128, 128, 1, p64), h200), 216);
  EXPECT_EQ(attention_sm90_consumer_registers(sm90(64, 128, 2, one), h200), 232);
  AttentionSm90Options greedy = one;
  greedy.producer_regs = 120;
  EXPECT_EQ(attention_sm90_consumer_registers(sm90(64, 128, 2, greedy), h200), 136);
  EXPECT_FALSE(attention_sm90_config_fits(d96, sm90(64, 128, 2, greedy), h200));
  // The template's static_asserts; chaining through Q's tile fits (two Q tiles, no O tile).
  AttentionSm90Options chain_q = chain;
  chain_q.epilogue = 2;
  EXPECT_TRUE(attention_sm90_config_fits(d96, sm90(128, 128, 1, chain_q), h200));
  EXPECT_FALSE(attention_sm90_config_fits(d96, sm90(128, 128, 2), h200));  // 2 CTAs need 1 WG
  EXPECT_FALSE(attention_sm90_config_fits(d96, sm90(64, 128, 1), h200));   // BLOCK_M = 64 x WG
  EXPECT_FALSE(attention_sm90_config_fits(d96, sm90(128, 32, 1), h200));
  AttentionSm90Options c2;
  c2.cluster = 2;
  EXPECT_FALSE(attention_sm90_config_fits(d96, sm90(128, 128, 1, c2), h200));  // causal: no clusters
  // The space: 5 configurations at head dim 128 (no one-WG one), 6 at 96 and 64, one more
  // without a mask (the split tail).
  EXPECT_EQ(attention_sm90_space(d128, h200).size(), 5u);
  EXPECT_EQ(attention_sm90_space(d96, h200).size(), 6u);
  EXPECT_EQ(attention_sm90_space({"f16", DType::f16, 64, MaskKind::none}, h200).size(), 7u);
  EXPECT_EQ(ranked_names(llama_block()).size(), 12u + 6);
  EXPECT_EQ(ranked_names(mingpt()).size(), 12u + 6);
}

TEST(AttentionSm90, Fp32InputsStageTheirTilesInSlotsThatFit) {
  const AttentionFamily d128{"bf16", DType::f32, 128, MaskKind::none};
  const AttentionFamily d96{"bf16", DType::f32, 96, MaskKind::causal};
  const AttentionGpuLimits h200;
  AttentionSm90Options cv, cv_chain;
  cv.epilogue = cv_chain.epilogue = 0;
  cv.producer_regs = cv_chain.producer_regs = 56;
  cv_chain.chain = true;
  // d128: Q 32 KiB and the K/V ring 128 KiB leave room for 4 slots of 32 x 128 x 4 = 16 KiB;
  // with a second Q tile, 2. Barriers: 8 x (4 + 8 + slots) bytes.
  EXPECT_EQ(attention_sm90_staging_slots(d128, sm90(128, 128, 1, cv)), 4);
  EXPECT_EQ(attention_sm90_smem_bytes(d128, sm90(128, 128, 1, cv)), 32768u + 131072 + 65536 + 128 + 1024);
  EXPECT_EQ(attention_sm90_staging_slots(d128, sm90(128, 128, 1, cv_chain)), 2);
  EXPECT_EQ(attention_sm90_smem_bytes(d128, sm90(128, 128, 1, cv_chain)), 65536u + 131072 + 32768 + 112 + 1024);
  EXPECT_TRUE(attention_sm90_config_fits(d128, sm90(128, 128, 1, cv_chain), h200));
  // d96: 4 slots of 12 KiB beside 2 Q tiles of 24 KiB and the 96 KiB ring.
  EXPECT_EQ(attention_sm90_staging_slots(d96, sm90(128, 128, 1, cv_chain)), 4);
  // Not for converting: epilogue 1 (O is fp32), a 192-key tile (no room for 2 slots).
  EXPECT_FALSE(attention_sm90_config_fits(d96, sm90(128, 128, 1), h200));
  AttentionSm90Options wide = cv;
  EXPECT_FALSE(attention_sm90_config_fits(d128, sm90(128, 192, 1, wide), h200));
  // 16-bit inputs stage nothing.
  EXPECT_EQ(attention_sm90_staging_slots({"bf16", DType::bf16, 128, MaskKind::none}, sm90(128, 128, 1, cv)), 0);
  // The space: three configurations, named bf16_f32; first ranked for fp32 inputs under bf16.
  const auto space = attention_sm90_space(d96, h200);
  ASSERT_EQ(space.size(), 3u);
  EXPECT_EQ(attention_sm90_kernel_name(d96, space[1]),
            "fact_attn_sm90_bf16_f32_d96_causal_128x128_s2_wg2_ov_pp_mb1_persist_chain_r56");
  EXPECT_EQ(attention_sm90_kernel_name(d96, space[2]),
            "fact_attn_sm90_bf16_f32_d96_causal_128x128_s2_wg2_ov_pp_mb1_persist_r72");
  const AttentionProblem p = mingpt(DType::f32);
  const AttentionFamily f = family_of(p, Precision::bf16);
  const auto ranked = attention_tuning_space(f, p, h200, 2);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(attention_kernel_name(f, ranked[0]).rfind("fact_attn_sm90_bf16_f32_d96_causal_", 0), 0u);
  EXPECT_EQ(attention_kernel_name(f, ranked[1]).rfind("fact_attn_sm80_bf16_f32_d96_causal_", 0), 0u);
}

TEST(AttentionSm90, Tf32TilesOfFourByteElementsFitAt64Or96Keys) {
  const AttentionFamily d128{"tf32", DType::f32, 128, MaskKind::none};
  const AttentionFamily d96{"tf32", DType::f32, 96, MaskKind::causal};
  const AttentionGpuLimits h200;
  AttentionSm90Options tf;
  tf.epilogue = 0;
  tf.producer_regs = 64;
  // d128, 64 keys: Q 64 KiB, K and V^T 2 x 2 x 32 KiB, 2 slots of 16 KiB, 8 x (4 + 8 + 2) B.
  EXPECT_EQ(attention_sm90_staging_slots(d128, sm90(128, 64, 1, tf)), 2);
  EXPECT_EQ(attention_sm90_smem_bytes(d128, sm90(128, 64, 1, tf)), 65536u + 131072 + 32768 + 112 + 1024);
  EXPECT_TRUE(attention_sm90_config_fits(d128, sm90(128, 64, 1, tf), h200));
  EXPECT_FALSE(attention_sm90_config_fits(d128, sm90(128, 96, 1, tf), h200));  // 64 + 192 KiB of tiles
  // d96, 96 keys: Q 48 KiB, 4 x 36 KiB, 2 slots of 12 KiB; 128 keys do not fit.
  EXPECT_EQ(attention_sm90_staging_slots(d96, sm90(128, 96, 1, tf)), 2);
  EXPECT_TRUE(attention_sm90_config_fits(d96, sm90(128, 96, 1, tf), h200));
  EXPECT_FALSE(attention_sm90_config_fits(d96, sm90(128, 128, 1, tf), h200));
  // Epilogue 1: the fp32 O tile (48 KiB at d96) beside 64-key stages: 2 staging slots left;
  // not at d128 (64 + 128 + 64 KiB of tiles). Epilogue 2 only chained; 64-row staging never
  // (V^T's key panels are 32 keys).
  AttentionSm90Options e1 = tf, e2 = tf, e2_chain = tf, sr64 = tf;
  e1.epilogue = 1;
  e2.epilogue = e2_chain.epilogue = 2;
  e2_chain.chain = true;
  sr64.stage_rows = 64;
  EXPECT_EQ(attention_sm90_staging_slots(d96, sm90(128, 64, 1, e1)), 2);
  EXPECT_EQ(attention_sm90_smem_bytes(d96, sm90(128, 64, 1, e1)), 49152u * 2 + 98304 + 24576 + 112 + 1024);
  EXPECT_TRUE(attention_sm90_config_fits(d96, sm90(128, 64, 1, e1), h200));
  EXPECT_FALSE(attention_sm90_config_fits(d128, sm90(128, 64, 1, e1), h200));
  EXPECT_FALSE(attention_sm90_config_fits(d96, sm90(128, 64, 1, e2), h200));
  EXPECT_TRUE(attention_sm90_config_fits(d96, sm90(128, 64, 1, e2_chain), h200));
  EXPECT_FALSE(attention_sm90_config_fits({"tf32", DType::f32, 64, MaskKind::none}, sm90(128, 64, 1, sr64), h200));
  // The space: eager with epilogue 1 where it fits, eager and lazy, chained and not, at each
  // key count that fits (chaining's second Q tile leaves no room at 96 keys, nor at head dim
  // 128), and the load warp with K at its block's start, O from registers at each key count
  // and with epilogue 1 or chained where those fit (so neither at head dim 128), eager with
  // the split tail without a mask; names tf32_f32, 72 producer registers (the load warp's
  // 120, 112 and 104).
  const auto s128 = attention_sm90_space(d128, h200);
  ASSERT_EQ(s128.size(), 5u);
  EXPECT_EQ(attention_sm90_kernel_name(d128, s128[0]), "fact_attn_sm90_tf32_f32_d128_nomask_128x64_s2_wg2_ov_pp_mb1_persist_r72");
  EXPECT_EQ(attention_sm90_kernel_name(d128, s128[1]), "fact_attn_sm90_tf32_f32_d128_nomask_128x64_s2_wg2_ov_pp_mb1_persist_st_r72");
  EXPECT_EQ(attention_sm90_kernel_name(d128, s128[3]), "fact_attn_sm90_tf32_f32_d128_nomask_128x64_s2_wg2_ov_pp_mb1_persist_ka0_lw_r120");
  EXPECT_EQ(attention_sm90_kernel_name(d128, s128[4]), "fact_attn_sm90_tf32_f32_d128_nomask_128x64_s2_wg2_ov_pp_mb1_persist_ka0_lw_st_r120");
  const auto s96 = attention_sm90_space(d96, h200);
  ASSERT_EQ(s96.size(), 11u);
  EXPECT_EQ(attention_sm90_kernel_name(d96, s96[2]), "fact_attn_sm90_tf32_f32_d96_causal_128x96_s2_wg2_ov_pp_mb1_persist_ka0_lw_bt_r120");
  EXPECT_EQ(attention_sm90_kernel_name(d96, s96[3]), "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_e1_bt_r72");
  EXPECT_EQ(attention_sm90_kernel_name(d96, s96[8]),
            "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_e1_ka0_lw_bt_r112");
  EXPECT_EQ(attention_sm90_kernel_name(d96, s96[9]),
            "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_ka0_lw_bt_r120");
  EXPECT_EQ(attention_sm90_kernel_name(d96, s96[10]),
            "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_lazy_chain_ka0_lw_bt_r104");
  EXPECT_EQ(attention_sm90_space({"tf32", DType::f32, 64, MaskKind::none}, h200).size(), 30u);
  // Ranked: the load warp first (v22: 4 % faster on the Llama block), the split tail before
  // the same kernel without it, eager before lazy (measured 27 % slower for tf32, v16).
  const std::vector<std::string> llama = ranked_names(llama_block(DType::f32));
  ASSERT_GE(llama.size(), 5u);
  EXPECT_EQ(llama[0], "fact_attn_sm90_tf32_f32_d128_nomask_128x64_s2_wg2_ov_pp_mb1_persist_ka0_lw_st_r120");
  const auto at = [&](const std::string& n) { return std::find(llama.begin(), llama.end(), n) - llama.begin(); };
  const std::string tf32_llama = "fact_attn_sm90_tf32_f32_d128_nomask_128x64_s2_wg2_ov_pp_mb1_persist_";
  EXPECT_LT(at(tf32_llama + "ka0_lw_r120"), at(tf32_llama + "st_r72"));
  EXPECT_LT(at(tf32_llama + "st_r72"), at(tf32_llama + "r72"));
  EXPECT_LT(at(tf32_llama + "r72"), at(tf32_llama + "lazy_r72"));
  EXPECT_LT(at(tf32_llama + "lazy_r72"), std::ptrdiff_t(llama.size()));
  // Ranked: an sm90 kernel first on minGPT's core, at twice the bf16 step's cost: the load
  // warp's (its 0.57 steps a tile saved and 1.5 % a step, v18 and v22),
  // O from registers before its own O tile (0.19 steps a tile, v22).
  const AttentionProblem p = mingpt(DType::f32);
  const std::vector<std::string> names = ranked_names(p, 2);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_ka0_lw_bt_r120");
  const std::vector<std::string> all = ranked_names(p);
  const auto sm90_second = std::find_if(all.begin() + 1, all.end(),
                                        [](const std::string& n) { return n.rfind("fact_attn_sm90_", 0) == 0; });
  ASSERT_NE(sm90_second, all.end());
  EXPECT_EQ(*sm90_second, "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_e1_ka0_lw_bt_r112");
  EXPECT_EQ(names[1].rfind("fact_attn_sm80_tf32_f32_d96_causal_", 0), 0u) << names[1];
  const AttentionFamily bf{"bf16", DType::bf16, 96, MaskKind::causal};
  AttentionSm90Options bf_o;
  bf_o.epilogue = 0;
  bf_o.producer_regs = 64;
  const AttentionProblem pb = mingpt();
  tf.lazy_rescale = bf_o.lazy_rescale = false;
  tf.epilogue = bf_o.epilogue = 1;  // the same fixed steps: the ratio is the steps'

  EXPECT_NEAR(attention_sm90_compute_seconds(d96, sm90(128, 96, 1, tf), p, h200) /
                  attention_sm90_compute_seconds(bf, sm90(128, 96, 1, bf_o), pb, h200),
              2.2, 1e-9);
}

TEST(AttentionSm90, RanksTheMeasuredBestFirstOnTheThreeProblems) {
  const std::string p = "fact_attn_sm90_bf16_";
  const std::string pp = "_s2_wg2_ov_pp_mb1_persist";
  // The Llama block: the split tail (8192 tiles on 132 SMs: the last 8 in 16 parts each),
  // then the best sm80, then the rest of both by estimate.
  const auto llama = ranked_names(llama_block());
  const std::vector<std::string> llama_sm90{p + "d128_nomask_128x128" + pp + "_e1_lazy_st",
                                            p + "d128_nomask_128x128" + pp + "_e1_lazy", p + "d128_nomask_128x128" + pp + "_e1",
                                            p + "d128_nomask_128x128" + pp + "_e1_lazy_chain",
                                            p + "d128_nomask_128x128" + pp + "_e1_chain", p + "d128_nomask_128x192" + pp + "_e2_lazy"};
  EXPECT_EQ(llama[0], llama_sm90[0]);
  EXPECT_EQ(llama[1].rfind("fact_attn_sm80_bf16_bf16_d128_nomask_", 0), 0u) << llama[1];
  EXPECT_EQ(std::vector<std::string>(llama.begin() + 2, llama.begin() + 7),
            std::vector<std::string>(llama_sm90.begin() + 1, llama_sm90.end()));
  // HF Llama causal: the default, then chaining (2 % slower measured, v10f); causal
  // persistent kernels balance their last two rounds (_bt, v21).
  const auto hf = ranked_names(hf_causal());
  EXPECT_EQ(hf[0], p + "d128_causal_128x128" + pp + "_e1_lazy_bt");
  EXPECT_EQ(hf[2], p + "d128_causal_128x128" + pp + "_e1_lazy_chain_bt");
  EXPECT_EQ(hf[3], p + "d128_causal_128x128" + pp + "_e1_bt");
  // minGPT (1-4 key blocks per tile): chaining first.
  const auto gpt = ranked_names(mingpt());
  EXPECT_EQ(gpt[0], p + "d96_causal_128x128" + pp + "_e1_lazy_chain_bt");
  EXPECT_EQ(gpt[1].rfind("fact_attn_sm80_bf16_bf16_d96_causal_", 0), 0u) << gpt[1];
  EXPECT_EQ(gpt[2], p + "d96_causal_128x128" + pp + "_e1_chain_bt");
  EXPECT_EQ(gpt[3], p + "d96_causal_128x128" + pp + "_e1_lazy_bt");
  // Keep and drop masks: without lazy rescaling first (v10i).
  AttentionProblem keep = bthd(DType::bf16, 2, 32, 8, 1024, 128, MaskKind::keep);
  keep.mask_strides = {1024 * 1024, 0, 1024};
  EXPECT_EQ(ranked_names(keep)[0].find("_lazy"), std::string::npos) << ranked_names(keep)[0];
  // A budget keeps the first N: 2 builds the sm90 default and the best sm80 kernel.
  EXPECT_EQ(ranked_names(llama_block(), 2), std::vector<std::string>(llama.begin(), llama.begin() + 2));
  EXPECT_EQ(ranked_names(mingpt(), 4), std::vector<std::string>(gpt.begin(), gpt.begin() + 4));
  // The estimate of the default is the measured time within 10 % on the compute-bound shapes
  // (1.671 and 0.249 ms, perf-notes v10h); the sm80 member's best ranks behind.
  const AttentionFamily f = family_of(llama_block());
  const double s90 = attention_estimate_seconds(f, sm90(128, 128, 1), llama_block(), {});
  EXPECT_NEAR(s90, 1.671e-3, 0.17e-3);
  const AttentionFamily fh = family_of(hf_causal());
  EXPECT_NEAR(attention_estimate_seconds(fh, sm90(128, 128, 1), hf_causal(), {}), 0.249e-3, 0.025e-3);
  EXPECT_LT(s90, attention_estimate_seconds(f, {128, 64, 1}, llama_block(), {}));
}

TEST(AttentionSm90, NamesSpellEveryParameter) {
  const AttentionFamily f{"bf16", DType::bf16, 128, MaskKind::causal};
  // The harness's names (bench/attention_kernels.py Sm90.name; bench/results/attention-kernels-h200).
  EXPECT_EQ(attention_kernel_name(f, sm90(128, 128, 1)), "fact_attn_sm90_bf16_d128_causal_128x128_s2_wg2_ov_pp_mb1_persist_e1_lazy");
  AttentionSm90Options o;
  o.chain = true;
  EXPECT_EQ(attention_sm90_kernel_name({"bf16", DType::bf16, 96, MaskKind::causal}, sm90(128, 128, 1, o)),
            "fact_attn_sm90_bf16_d96_causal_128x128_s2_wg2_ov_pp_mb1_persist_e1_lazy_chain");
  AttentionSm90Options all;
  all.stages = 3;
  all.persistent = false;
  all.epilogue = 0;
  all.l2hint = true;
  all.lazy_rescale = false;
  all.cluster = 2;
  all.producer_regs = 40;
  EXPECT_EQ(attention_kernel_name({"f16", DType::f16, 64, MaskKind::none}, sm90(128, 160, 1, all)),
            "fact_attn_sm90_f16_d64_nomask_128x160_s3_wg2_ov_pp_mb1_l2_c2_r40");
  // tf32 with Q in registers (not in the space; the template's option).
  AttentionSm90Options qr;
  qr.epilogue = 0;
  qr.producer_regs = 64;
  qr.qreg = true;
  const AttentionFamily tf{"tf32", DType::f32, 96, MaskKind::causal};
  // A template option `o` on minGPT's tf32 family: named `name`, a fitting configuration,
  // and refused for family `other` (the option's producer is not there).
  const auto option_only_for_tf = [&](const AttentionSm90Options& o, const std::string& name,
                                      const AttentionFamily& other) {
    EXPECT_EQ(attention_kernel_name(tf, sm90(128, 64, 1, o)), name);
    EXPECT_TRUE(attention_sm90_config_fits(tf, sm90(128, 64, 1, o), AttentionGpuLimits{})) << name;
    EXPECT_FALSE(attention_sm90_config_fits(other, sm90(128, 128, 1, o), AttentionGpuLimits{})) << name;
  };
  const AttentionFamily bf16_d96{"bf16", DType::bf16, 96, MaskKind::causal};
  option_only_for_tf(qr, "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_lazy_qr_r64", bf16_d96);
  // L2 prefetch (the template's option): named _pf<N>, 0-4 blocks ahead, not with clusters
  // nor the converting producer.
  AttentionSm90Options pf = qr;
  pf.qreg = false;
  pf.prefetch = 2;
  option_only_for_tf(pf, "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_lazy_pf2_r64",
                     {"bf16", DType::f32, 96, MaskKind::causal});  // converting
  pf.prefetch = 5;
  EXPECT_FALSE(attention_sm90_config_fits(tf, sm90(128, 64, 1, pf), AttentionGpuLimits{}));
  // K at the start of each block's transposition (the template's option): named _ka0, tf32
  // with two stages or more only (the 16-bit producers and one stage have no such order).
  AttentionSm90Options ka = qr;
  ka.qreg = false;
  ka.k_ahead = 0;
  option_only_for_tf(ka, "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_lazy_ka0_r64", bf16_d96);
  ka.stages = 1;
  EXPECT_FALSE(attention_sm90_config_fits(tf, sm90(128, 64, 1, ka), AttentionGpuLimits{}));  // one stage
  ka.stages = 2;
  ka.k_ahead = 2;
  EXPECT_FALSE(attention_sm90_config_fits(tf, sm90(128, 64, 1, ka), AttentionGpuLimits{}));
  // A load warp (the template's option): named _lw, tf32 only; each staging slot gets an
  // empty barrier too. d128 causal 128x64: Q 64 KiB, K/V 2 x 2 x 32 KiB, 2 slots of 16 KiB,
  // barriers 8 x (4 + 8 + 2 x 2), 1 KiB of slack.
  AttentionSm90Options lw = qr;
  lw.qreg = false;
  lw.load_warp = true;
  lw.producer_regs = 104;
  option_only_for_tf(lw, "fact_attn_sm90_tf32_f32_d96_causal_128x64_s2_wg2_ov_pp_mb1_persist_lazy_lw_r104", bf16_d96);
  const AttentionFamily tf128{"tf32", DType::f32, 128, MaskKind::causal};
  EXPECT_EQ(attention_kernel_name(tf128, sm90(128, 64, 1, lw)),
            "fact_attn_sm90_tf32_f32_d128_causal_128x64_s2_wg2_ov_pp_mb1_persist_lazy_lw_r104");
  EXPECT_TRUE(attention_sm90_config_fits(tf128, sm90(128, 64, 1, lw), AttentionGpuLimits{}));
  EXPECT_EQ(attention_sm90_staging_slots(tf128, sm90(128, 64, 1, lw)), 2);
  EXPECT_EQ(attention_sm90_smem_bytes(tf128, sm90(128, 64, 1, lw)), 65536u + 131072 + 32768 + 128 + 1024);
  lw.load_warp = false;
  EXPECT_EQ(attention_sm90_smem_bytes(tf128, sm90(128, 64, 1, lw)), 65536u + 131072 + 32768 + 112 + 1024);
  // The split tail: named _st, persistent kernels without a mask, clusters or epilogue 2.
  AttentionSm90Options st;
  st.split_tail = true;
  const AttentionFamily bf_none{"bf16", DType::bf16, 128, MaskKind::none};
  EXPECT_EQ(attention_kernel_name(bf_none, sm90(128, 128, 1, st)),
            "fact_attn_sm90_bf16_d128_nomask_128x128_s2_wg2_ov_pp_mb1_persist_e1_lazy_st");
  EXPECT_TRUE(attention_sm90_config_fits(bf_none, sm90(128, 128, 1, st), AttentionGpuLimits{}));
  EXPECT_FALSE(attention_sm90_config_fits({"bf16", DType::bf16, 128, MaskKind::causal}, sm90(128, 128, 1, st),
                                          AttentionGpuLimits{}));  // causal tiles differ: no uniform tail
  AttentionSm90Options st_bad = st;
  st_bad.epilogue = 2;
  EXPECT_FALSE(attention_sm90_config_fits(bf_none, sm90(128, 128, 1, st_bad), AttentionGpuLimits{}));
  st_bad = st;
  st_bad.persistent = false;
  EXPECT_FALSE(attention_sm90_config_fits(bf_none, sm90(128, 128, 1, st_bad), AttentionGpuLimits{}));
  st_bad = st;
  st_bad.cluster = 2;
  st_bad.producer_regs = 40;
  EXPECT_FALSE(attention_sm90_config_fits(bf_none, sm90(128, 128, 1, st_bad), AttentionGpuLimits{}));
  AttentionSm90Options one;
  one.consumer_wg = 1;
  one.pingpong = false;
  one.overlap = false;
  one.epilogue = 2;
  EXPECT_EQ(attention_kernel_name({"bf16", DType::bf16, 64, MaskKind::drop}, sm90(64, 96, 2, one)),
            "fact_attn_sm90_bf16_d64_drop_64x96_s2_wg1_mb2_persist_e2_lazy");
  EXPECT_TRUE(is_attention_kernel_name(attention_kernel_name(f, sm90(128, 128, 1))));
  // The sm80 names are unchanged.
  EXPECT_EQ(attention_kernel_name(f, {128, 64, 1}), "fact_attn_sm80_bf16_bf16_d128_causal_128x64_mb1");
}

TEST(AttentionSm90, SplitsATailRoundOfAtMostHalfTheGridOverItsKeys) {
  // The Llama block: 8192 tiles on 132 SMs leave 8 in a 63rd round, each split in 16 parts
  // (16 key blocks of 128, or 32 of 64 at tf32: still 132 / 8 = 16 parts).
  EXPECT_EQ(attention_sm90_split_plan(8192, 16, 132), (AttentionSplitPlan{8184, 16}));
  EXPECT_EQ(attention_sm90_split_plan(8192, 32, 132), (AttentionSplitPlan{8184, 16}));
  EXPECT_EQ(attention_sm90_split_plan(8184, 16, 132), (AttentionSplitPlan{8184, 1}));  // whole rounds
  EXPECT_EQ(attention_sm90_split_plan(8184 + 67, 16, 132), (AttentionSplitPlan{8251, 1}));  // more than half
  EXPECT_EQ(attention_sm90_split_plan(8184 + 66, 16, 132), (AttentionSplitPlan{8184, 2}));
  EXPECT_EQ(attention_sm90_split_plan(40, 16, 132), (AttentionSplitPlan{0, 3}));  // one short round
  EXPECT_EQ(attention_sm90_split_plan(8192, 1, 132), (AttentionSplitPlan{8192, 1}));  // one key block
  EXPECT_EQ(attention_sm90_split_plan(8192, 16, 0), (AttentionSplitPlan{8192, 1}));
  // The estimate: 62 rounds of 17 steps (16 blocks and the first Q K^T) and one part of a
  // block, its first Q K^T and 3 steps for the stores and the combine, plus 3 us for the
  // combine's launch, against 63 rounds.
  const AttentionFamily f{"bf16", DType::bf16, 128, MaskKind::none};
  AttentionSm90Options st;
  st.split_tail = true;
  const AttentionGpuLimits h200;
  const double plain = attention_sm90_compute_seconds(f, sm90(128, 128, 1), llama_block(), h200);
  const double step = plain / (63.0 * 17);
  EXPECT_NEAR(attention_sm90_compute_seconds(f, sm90(128, 128, 1, st), llama_block(), h200),
              (62.0 * 17 + 5) * step + 3e-6, 1e-12);
  // One short round (64 tiles of 1000 rows, 2 parts each; perf-notes v20): the split ranks
  // behind the plain kernel at bf16 (measured 1-2 us slower) and ahead at tf32 (10 us faster).
  const AttentionProblem edge = bthd(DType::bf16, 2, 4, 4, 1000, 128, MaskKind::none);
  EXPECT_GT(attention_sm90_compute_seconds(f, sm90(128, 128, 1, st), edge, h200),
            attention_sm90_compute_seconds(f, sm90(128, 128, 1), edge, h200));
  const AttentionFamily tf{"tf32", DType::f32, 128, MaskKind::none};
  AttentionSm90Options tf_plain;
  tf_plain.epilogue = 0;
  tf_plain.lazy_rescale = false;
  tf_plain.producer_regs = 64;
  AttentionSm90Options tf_st = tf_plain;
  tf_st.split_tail = true;
  const AttentionProblem edge32 = bthd(DType::f32, 2, 4, 4, 1000, 128, MaskKind::none);
  EXPECT_LT(attention_sm90_compute_seconds(tf, sm90(128, 64, 1, tf_st), edge32, h200),
            attention_sm90_compute_seconds(tf, sm90(128, 64, 1, tf_plain), edge32, h200));
  // Causal tiles differ: no split, and no such configuration.
  EXPECT_FALSE(attention_sm90_config_fits({"bf16", DType::bf16, 128, MaskKind::causal}, sm90(128, 128, 1, st), h200));
}

TEST(AttentionSm90, BalancesTheLastTwoRoundsOfCausalTiles) {
  // minGPT's core at tf32: 4096 tiles of 8, 6, 4, 2 key blocks (+ 1 step each) on 132 SMs.
  // The plain order's alternating rounds leave CTAs at up to 192 steps (30 rounds of pairs
  // summing 14, then a 9 and a 3 on the same CTA); longest first over the last two, 189.
  const std::vector<int64_t> mingpt_tf32{8, 6, 4, 2};
  EXPECT_DOUBLE_EQ(attention_sm90_balanced_steps(mingpt_tf32, 1.0, 4096, 132), 189.0);
  // The same deal with no fixed steps (chained epilogue 1): blocks alone, 150 through the
  // plain rounds and an 8-block tile.
  EXPECT_DOUBLE_EQ(attention_sm90_balanced_steps(mingpt_tf32, 0.0, 4096, 132), 158.0);
  // HF Llama causal at bf16: 2048 tiles of 16 classes (1-16 blocks + 1): 150 against 152.
  std::vector<int64_t> hf(16);
  for (int c = 0; c < 16; ++c) hf[size_t(c)] = 16 - c;
  EXPECT_DOUBLE_EQ(attention_sm90_balanced_steps(hf, 1.0, 2048, 132), 150.0);
  // Where the template keeps the plain order: one round, more than 160 CTAs.
  EXPECT_EQ(attention_sm90_balanced_steps(mingpt_tf32, 1.0, 100, 132), std::numeric_limits<double>::infinity());
  EXPECT_EQ(attention_sm90_balanced_steps(mingpt_tf32, 1.0, 4096, 200), std::numeric_limits<double>::infinity());
  // The estimate takes the lesser: below the plain order's, at the simulation's ratio.
  const AttentionFamily f{"tf32", DType::f32, 96, MaskKind::causal};
  AttentionSm90Options lw;
  lw.epilogue = 1;
  lw.lazy_rescale = false;
  lw.k_ahead = 0;
  lw.load_warp = true;
  lw.producer_regs = 104;
  AttentionSm90Options lw_bt = lw;
  lw_bt.balance_tail = true;
  const AttentionGpuLimits h200;
  EXPECT_LT(attention_sm90_compute_seconds(f, sm90(128, 64, 1, lw_bt), mingpt(DType::f32), h200),
            attention_sm90_compute_seconds(f, sm90(128, 64, 1, lw), mingpt(DType::f32), h200));
  EXPECT_FALSE(attention_sm90_config_fits({"bf16", DType::bf16, 128, MaskKind::none}, sm90(128, 128, 1, lw_bt), h200));
  // The GPU test's problem (test_gpu.cpp: 320 causal tiles, with and without a window): a
  // balanced kernel ranks first at bf16 and at tf32.
  for (const int64_t window : {int64_t(0), int64_t(300)}) {
    for (const DType dt : {DType::bf16, DType::f32}) {
      AttentionProblem g = bthd(dt, 2, 16, 4, 1280, 128, MaskKind::causal);
      g.window = window;
      const std::string first = ranked_names(g, 1).at(0);
      EXPECT_NE(first.find("_bt"), std::string::npos) << first;
    }
  }
}
