// Replaying a stored tuning: paths come from this run's builds, a winner that was not built
// now is a miss, and the key separates policies and GPUs.
#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/tuning_records.h"
#include "tuning_records_util.h"

using namespace fact::realize;
namespace registry = fact::registry;
using nlohmann::json;

namespace {

const std::string kWinner = "cutlass3x_sm90a_tf32_rrr_128x256x32_1x1x1_coop_persistent_lincomb";

registry::TuningRecord stored() {
  registry::TuningRecord r;
  r.winner = kWinner;
  r.winner_impl = "cutlass";
  r.median_ms = 0.8169;
  r.created = "2026-11-29T18:51:39Z";
  r.candidates = json::array({
      {{"kernel", "cublas_tf32"}, {"impl", "vendor"}, {"status", "ok"}, {"median_ms", 0.8383}},
      {{"kernel", kWinner}, {"impl", "cutlass"}, {"status", "ok"}, {"median_ms", 0.8169},
       {"tolerance", 3e-3}, {"key", "abc"},
       {"object", "/elsewhere/kernel.o"}, {"library", "/elsewhere/kernel.so"}}});
  return r;
}

BuildResult built_here() { return fact::test::built_here(kWinner, "abc"); }

}  // namespace

TEST(TuningRecords, ReplayTakesPathsFromThisRunsBuilds) {
  json out{{"id", "p0"}};
  ASSERT_TRUE(replay_record(stored(), {{kWinner, built_here()}}, {kWinner}, out));
  EXPECT_EQ(out["winner"], kWinner);
  EXPECT_EQ(out["winner_impl"], "cutlass");
  EXPECT_EQ(out["tune_s"], 0.0);
  EXPECT_EQ(out["candidates"][1]["object"], "/here/kernel.o");
  EXPECT_EQ(out["candidates"][1]["symbol"], kernel_symbol(kWinner));
  EXPECT_NE(out["registry"].get<std::string>().find("2026-11-29T18:51:39Z"), std::string::npos);
}

TEST(TuningRecords, WinnerNotBuiltNowIsAMiss) {
  json out{{"id", "p0"}};
  EXPECT_FALSE(replay_record(stored(), {}, {}, out));
  EXPECT_FALSE(out.contains("winner"));
  BuildResult failed = built_here();
  failed.ok = false;
  EXPECT_FALSE(replay_record(stored(), {{kWinner, failed}}, {kWinner}, out));
}

TEST(TuningRecords, AKernelTheRecordNeverTimedForcesARetune) {
  // Tuned with budget 1; now a second kernel is built (budget 2): it might win.
  const std::string other = "cutlass3x_sm90a_tf32_rrr_128x128x32_2x1x1_coop_persistent_lincomb";
  BuildResult b2 = built_here();
  b2.name = other;
  json out{{"id", "p0"}};
  EXPECT_FALSE(replay_record(stored(), {{kWinner, built_here()}, {other, b2}}, {kWinner, other}, out));
  EXPECT_FALSE(out.contains("winner"));
  // A recorded run-time variant ("+swz4") counts as its kernel having been timed.
  auto r = stored();
  r.candidates.push_back({{"kernel", other + "+swz4"}, {"impl", "cutlass"}, {"status", "ok"}});
  EXPECT_TRUE(replay_record(r, {{kWinner, built_here()}, {other, b2}}, {kWinner, other}, out));
}

TEST(TuningRecords, AWinnerBuiltFromOtherSourceWasNeverVerified) {
  // Same kernel name, another build key (e.g. a changed template): tune again.
  BuildResult rebuilt = built_here();
  rebuilt.key = "def";
  json out{{"id", "p0"}};
  EXPECT_FALSE(replay_record(stored(), {{kWinner, rebuilt}}, {kWinner}, out));
  EXPECT_FALSE(out.contains("winner"));
}

TEST(TuningRecords, AKernelThatFailedToBuildThenIsTunedWhenItBuildsNow) {
  const std::string other = "cutlass3x_sm90a_tf32_rrr_128x128x32_2x1x1_coop_persistent_lincomb";
  auto r = stored();
  r.candidates.push_back({{"kernel", other}, {"impl", "cutlass"}, {"status", "quarantined"},
                          {"reason", "nvcc was killed (signal 9): retried next run"}});
  BuildResult b2 = built_here();
  b2.name = other;
  json out{{"id", "p0"}};
  EXPECT_FALSE(replay_record(r, {{kWinner, built_here()}, {other, b2}}, {kWinner, other}, out));
  // Still failing to build: the record stands.
  b2.ok = false;
  EXPECT_TRUE(replay_record(r, {{kWinner, built_here()}, {other, b2}}, {kWinner, other}, out));
}

