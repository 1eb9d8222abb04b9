// On the GPU (skipped without one, or on another architecture than sm_90): a real attention
// kernel passes verification next to the vendor bound, and kernels made wrong on purpose are
// quarantined for the right reason — an output never written, a constant output, a write
// outside O, a wrong scale — and rows whose keys are all removed come out NaN (0 for
// attention written with SDPA); the same for the sm90 member's first-ranked kernel on a
// bf16 grouped-query causal problem, both members with a sliding window, the sm90 split
// and balanced tails, and the sm80 kernel computing an additive mask's prologue (BERT's (1 - M) * finfo.min).
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>

#include "families/attention/candidates.h"
#include "families/attention/codegen.h"
#include "families/attention/space_sm90.h"
#include "families/attention/verify_tune.h"
#include "engine/build.h"
#include "engine/cuda_check.h"

using namespace fact::realize;
using fact::Precision;

namespace {

// A real kernel made wrong in one way.
class Broken final : public AttentionCandidate {
 public:
  enum How { nothing, zeros, guard_write, double_scale, no_flags, no_window, no_prologue };
  Broken(std::unique_ptr<AttentionCandidate> inner, How how, const AttentionProblem& p)
      : inner_(std::move(inner)), how_(how), p_(p), name_(inner_->name() + "+broken" + std::to_string(int(how))) {}
  const std::string& name() const override { return name_; }
  const char* impl() const override { return "cutlass"; }
  std::string prepare(const FactAttentionArgs& a, GpuContext& gpu) override { return inner_->prepare(a, gpu); }
  void run(const FactAttentionArgs& a, GpuContext& gpu) override {
    const size_t e = dtype_bytes(p_.dtype);
    switch (how_) {
      case nothing: return;
      case zeros: FACT_CUDA(cudaMemsetAsync(a.o, 0, size_t(p_.extent_o()) * e, gpu.stream())); return;
      case guard_write:
        inner_->run(a, gpu);
        FACT_CUDA(cudaMemsetAsync(static_cast<char*>(a.o) - e, 0, e, gpu.stream()));  // the element before O
        return;
      case double_scale: {
        FactAttentionArgs b = a;
        b.scale *= 2;
        inner_->run(b, gpu);
        return;
      }
      case no_flags: {  // ignores FACT_ATTN_FLAG_EMPTY_ROW_ZERO: NaN rows where SDPA gives 0
        FactAttentionArgs b = a;
        b.flags = 0;
        inner_->run(b, gpu);
        return;
      }
      case no_window: {  // plain causal: the keys left of the window take part
        FactAttentionArgs b = a;
        b.window = 0;
        inner_->run(b, gpu);
        return;
      }
      case no_prologue: {  // adds the 0/1 mask itself instead of (r - M) * c
        FactAttentionArgs b = a;
        b.mask_affine = 0;
        inner_->run(b, gpu);
        return;
      }
    }
  }

 private:
  std::unique_ptr<AttentionCandidate> inner_;
  How how_;
  AttentionProblem p_;
  std::string name_;
};

struct GpuSetup {
  std::optional<GpuInfo> gpu;
  std::string skip;
};
GpuSetup gpu_setup() {
  GpuSetup s;
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    s.skip = "FACT_SKIP_NVCC_TESTS=1";
    return s;
  }
  s.gpu = probe_gpu();
  if (!s.gpu) s.skip = "no CUDA GPU";
  else if (s.gpu->cc_major != 9) s.skip = "kernels are built for sm_90a; this GPU is cc " + std::to_string(s.gpu->cc_major);
  return s;
}

AttentionGpuLimits sm80_only() {
  AttentionGpuLimits l;
  l.sm90 = false;
  return l;
}

