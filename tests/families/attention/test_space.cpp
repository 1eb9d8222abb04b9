// The attention family per policy and dtype, the vendor-only reasons, the tuning space with
// its shared-memory pruning, the cost model's ranking and the kernel names.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <set>

#include "families/attention/candidates.h"
#include "families/attention/space.h"

using namespace fact::realize;
using fact::Precision;

namespace {

AttentionProblem contiguous(DType dtype, int64_t d = 96, MaskKind mask = MaskKind::causal, int64_t t = 1024,
                            int64_t b = 4, int64_t h = 12) {
  AttentionProblem p;
  p.batch = b; p.heads = p.kv_heads = h; p.seq_q = p.seq_k = t; p.head_dim = d;
  p.dtype = dtype;
  p.scale = 0.1020620726;
  p.mask = mask;
  p.q = p.k = p.v = p.o = {h * t * d, t * d, d};
  return p;
}

AttentionGpuLimits a100() {  // sm_80: 164 KiB per SM, 163 KiB per block (opt-in), no sm_90a code
  AttentionGpuLimits l;
  l.sm_count = 108;
  l.smem_per_block = 163 * 1024;
  l.smem_per_sm = 164 * 1024;
  l.sm90 = false;
  return l;
}

AttentionGpuLimits h200_sm80_only() {  // the H200's figures, the sm80 member alone
  AttentionGpuLimits l;
  l.sm90 = false;
  return l;
}

std::set<std::string> names(const AttentionFamily& f, const std::vector<AttentionConfig>& cs) {
  std::set<std::string> out;
  for (const auto& c : cs) out.insert(attention_kernel_name(f, c));
  return out;
}

}  // namespace

TEST(AttentionFamily, MathFollowsThePolicyForFp32AndTheDtypeOtherwise) {
  std::string why;
  auto f = attention_family(contiguous(DType::f32), Precision::tf32, why);
  ASSERT_TRUE(f) << why;
  EXPECT_EQ(f->math, "tf32");
  EXPECT_EQ(f->element, DType::f32);
  f = attention_family(contiguous(DType::f32), Precision::bf16, why);
  ASSERT_TRUE(f) << why;
  EXPECT_EQ(f->math, "bf16");       // converted while loading
  EXPECT_EQ(f->element, DType::f32);  // O stays fp32
  f = attention_family(contiguous(DType::f32), Precision::fp32, why);
  ASSERT_TRUE(f) << why;
  EXPECT_EQ(f->math, "3xtf32");     // fp32-accurate: three tf32 products of split operands
  for (Precision pol : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    f = attention_family(contiguous(DType::bf16), pol, why);
    ASSERT_TRUE(f) << why;
    EXPECT_EQ(f->math, "bf16");
    f = attention_family(contiguous(DType::f16), pol, why);
    ASSERT_TRUE(f) << why;
    EXPECT_EQ(f->math, "f16");
    EXPECT_EQ(f->element, DType::f16);
  }
}

TEST(AttentionFamily, VendorOnlyReasons) {
  std::string why;
  EXPECT_FALSE(attention_family(contiguous(DType::bf16, 80), Precision::tf32, why));
  EXPECT_NE(why.find("head dim 80 is not built"), std::string::npos) << why;
  EXPECT_NE(why.find("the ATen path runs"), std::string::npos) << why;
  EXPECT_FALSE(attention_family(contiguous(DType::f32, 80), Precision::fp32, why));
  EXPECT_NE(why.find("head dim 80 is not built"), std::string::npos) << why;
  // A row stride of 98 fp32 elements (392 bytes) breaks 16-byte vector loads.
  AttentionProblem p = contiguous(DType::f32, 96);
  p.k.row = 98;
  EXPECT_FALSE(attention_family(p, Precision::tf32, why));
  EXPECT_NE(why.find("strides.k: the row stride 98 is not a multiple of 16 bytes"), std::string::npos) << why;
  // bf16: 8 elements per vector, so a head stride of 96 + 4 breaks it too.
  p = contiguous(DType::bf16, 64);
  p.o.head = 64 * 1024 + 4;
  EXPECT_FALSE(attention_family(p, Precision::tf32, why));
  EXPECT_NE(why.find("strides.o: the head stride"), std::string::npos) << why;
}

