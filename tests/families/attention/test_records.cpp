// Recording and replaying an attention tuning like a GEMM's: the key hashes the attention
// problem with the policy and the GPU; a replayed kernel's symbol is its name (the template's
// symbol prefix); a winner built from other source is a miss.
#include <gtest/gtest.h>

#include "families/gemm/space.h"
#include "engine/tuning_records.h"
#include "../../engine/tuning_records_util.h"

using namespace fact::realize;
using nlohmann::json;

namespace {

const std::string kKernel = "fact_attn_sm80_tf32_f32_d96_causal_64x64_mb2";

json problem() {
  return {{"kind", "attention"}, {"batch", 2}, {"heads", 4}, {"kv_heads", 4}, {"seq_q", 128}, {"seq_k", 128},
          {"head_dim", 96}, {"dtype", "float32"}, {"scale", 0.1020620726}, {"mask", "causal"},
          {"strides", {{"q", {147456, 96, 1152}}, {"k", {147456, 96, 1152}}, {"v", {147456, 96, 1152}},
                       {"o", {49152, 96, 384}}, {"mask", nullptr}}},
          {"output_layout", "bthd"}};
}

BuildResult built() {
  BuildResult b = fact::test::built_here(kKernel, "k1");
  b.symbol = kKernel;
  return b;
}

fact::registry::TuningRecord record() {
  fact::registry::TuningRecord r;
  r.winner = kKernel;
  r.winner_impl = "cutlass";
  r.created = "2026-12-01T10:00:00Z";
  r.candidates = json::array({
      {{"kernel", "vendor"}, {"impl", "vendor"}, {"status", "ok"}, {"median_ms", 0.05}, {"max_rel_err", nullptr},
       {"note", "a lower bound of the ATen path"}},
      {{"kernel", kKernel}, {"impl", "cutlass"}, {"status", "ok"}, {"median_ms", 0.03}, {"tolerance", 0.1},
       {"key", "k1"}, {"object", "/elsewhere/kernel.o"}}});
  return r;
}

}  // namespace

TEST(AttentionRecords, KeyDiffersByPolicyGpuAndProblem) {
  const GpuInfo h200 = fact::test::h200(), h100 = fact::test::h100(), a100 = fact::test::a100();
  const Toolchain tc = fact::test::key_toolchain();
  const auto k = tuning_key(problem(), h200, tc, fact::Precision::tf32).digest();
  EXPECT_NE(k, tuning_key(problem(), h200, tc, fact::Precision::bf16).digest());
  EXPECT_NE(k, tuning_key(problem(), h200, tc, fact::Precision::fp32).digest());
  EXPECT_NE(k, tuning_key(problem(), a100, tc, fact::Precision::tf32).digest());
  EXPECT_NE(k, tuning_key(problem(), h100, tc, fact::Precision::tf32).digest());
  json other = problem();
  other["mask"] = "none";
  EXPECT_NE(k, tuning_key(other, h200, tc, fact::Precision::tf32).digest());
  EXPECT_EQ(k, tuning_key(problem(), h200, tc, fact::Precision::tf32).digest());
}

TEST(AttentionRecords, ReplayUsesThisBuildAndTheKernelNameAsSymbol) {
  json out{{"id", "p0"}};
  ASSERT_TRUE(replay_record(record(), {{kKernel, built()}}, {kKernel}, out));
  EXPECT_EQ(out["winner"], kKernel);
  EXPECT_EQ(out["tune_s"], 0.0);
  EXPECT_EQ(out["candidates"][1]["object"], "/here/kernel.o");
  EXPECT_EQ(out["candidates"][1]["symbol"], kKernel);
  EXPECT_TRUE(out["candidates"][0]["max_rel_err"].is_null());
  // The same name built from other source (a changed template) was never verified.
  BuildResult changed = built();
  changed.key = "k2";
  json again{{"id", "p0"}};
  EXPECT_FALSE(replay_record(record(), {{kKernel, changed}}, {kKernel}, again));
  // A second kernel the record never timed (a larger --tune-budget) forces a retune.
  BuildResult b2 = built();
  b2.name = b2.symbol = "fact_attn_sm80_tf32_f32_d96_causal_128x64_mb1";
  EXPECT_FALSE(replay_record(record(), {{kKernel, built()}, {b2.name, b2}}, {kKernel, b2.name}, again));
}

TEST(AttentionRecords, BuildFieldsCarryTheSymbol) {
  json c{{"kernel", kKernel}, {"impl", "cutlass"}};
  set_build_fields(c, built());
  EXPECT_EQ(c["symbol"], kKernel);
  BuildResult gemm = built();
  gemm.name = "cutlass3x_sm90a_tf32_rrr_128x256x32_1x1x1_coop_persistent_lincomb";
  gemm.symbol.clear();  // GEMMs: the hashed symbol, as before
  set_build_fields(c, gemm);
  EXPECT_EQ(c["symbol"], kernel_symbol(gemm.name));
}