// Builds the first-ranked kernel of `p` under `policy` (by default of the sm80 member; with
// the H200's limits the sm90 member's best comes first for bf16/fp16 inputs).
BuildResult build_one(const AttentionProblem& p, Precision policy, const AttentionGpuLimits& limits = sm80_only()) {
  std::string why;
  const auto f = attention_family(p, policy, why);
  EXPECT_TRUE(f) << why;
  const AttentionConfig c = attention_tuning_space(*f, p, limits, 1).at(0);
  const std::string name = attention_kernel_name(*f, c);
  auto results = build_kernels({{name, render_attention_kernel(*f, c), name}}, find_toolchain("", ""), FACT_TEST_CACHE_DIR, 1);
  EXPECT_TRUE(results.at(0).ok) << results.at(0).reason;
  return results.at(0);
}

AttentionProblem mingpt_causal() {  // q/k/v views of [B, T, 3C], O merged [B, T, C]
  AttentionProblem p;
  p.batch = 2; p.heads = p.kv_heads = 4; p.seq_q = p.seq_k = 128; p.head_dim = 96;
  p.dtype = DType::f32;
  p.scale = 0.1020620726;
  p.mask = MaskKind::causal;
  p.q = p.k = p.v = {128 * 1152, 96, 1152};
  p.o = {128 * 384, 96, 384};
  p.output_layout = "bthd";
  return p;
}

AttentionProblem gqa_additive_bf16() {  // 8 query heads over 2 K/V heads; the mask broadcast over heads
  AttentionProblem p;
  p.batch = 2; p.heads = 8; p.kv_heads = 2; p.seq_q = 96; p.seq_k = 160; p.head_dim = 64;
  p.dtype = DType::bf16;
  p.scale = 0.125;
  p.mask = MaskKind::additive;
  p.q = p.o = {8 * 96 * 64, 96 * 64, 64};
  p.k = p.v = {2 * 160 * 64, 160 * 64, 64};
  p.mask_strides = {96 * 160, 0, 160};
  return p;
}

const CandidateOutcome& outcome(const std::vector<CandidateOutcome>& out, const std::string& name) {
  for (const auto& o : out) if (o.kernel == name) return o;
  throw std::runtime_error("no candidate " + name);
}

// Verifies and times the built kernel `b` of `p` under `policy` (the one it was built for:
// the family's math sets the error bound) next to copies of it broken each way in `hows`,
// after the vendor bound when `with_vendor` (2 warm-up runs, 20 trials, verbose);
// `verification` gets the log.
std::vector<CandidateOutcome> verify_with_broken(const AttentionProblem& p, const BuildResult& b,
                                                 std::initializer_list<Broken::How> hows, const GpuInfo& info,
                                                 nlohmann::json& verification, bool with_vendor = false,
                                                 Precision policy = Precision::tf32) {
  std::string why;
  const auto family = attention_family(p, policy, why);
  std::vector<std::unique_ptr<AttentionCandidate>> cands;
  if (with_vendor) cands.push_back(make_attention_vendor_bound(p, policy));
  cands.push_back(load_attention_candidate(b.name, b.library.string(), b.name));
  for (auto how : hows) {
    cands.push_back(std::make_unique<Broken>(load_attention_candidate(b.name, b.library.string(), b.name), how, p));
  }
  GpuContext gpu(info);
  return verify_and_tune_attention(p, &*family, cands, gpu, 2, 20, true, &verification);
}

// Kernel `name` passed within its tolerance and its copy that writes nothing (+broken0) was
// quarantined as unwritten.
void expect_passes_and_unwritten_caught(const std::vector<CandidateOutcome>& out, const std::string& name) {
  const auto& real = outcome(out, name);
  EXPECT_EQ(real.status, "ok") << name << ": " << real.reason;
  EXPECT_LE(real.max_rel_err, real.tolerance) << name;
  EXPECT_NE(outcome(out, name + "+broken0").reason.find("unwritten"), std::string::npos) << name;
}