TEST(AttentionSpace, SharedMemoryAsTheTemplateComputesIt) {
  // kSmemBytes = sizeof(SmemT) * (BLOCK_N * pitch_K + max(BLOCK_M, BLOCK_N) * pitch_V).
  const AttentionFamily tf32{"tf32", DType::f32, 128, MaskKind::none};
  EXPECT_EQ(attention_smem_bytes(tf32, {128, 64, 1}), 4u * (64 * 136 + 128 * 132));
  EXPECT_EQ(attention_smem_bytes(tf32, {64, 32, 2}), 4u * (32 * 136 + 64 * 132));
  EXPECT_EQ(attention_smem_bytes({"3xtf32", DType::f32, 128, MaskKind::none}, {128, 64, 1}),
            attention_smem_bytes(tf32, {128, 64, 1}));  // fp32 in shared memory too
  const AttentionFamily bf16{"bf16", DType::f32, 96, MaskKind::causal};  // fp32 inputs, bf16 in shared memory
  EXPECT_EQ(attention_smem_bytes(bf16, {128, 64, 1}), 2u * (64 * 112 + 128 * 104));
  const AttentionFamily f16{"f16", DType::f16, 64, MaskKind::keep};
  EXPECT_EQ(attention_smem_bytes(f16, {64, 64, 2}), 2u * (64 * 80 + 64 * 72));
}

TEST(AttentionSpace, AnH200HoldsAllButThreeCTAsOfTheLargestTf32Tiles) {
  // 12 configurations; three CTAs of (128 + 64 rows) x (D + pitch) fp32 exceed 228 KiB per SM
  // at head dims 96 (128 x 64) and 128 (128 x 32, 128 x 64). 16-bit math keeps all 12.
  std::string why;
  const std::map<int64_t, size_t> tf32_sizes{{64, 12}, {96, 11}, {128, 10}};
  for (int64_t d : {64, 96, 128}) {
    for (Precision pol : {Precision::tf32, Precision::fp32}) {
      const AttentionProblem p = contiguous(DType::f32, d);
      const auto f = attention_family(p, pol, why);
      ASSERT_TRUE(f) << why;
      const auto space = names(*f, attention_tuning_space(*f, p, h200_sm80_only(), 0));
      EXPECT_EQ(space.size(), tf32_sizes.at(d)) << f->math << " d" << d;
      EXPECT_EQ(space.count(attention_kernel_name(*f, {128, 64, 3})), d == 64 ? 1u : 0u);
      // With the sm90 member: under tf32 its transposing configurations besides (24, 11, 3:
      // the load warp's with O from registers at every key count that fits, with its own O
      // tile or chained where those fit); 3xTF32 has none.
      const std::map<int64_t, size_t> sm90_tf32{{64, 24}, {96, 11}, {128, 3}};
      EXPECT_EQ(attention_tuning_space(*f, p, AttentionGpuLimits{}, 0).size(),
                tf32_sizes.at(d) + (pol == Precision::tf32 ? sm90_tf32.at(d) : 0))
          << f->math << " d" << d;
    }
    for (DType dt : {DType::bf16, DType::f16}) {
      const AttentionProblem p = contiguous(dt, d);
      const auto f = attention_family(p, Precision::tf32, why);
      ASSERT_TRUE(f) << why;
      EXPECT_EQ(attention_tuning_space(*f, p, h200_sm80_only(), 0).size(), 12u) << f->math << " d" << d;
    }
    const AttentionProblem p = contiguous(DType::f32, d);
    const auto bf16 = attention_family(p, Precision::bf16, why);  // fp32 inputs, bf16 in shared memory
    EXPECT_EQ(attention_tuning_space(*bf16, p, h200_sm80_only(), 0).size(), 12u);
    // With the sm90 member: its three converting configurations besides.
    EXPECT_EQ(attention_tuning_space(*bf16, p, AttentionGpuLimits{}, 0).size(), 12u + 3);
  }
}