TEST(TuningRecords, VendorWinnerNeedsNoBuild) {
  auto r = stored();
  r.winner = "cublas_tf32";
  r.winner_impl = "vendor";
  json out;
  EXPECT_TRUE(replay_record(r, {}, {}, out));
  EXPECT_FALSE(out["candidates"][1].contains("object"));
}

TEST(TuningRecords, AVendorWinnersTailKernelMustBeThisRunsBuild) {
  const std::string tail = "fact_tail_f32_evt0badf00d";
  auto r = stored();
  r.winner = "cublas_tf32+tail";
  r.winner_impl = "vendor";
  r.candidates[0]["kernel"] = "cublas_tf32+tail";
  r.candidates[0]["companion"] = {{"kernel", tail}, {"key", "t1"}, {"object", "/elsewhere/tail.o"}};
  const BuildResult tail_here = fact::test::built_here(tail, "t1");
  json out;
  ASSERT_TRUE(replay_record(r, {{kWinner, built_here()}, {tail, tail_here}}, {kWinner, tail}, out));
  EXPECT_EQ(out["candidates"][0]["companion"]["object"], "/here/kernel.o");
  EXPECT_EQ(out["candidates"][0]["companion"]["symbol"], kernel_symbol(tail));
  // Built from other source now, or not at all: never verified with this winner.
  BuildResult changed = tail_here;
  changed.key = "t2";
  json miss;
  EXPECT_FALSE(replay_record(r, {{kWinner, built_here()}, {tail, changed}}, {kWinner, tail}, miss));
  EXPECT_FALSE(replay_record(r, {{kWinner, built_here()}}, {kWinner}, miss));
  EXPECT_FALSE(miss.contains("winner"));
  // A record made before tail kernels existed never ran this run's: tune again.
  EXPECT_FALSE(replay_record(stored(), {{kWinner, built_here()}, {tail, tail_here}}, {kWinner, tail}, miss));
}

TEST(TuningRecords, KeySeparatesPolicyAndGpuAndRecordRoundTrips) {
  const GpuInfo h200 = fact::test::h200(), a100 = fact::test::a100();
  const Toolchain tc = fact::test::key_toolchain();
  const json problem{{"kind", "gemm"}, {"m", 512}, {"n", 2048}, {"k", 1024}};
  const auto k = tuning_key(problem, h200, tc, fact::Precision::tf32);
  EXPECT_EQ(k.cc, "9.0");
  EXPECT_NE(k.digest(), tuning_key(problem, h200, tc, fact::Precision::bf16).digest());
  EXPECT_NE(k.digest(), tuning_key(problem, a100, tc, fact::Precision::tf32).digest());
  json out{{"winner", kWinner}, {"winner_impl", "cutlass"}, {"candidates", stored().candidates}};
  const auto rec = make_record(k, out);
  EXPECT_DOUBLE_EQ(rec.median_ms, 0.8169);
  EXPECT_EQ(rec.key.digest(), k.digest());
}

TEST(TuningRecords, ACandidateWithRunTimeOptionsReplaysWithItsKernelsBuildAndItsRecordedFields) {
  EXPECT_EQ(candidate_kernel(kWinner + "+splitk4+swz4"), kWinner);
  EXPECT_EQ(candidate_kernel(kWinner), kWinner);
  EXPECT_THROW(candidate_kernel("+swz4"), fact::Error);
  registry::TuningRecord r = stored();
  const std::string variant = kWinner + "+swz4";
  r.winner = variant;
  r.candidates.push_back({{"kernel", variant}, {"impl", "cutlass"}, {"status", "ok"}, {"median_ms", 0.8},
                          {"tolerance", 3e-3}, {"key", "abc"}, {"runtime", {{"splits", 0}, {"raster", 0}, {"swizzle", 4}}}});
  json out{{"id", "p0"}};
  ASSERT_TRUE(replay_record(r, {{kWinner, built_here()}}, {kWinner}, out));
  EXPECT_EQ(out["winner"], variant);
  EXPECT_EQ(out["candidates"][2]["library"], built_here().library.string());
  EXPECT_EQ(out["candidates"][2]["runtime"]["swizzle"], 4);
  // The variant's kernel not built now: a miss.
  json miss{{"id", "p0"}};
  EXPECT_FALSE(replay_record(r, {}, {}, miss));
}