// Grouped-query heads of dim 128 as Hugging Face lays them out: Q/K/V [B, T, H, D]
// transposed, O merged, scale 1/sqrt(128).
AttentionProblem bthd_heads(int64_t batch, int64_t heads, int64_t kv_heads, int64_t seq, DType dtype, MaskKind mask) {
  AttentionProblem p;
  p.batch = batch; p.heads = heads; p.kv_heads = kv_heads; p.seq_q = p.seq_k = seq; p.head_dim = 128;
  p.dtype = dtype;
  p.scale = 0.08838834764;
  p.mask = mask;
  p.q = p.o = {seq * heads * 128, 128, heads * 128};
  p.k = p.v = {seq * kv_heads * 128, 128, kv_heads * 128};
  p.output_layout = "bthd";
  return p;
}

// HF Llama's heads at a small size: 8 query heads over 2 K/V heads, causal; 320 rows (a
// partial last query block).
AttentionProblem llama_heads_bf16() { return bthd_heads(2, 8, 2, 320, DType::bf16, MaskKind::causal); }

}  // namespace

TEST(AttentionGpu, RealKernelPassesAndBrokenOnesAreQuarantined) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  const AttentionProblem p = mingpt_causal();
  const BuildResult b = build_one(p, Precision::tf32);
  ASSERT_TRUE(b.ok);
  nlohmann::json verification;
  const auto out = verify_with_broken(p, b, {Broken::nothing, Broken::zeros, Broken::guard_write}, *s.gpu,
                                      verification, /*with_vendor=*/true);
  const auto& vendor = outcome(out, "vendor");
  EXPECT_EQ(vendor.status, "ok") << vendor.reason;
  EXPECT_FALSE(vendor.verified);
  EXPECT_GT(vendor.median_ms, 0);
  const auto& real = outcome(out, b.name);
  EXPECT_EQ(real.status, "ok") << real.reason;
  EXPECT_EQ(real.trials, 20);
  EXPECT_LE(real.max_rel_err, real.tolerance);
  EXPECT_GT(real.max_rel_err, 0);  // a tf32 kernel is not exact
  EXPECT_NE(outcome(out, b.name + "+broken0").reason.find("unwritten"), std::string::npos) << outcome(out, b.name + "+broken0").reason;
  EXPECT_NE(outcome(out, b.name + "+broken1").reason.find("constant"), std::string::npos) << outcome(out, b.name + "+broken1").reason;
  EXPECT_NE(outcome(out, b.name + "+broken2").reason.find("outside O"), std::string::npos) << outcome(out, b.name + "+broken2").reason;
  EXPECT_EQ(verification["draws"].size(), 5u);
  EXPECT_EQ(verification["sampled_heads"], 8);
  EXPECT_LE(verification["worst_bound_ratio"][b.name].get<double>(), 1.0);
}

TEST(AttentionGpu, MaskedRowsAreNaNAndAWrongScaleFails) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  const AttentionProblem p = gqa_additive_bf16();
  const BuildResult b = build_one(p, Precision::tf32);
  ASSERT_TRUE(b.ok);
  nlohmann::json verification;
  const auto out = verify_with_broken(p, b, {Broken::double_scale}, *s.gpu, verification);
  EXPECT_EQ(outcome(out, b.name).status, "ok") << outcome(out, b.name).reason;
  const auto& wrong = outcome(out, b.name + "+broken3");
  EXPECT_EQ(wrong.status, "quarantined");
  EXPECT_NE(wrong.reason.find("beyond their error bound"), std::string::npos) << wrong.reason;
  // One dead row per batch (the mask is shared by the heads): every sampled head has one.
  const auto& first = verification["draws"][0];
  EXPECT_TRUE(first["dead_rows"].get<bool>());
  EXPECT_GE(first["nan_rows_sampled"].get<int>(), 16);
  EXPECT_GE(first["dead_rows_total"].get<int>(), 16);
}