TEST(AttentionSpace, SharedMemoryPrunesPerPolicyAndDtype) {
  // On an sm_80 (164 KiB per SM) two CTAs of tf32 head dim 128 with 128-row tiles
  // (2 x (102400 + 1024) bytes for 128 x 64, 2 x (84992 + 1024) for 128 x 32) do not fit, nor
  // three of 64 x 64; the same problem under bf16 keeps half the bytes per element and every
  // configuration.
  const AttentionProblem p = contiguous(DType::f32, 128, MaskKind::none);
  std::string why;
  const auto tf32 = attention_family(p, Precision::tf32, why);
  const auto bf16 = attention_family(p, Precision::bf16, why);
  ASSERT_TRUE(tf32 && bf16);
  const auto tf32_space = names(*tf32, attention_tuning_space(*tf32, p, a100(), 0));
  EXPECT_EQ(tf32_space.size(), 7u);
  EXPECT_TRUE(tf32_space.count("fact_attn_sm80_tf32_f32_d128_nomask_64x32_mb3"));
  EXPECT_FALSE(tf32_space.count("fact_attn_sm80_tf32_f32_d128_nomask_64x64_mb3"));
  EXPECT_FALSE(tf32_space.count("fact_attn_sm80_tf32_f32_d128_nomask_128x64_mb2"));
  EXPECT_FALSE(tf32_space.count("fact_attn_sm80_tf32_f32_d128_nomask_128x32_mb2"));
  EXPECT_TRUE(tf32_space.count("fact_attn_sm80_tf32_f32_d128_nomask_64x64_mb2"));
  EXPECT_TRUE(tf32_space.count("fact_attn_sm80_tf32_f32_d128_nomask_128x64_mb1"));
  EXPECT_EQ(attention_tuning_space(*bf16, p, a100(), 0).size(), 12u);
  // A GPU with 100 KiB per SM (sm_86/89) keeps fewer still.
  AttentionGpuLimits small = a100();
  small.smem_per_block = 99 * 1024;
  small.smem_per_sm = 100 * 1024;
  const auto small_space = names(*tf32, attention_tuning_space(*tf32, p, small, 0));
  for (const auto& n : small_space) {
    EXPECT_EQ(n.find("_mb1"), n.size() - 4) << n;  // no two CTAs of >= 50 KiB each
  }
  EXPECT_FALSE(attention_config_fits(*tf32, {128, 64, 1}, small));  // 102400 > 99 KiB
  EXPECT_TRUE(attention_config_fits(*bf16, {128, 64, 1}, small));
}

TEST(AttentionSpace, RankingAndBudget) {
  const AttentionProblem p = contiguous(DType::bf16, 64, MaskKind::causal, 2048, 8, 16);
  std::string why;
  const auto f = attention_family(p, Precision::tf32, why);
  ASSERT_TRUE(f);
  const auto all = attention_tuning_space(*f, p, h200_sm80_only(), 0);
  ASSERT_EQ(all.size(), 12u);
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_LE(attention_estimate_seconds(*f, all[i - 1], p, {}), attention_estimate_seconds(*f, all[i], p, {}));
  }
  const auto three = attention_tuning_space(*f, p, h200_sm80_only(), 3);
  ASSERT_EQ(three.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(three[i], all[i]);
  // Causal work is about half of the unmasked problem's.
  AttentionProblem none = p;
  none.mask = MaskKind::none;
  AttentionFamily fn = *f;
  fn.mask = MaskKind::none;
  const double causal_s = attention_estimate_seconds(*f, all[0], p, {});
  const double none_s = attention_estimate_seconds(fn, all[0], none, {});
  EXPECT_GT(causal_s, 0.4 * none_s);
  EXPECT_LT(causal_s, 0.7 * none_s);
  // One head of 64 rows: a CTA of 128 rows would compute half padding.
  const AttentionProblem tiny = contiguous(DType::bf16, 64, MaskKind::none, 64, 1, 1);
  EXPECT_EQ(attention_tuning_space(fn, tiny, h200_sm80_only(), 1)[0].block_m, 64);
}