TEST(AttentionGpu, SdpaFormRowsWithEveryKeyRemovedAreZero) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  AttentionProblem p = gqa_additive_bf16();
  p.form = "sdpa";  // the runtime sets FACT_ATTN_FLAG_EMPTY_ROW_ZERO
  const BuildResult b = build_one(p, Precision::tf32);
  ASSERT_TRUE(b.ok);
  nlohmann::json verification;
  const auto out = verify_with_broken(p, b, {Broken::no_flags}, *s.gpu, verification);
  EXPECT_EQ(outcome(out, b.name).status, "ok") << outcome(out, b.name).reason;
  const auto& nan_rows = outcome(out, b.name + "+broken4");
  EXPECT_NE(nan_rows.reason.find("are not 0 (SDPA gives 0)"), std::string::npos) << nan_rows.reason;
  const auto& first = verification["draws"][0];
  EXPECT_EQ(first["nan_rows_sampled"].get<int>(), 0);
  EXPECT_GE(first["dead_rows_total"].get<int>(), 16);
}

TEST(AttentionGpu, Sm90KernelPassesAndBrokenOnesAreQuarantined) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  const AttentionProblem p = llama_heads_bf16();
  const BuildResult b = build_one(p, Precision::bf16, AttentionGpuLimits{});
  ASSERT_TRUE(b.ok) << b.reason;
  ASSERT_EQ(b.name.rfind("fact_attn_sm90_bf16_d128_causal_", 0), 0u) << b.name;
  nlohmann::json verification;
  const auto out = verify_with_broken(p, b, {Broken::nothing, Broken::double_scale}, *s.gpu, verification, true);
  const auto& real = outcome(out, b.name);
  EXPECT_EQ(real.status, "ok") << real.reason;
  EXPECT_LE(real.max_rel_err, real.tolerance);
  EXPECT_NE(outcome(out, b.name + "+broken0").reason.find("unwritten"), std::string::npos)
      << outcome(out, b.name + "+broken0").reason;
  const auto& wrong = outcome(out, b.name + "+broken3");
  EXPECT_EQ(wrong.status, "quarantined");
  EXPECT_NE(wrong.reason.find("beyond their error bound"), std::string::npos) << wrong.reason;
}

// Mistral's sliding window at a small size (100 keys of 320): the last query tiles skip
// their first key blocks, and the blocks the window cuts are masked key by key. The sm90
// member's first kernel and the sm80 member's pass; the same kernel run without the window
// (every j <= i) is quarantined.
TEST(AttentionGpu, WindowedKernelsPassAndIgnoringTheWindowFails) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  AttentionProblem p = llama_heads_bf16();
  p.window = 100;
  for (const AttentionGpuLimits& limits : {AttentionGpuLimits{}, sm80_only()}) {
    const BuildResult b = build_one(p, Precision::bf16, limits);
    ASSERT_TRUE(b.ok) << b.reason;
    ASSERT_NE(b.name.find("_bf16_d128_causal_"), std::string::npos) << b.name;
    nlohmann::json verification;
    const auto out = verify_with_broken(p, b, {Broken::no_window}, *s.gpu, verification);
    const auto& real = outcome(out, b.name);
    EXPECT_EQ(real.status, "ok") << b.name << ": " << real.reason;
    EXPECT_LE(real.max_rel_err, real.tolerance) << b.name;
    const auto& wide = outcome(out, b.name + "+broken5");
    EXPECT_EQ(wide.status, "quarantined") << b.name;
    EXPECT_NE(wide.reason.find("beyond their error bound"), std::string::npos) << wide.reason;
  }
}

// fp32 inputs under bf16: the sm90 member's converting producer rounds each TMA-staged fp32
// sub-tile into the bf16 tiles. On minGPT's strided [B, T, 3C] views (causal) and on
// grouped-query heads with a window (320 tokens: the last tiles' rows past the end arrive as
// the TMA's zeros), its first-ranked kernel passes, and one that writes nothing is quarantined.
TEST(AttentionGpu, Sm90ConvertingKernelPassesOnFp32Inputs) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  AttentionProblem gqa = llama_heads_bf16();
  gqa.dtype = DType::f32;
  gqa.window = 100;
  for (const AttentionProblem& p : {mingpt_causal(), gqa}) {
    const BuildResult b = build_one(p, Precision::bf16, AttentionGpuLimits{});
    ASSERT_TRUE(b.ok) << b.reason;
    ASSERT_EQ(b.name.rfind("fact_attn_sm90_bf16_f32_", 0), 0u) << b.name;
    nlohmann::json verification;  // bf16 math: the bf16 policy's bound (not tf32's, 4x tighter)
    const auto out = verify_with_broken(p, b, {Broken::nothing}, *s.gpu, verification, false, Precision::bf16);
    expect_passes_and_unwritten_caught(out, b.name);
  }
}

// fp32 inputs under tf32: the transposing producer's kernel (V^T with its keys permuted)
// passes on minGPT's views and on grouped heads with a sliding window and a partial last
// block; one that skips its writes or doubles the scale is quarantined.
TEST(AttentionGpu, Sm90Tf32KernelPassesAndBrokenOnesAreQuarantined) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  AttentionProblem gqa = llama_heads_bf16();
  gqa.dtype = DType::f32;
  gqa.window = 100;
  AttentionProblem plain = llama_heads_bf16();
  plain.dtype = DType::f32;
  plain.mask = MaskKind::none;
  for (const AttentionProblem& p : {mingpt_causal(), gqa, plain}) {
    const BuildResult b = build_one(p, Precision::tf32, AttentionGpuLimits{});
    ASSERT_TRUE(b.ok) << b.reason;
    ASSERT_EQ(b.name.rfind("fact_attn_sm90_tf32_f32_", 0), 0u) << b.name;
    nlohmann::json verification;
    const auto out = verify_with_broken(p, b, {Broken::nothing, Broken::double_scale}, *s.gpu, verification);
    expect_passes_and_unwritten_caught(out, b.name);
    EXPECT_NE(outcome(out, b.name + "+broken3").reason.find("beyond their error bound"), std::string::npos) << b.name;
  }
}

// The split tail: 32 tiles of 1000 rows (4 query heads over 2 K/V heads, head dim 128, no
// mask; the last query and key blocks partial) fill at most a quarter of the grid, so each
// runs as parts over its keys that a second kernel combines from the workspace. The bf16
// kernel and the tf32 kernels (four transposing warps, and the load warp) with the split pass;
// a copy that skips its writes or doubles the scale is quarantined.
TEST(AttentionGpu, Sm90SplitTailKernelsPassAndBrokenOnesAreQuarantined) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  AttentionProblem p = bthd_heads(1, 4, 2, 1000, DType::bf16, MaskKind::none);
  for (const int variant : {0, 1, 2}) {  // bf16; tf32; tf32 with the load warp
    const Precision policy = variant == 0 ? Precision::bf16 : Precision::tf32;
    p.dtype = policy == Precision::bf16 ? DType::bf16 : DType::f32;
    std::string why;
    const auto f = attention_family(p, policy, why);
    ASSERT_TRUE(f) << why;
    AttentionSm90Options st;
    st.split_tail = true;
    int block_n = 128;
    if (policy == Precision::tf32) {  // the tf32 space's eager kernels with O from registers
      st.epilogue = 0;
      st.lazy_rescale = false;
      st.producer_regs = 72;
      block_n = 64;
      if (variant == 2) {
        st.load_warp = true;
        st.k_ahead = 0;
        st.producer_regs = 120;
      }
    }
    const AttentionConfig c{128, block_n, 1, st};
    ASSERT_TRUE(attention_sm90_config_fits(*f, c, AttentionGpuLimits{}));
    const int64_t n_blocks = (1000 + block_n - 1) / block_n;
    ASSERT_GT(attention_sm90_split_plan(32, n_blocks, s.gpu->sm_count).parts, 1) << s.gpu->sm_count << " SMs";
    const std::string name = attention_kernel_name(*f, c);
    auto built = build_kernels({{name, render_attention_kernel(*f, c), name}}, find_toolchain("", ""), FACT_TEST_CACHE_DIR, 1);
    ASSERT_TRUE(built.at(0).ok) << built.at(0).reason;
    nlohmann::json verification;
    const auto out =
        verify_with_broken(p, built.at(0), {Broken::nothing, Broken::double_scale}, *s.gpu, verification, false, policy);
    expect_passes_and_unwritten_caught(out, name);
    EXPECT_NE(outcome(out, name + "+broken3").reason.find("beyond their error bound"), std::string::npos) << name;
  }
}