TEST(AttentionSpace, RegisterEstimatePenalizesTwoBlocksOfLargeTiles) {
  const AttentionFamily f{"tf32", DType::f32, 128, MaskKind::none};
  // O accumulator 64 + Q fragments 64 + S 32 + 40: more than the 128 registers two CTAs of
  // 256 threads allow.
  EXPECT_EQ(attention_register_estimate(f, {128, 64, 2}), 200);
  const AttentionProblem p = contiguous(DType::f32, 128, MaskKind::none, 4096, 4, 32);
  EXPECT_GT(attention_estimate_seconds(f, {128, 64, 2}, p, {}), attention_estimate_seconds(f, {128, 64, 1}, p, {}));
  // 3xtf32 keeps Q's small parts too, and issues three MMAs per product.
  const AttentionFamily x3{"3xtf32", DType::f32, 128, MaskKind::none};
  EXPECT_GT(attention_register_estimate(x3, {64, 32, 1}), attention_register_estimate(f, {64, 32, 1}));
  EXPECT_GT(attention_estimate_seconds(x3, {64, 32, 1}, p, {}), 2.5 * attention_estimate_seconds(f, {64, 32, 1}, p, {}));
}

TEST(AttentionNames, SpellTheWholeConfiguration) {
  EXPECT_EQ(attention_kernel_name({"tf32", DType::f32, 96, MaskKind::causal}, {64, 64, 2}),
            "fact_attn_sm80_tf32_f32_d96_causal_64x64_mb2");
  EXPECT_EQ(attention_kernel_name({"bf16", DType::f32, 128, MaskKind::none}, {128, 32, 1}),
            "fact_attn_sm80_bf16_f32_d128_nomask_128x32_mb1");
  EXPECT_EQ(attention_kernel_name({"3xtf32", DType::f32, 96, MaskKind::causal}, {64, 32, 3}),
            "fact_attn_sm80_3xtf32_f32_d96_causal_64x32_mb3");
  EXPECT_EQ(attention_kernel_name({"bf16", DType::bf16, 64, MaskKind::additive}, {128, 64, 1}),
            "fact_attn_sm80_bf16_bf16_d64_additive_128x64_mb1");
  EXPECT_EQ(attention_kernel_name({"f16", DType::f16, 64, MaskKind::keep}, {64, 32, 2}),
            "fact_attn_sm80_f16_f16_d64_keep_64x32_mb2");
  EXPECT_EQ(attention_kernel_name({"f16", DType::f16, 64, MaskKind::drop}, {64, 32, 2}),
            "fact_attn_sm80_f16_f16_d64_drop_64x32_mb2");
  EXPECT_TRUE(is_attention_kernel_name("fact_attn_sm80_f16_f16_d64_drop_64x32_mb2"));
  EXPECT_FALSE(is_attention_kernel_name("cutlass3x_sm90a_tf32_rrr_128x128x32_1x2x1_coop_persistent_lincomb"));
}

TEST(AttentionVendor, NoteSaysItIsALowerBound) {
  AttentionProblem p = contiguous(DType::f32, 96);
  const std::string note = attention_vendor_note(p, Precision::tf32);
  EXPECT_NE(note.find("a lower bound of the ATen path"), std::string::npos) << note;
  EXPECT_NE(note.find("softmax, mask and scale passes"), std::string::npos) << note;
  EXPECT_NE(note.find("TF32 compute"), std::string::npos) << note;
  EXPECT_NE(attention_vendor_note(p, Precision::fp32).find("fp32 compute"), std::string::npos);
  EXPECT_EQ(note.find("scaled_dot_product_attention"), std::string::npos);
  p.form = "sdpa";
  EXPECT_NE(attention_vendor_note(p, Precision::tf32).find("scaled_dot_product_attention"), std::string::npos);
}