// The balanced tail: 320 causal tiles (2 x 16 query heads over 4 K/V heads, 1280 rows of head
// dim 128) take three rounds of a 132-SM grid, so the launcher deals the last two rounds'
// 188 tiles by load. The first-ranked bf16 kernel (with and without a sliding window of 300
// keys) and tf32 kernel pass; one that doubles the scale or writes nothing is quarantined.
TEST(AttentionGpu, Sm90BalancedTailKernelsPassAndBrokenOnesAreQuarantined) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  AttentionProblem p = bthd_heads(2, 16, 4, 1280, DType::bf16, MaskKind::causal);
  ASSERT_LT(s.gpu->sm_count, 320) << "one round: nothing to deal";
  for (const int64_t window : {int64_t(0), int64_t(300)}) {
    for (const Precision policy : {Precision::bf16, Precision::tf32}) {
      if (window != 0 && policy == Precision::tf32) continue;
      p.window = window;
      p.dtype = policy == Precision::bf16 ? DType::bf16 : DType::f32;
      const BuildResult b = build_one(p, policy, AttentionGpuLimits{});
      ASSERT_TRUE(b.ok) << b.reason;
      ASSERT_NE(b.name.find("_bt"), std::string::npos) << b.name;
      nlohmann::json verification;
      const auto out = verify_with_broken(p, b, {Broken::nothing, Broken::double_scale}, *s.gpu, verification, false, policy);
      expect_passes_and_unwritten_caught(out, b.name);
      EXPECT_NE(outcome(out, b.name + "+broken3").reason.find("beyond their error bound"), std::string::npos) << b.name;
    }
  }
}

// BERT's key-padding mask, (1 - M) * torch.finfo(dtype).min with M [B, 1, 1, T] (strides
// [T, 0, 0]) in fp32, and in bf16 over a mask with rows (so the draws have dead rows and
// rows of padding only): the sm80 kernel computes the prologue and passes; run without it
// (the 0/1 values added as they are) it is quarantined. The sm90 member is not tried.
TEST(AttentionGpu, MaskPrologueKernelPassesAndIgnoringItFails) {
  const GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  AttentionProblem bert;
  bert.batch = 2; bert.heads = bert.kv_heads = 4; bert.seq_q = bert.seq_k = 128; bert.head_dim = 64;
  bert.dtype = DType::f32;
  bert.scale = 0.125;
  bert.mask = MaskKind::additive;
  bert.q = bert.k = bert.v = bert.o = {128 * 256, 64, 256};
  bert.output_layout = "bthd";
  bert.mask_strides = {128, 0, 0};
  bert.mask_prologue = AttentionMaskPrologue{1.0, -3.4028234663852886e+38};
  AttentionProblem bf16 = gqa_additive_bf16();
  bf16.mask_prologue = AttentionMaskPrologue{1.0, -3.3895313892515355e+38};
  for (const AttentionProblem& p : {bert, bf16}) {
    const BuildResult b = build_one(p, Precision::tf32, AttentionGpuLimits{});
    ASSERT_TRUE(b.ok) << b.reason;
    ASSERT_NE(b.name.find("fact_attn_sm80_"), std::string::npos) << b.name;
    nlohmann::json verification;
    const auto out = verify_with_broken(p, b, {Broken::no_prologue}, *s.gpu, verification);
    const auto& real = outcome(out, b.name);
    EXPECT_EQ(real.status, "ok") << b.name << ": " << real.reason;
    EXPECT_LE(real.max_rel_err, real.tolerance) << b.name;
    EXPECT_LE(verification["worst_bound_ratio"][b.name].get<double>(), 1.0) << b.name;
    const auto& raw = outcome(out, b.name + "+broken6");
    EXPECT_EQ(raw.status, "quarantined") << b.name;
  }
}