TEST(AttentionArgs, StridesScaleAndTheRuntimesFlags) {
  AttentionProblem p = contiguous(DType::bf16, 64, MaskKind::keep, 256, 2, 8);
  p.kv_heads = 2;
  p.mask_strides = {256 * 256, 0, 256};
  int q, k, v, o, m;
  FactAttentionArgs a = make_attention_args(p, &q, &k, &v, &o, &m);
  EXPECT_EQ(a.kv_heads, 2);
  EXPECT_EQ(a.q_row_stride, 64);
  EXPECT_EQ(a.mask, &m);
  EXPECT_EQ(a.mask_head_stride, 0);
  EXPECT_EQ(a.mask_row_stride, 256);
  EXPECT_FLOAT_EQ(a.scale, float(p.scale));
  EXPECT_EQ(a.flags, 0);  // explicit softmax: a row with every key removed is NaN
  p.form = "sdpa";
  EXPECT_EQ(make_attention_args(p, &q, &k, &v, &o, &m).flags, FACT_ATTN_FLAG_EMPTY_ROW_ZERO);
  EXPECT_EQ(a.mask_affine, 0);  // no prologue: the kernel adds M's values
  EXPECT_EQ(a.mask_rsub, 0.f);
  EXPECT_EQ(a.mask_scale, 0.f);
  p.mask = MaskKind::causal;
  EXPECT_EQ(make_attention_args(p, &q, &k, &v, &o, &m).mask, nullptr);  // no tensor to pass
}

TEST(AttentionArgs, AnAdditiveMasksPrologueIsPassedInFp32) {
  AttentionProblem p = contiguous(DType::f32, 64, MaskKind::additive, 256, 2, 8);
  p.mask_strides = {256, 0, 0};
  p.mask_prologue = AttentionMaskPrologue{1.0, -3.4028234663852886e+38};  // (1 - M) * finfo(float32).min
  int q, k, v, o, m;
  const FactAttentionArgs a = make_attention_args(p, &q, &k, &v, &o, &m);
  EXPECT_EQ(a.mask_affine, 1);
  EXPECT_EQ(a.mask_rsub, 1.f);
  EXPECT_EQ(a.mask_scale, -3.40282347e+38f);  // -FLT_MAX exactly
  EXPECT_EQ(a.mask, &m);
  p.mask_prologue = AttentionMaskPrologue{0.1, -10000.0};  // the scalars rounded to fp32, as ATen does
  const FactAttentionArgs b = make_attention_args(p, &q, &k, &v, &o, &m);
  EXPECT_EQ(b.mask_rsub, 0.1f);
  EXPECT_EQ(b.mask_scale, -10000.f);
  // The appended fields leave the older ones where they were.
  EXPECT_EQ(offsetof(FactAttentionArgs, mask_rsub), offsetof(FactAttentionArgs, window) + 8);
  EXPECT_EQ(offsetof(FactAttentionArgs, mask_affine), offsetof(FactAttentionArgs, window) + 16);
}

TEST(AttentionFamily, SpelledExtrasTheKernelsDoNotComputeAreVendorOnly) {
  std::string why;
  AttentionProblem p = contiguous(DType::f16, 64);
  p.window = 4096;  // the kernels take a window (test_window.cpp)
  EXPECT_TRUE(attention_family(p, Precision::tf32, why)) << why;
  p = contiguous(DType::f16, 64, MaskKind::keep);
  p.fill = -65504.0;
  EXPECT_FALSE(attention_family(p, Precision::tf32, why));
  EXPECT_NE(why.find("rather than -inf"), std::string::npos) << why;
  p = contiguous(DType::f16, 64, MaskKind::additive);
  p.mask_dtype = "float32";
  EXPECT_FALSE(attention_family(p, Precision::tf32, why));
  EXPECT_NE(why.find("an additive mask of dtype float32"), std::string::npos) << why;
  p.mask_dtype.clear();
  p.extra_masks = 1;
  EXPECT_FALSE(attention_family(p, Precision::tf32, why));
  EXPECT_NE(why.find("2 masks: the attention kernels apply one"), std::string::npos) << why;
  p.extra_masks = 0;
  p.mask_key_stride = 4;  // T5's position bias, a permuted view
  EXPECT_FALSE(attention_family(p, Precision::tf32, why));
  EXPECT_NE(why.find("a mask with stride 4 along the keys"), std::string::npos) << why;
  p.mask_key_stride = 1;
  EXPECT_TRUE(attention_family(p, Precision::tf32, why)) << why;
}
