// One attention kernel of each member, realized without a GPU through `factc realize` (tune
// budget 1; also for a sliding-window problem), is rendered from the embedded template, compiles for sm_90a with the real nvcc,
// exports the attention C ABI under its name, and is reported as built with its symbol; the
// sm90 kernel without a wgmma serialization warning (C7510, C7519, C7520). The sm80 kernel
// takes a few seconds, the sm90 one 30-75 s and about 3.4 GB on first run; later runs hit
// the cache under the build directory. Set FACT_SKIP_NVCC_TESTS=1 to skip (e.g. without the
// toolkit).
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "base/process.h"
#include "engine/build.h"
#include "engine/realize.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// minGPT's causal attention (q/k/v strided views of [B, T, 3C], O merged [B, T, C]).
json mingpt_problem(const std::string& dtype) {
  return json{{"kind", "attention"}, {"batch", 2}, {"heads", 4}, {"kv_heads", 4}, {"seq_q", 128},
              {"seq_k", 128}, {"head_dim", 96}, {"dtype", dtype}, {"scale", 0.1020620726},
              {"mask", "causal"},
              {"strides", {{"q", {147456, 96, 1152}}, {"k", {147456, 96, 1152}}, {"v", {147456, 96, 1152}},
                           {"o", {49152, 96, 384}}, {"mask", nullptr}}},
              {"output_layout", "bthd"}};
}

// Realizes `problem` without a GPU at tune budget 1 under `policy`; checks the one candidate
// built with the name prefix `prefix`, exports the ABI and holds sm_90a code; returns it.
json build_first(const json& problem, const std::string& prefix, fact::Precision policy = fact::Precision::tf32) {
  const fs::path dir = fs::temp_directory_path() / ("fact-compile-attention-" + prefix);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fact::write_file(dir / "plan.json",
                   json{{"format", "fact.plan"}, {"version", 1},
                        {"patterns", {{{"id", "p0"}, {"rule", "attention"}, {"problem", problem}}}}}.dump());
  fact::realize::RealizeOptions o;
  o.plan = dir / "plan.json";
  o.output = dir / "realized.json";
  o.cache_dir = FACT_TEST_CACHE_DIR;
  o.no_gpu = true;
  o.jobs = 1;
  o.tune_budget = 1;
  o.policy = policy;
  EXPECT_EQ(fact::realize::run_realize(o), 0);
  const json r = json::parse(fact::read_file(dir / "realized.json"));
  const json& pat = r.at("patterns").at(0);
  EXPECT_EQ(pat.at("candidates").size(), 1u) << pat.dump(2);
  const json c = pat["candidates"].at(0);
  const std::string name = c.at("kernel");
  EXPECT_EQ(c.at("status"), "built") << c.dump(2);
  EXPECT_EQ(c.at("impl"), "cutlass");
  EXPECT_EQ(name.rfind(prefix, 0), 0u) << name;
  if (c.at("status") != "built") return c;
  EXPECT_EQ(c.at("symbol"), name);  // the template's {{NAME}} is the symbol prefix
  const std::string syms = fact::capture_output({"nm", "-D", "--defined-only", c.at("library").get<std::string>()});
  for (const char* suffix : {"_run", "_can_implement", "_workspace_bytes", "_name"}) {
    EXPECT_NE(syms.find(name + suffix), std::string::npos) << name << " lacks " << name << suffix;
  }
  EXPECT_NE(fact::read_file(c.at("object").get<std::string>()).find("sm_90a"), std::string::npos) << name;
  EXPECT_TRUE(pat.at("winner").is_null());
  fs::remove_all(dir);
  return c;
}

// A built candidate `c` whose build log has no wgmma serialization warning (C7510, C7519, C7520).
void expect_no_wgmma_serialization(const json& c) {
  ASSERT_EQ(c.at("status"), "built");
  const std::string log = fact::read_file(fs::path(c.at("object").get<std::string>()).parent_path() / "build.log");
  EXPECT_EQ(fact::realize::wgmma_serialization_warning(log), "") << log;
}

bool skip_nvcc() {
  const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS");
  return skip && *skip == '1';
}

}  // namespace

TEST(CompileAttention, OneKernelBuildsForSm90aAndExportsTheAbi) {
  if (skip_nvcc()) GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  // fp32 inputs under the fp32 policy (3xTF32): sm80 only
  build_first(mingpt_problem("float32"), "fact_attn_sm80_3xtf32_f32_d96_causal_", fact::Precision::fp32);
}

// fp32 inputs under tf32: the sm90 member's transposing producer comes first.
TEST(CompileAttention, OneTf32Sm90KernelBuildsForSm90aWithoutWgmmaSerialization) {
  if (skip_nvcc()) GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  expect_no_wgmma_serialization(build_first(mingpt_problem("float32"), "fact_attn_sm90_tf32_f32_d96_causal_128x"));
}

// The sm90 member's best-ranked kernel comes first for bf16 inputs (no GPU: an H200 assumed).
TEST(CompileAttention, OneSm90KernelBuildsForSm90aWithoutWgmmaSerialization) {
  if (skip_nvcc()) GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  expect_no_wgmma_serialization(
      build_first(mingpt_problem("bfloat16"), "fact_attn_sm90_bf16_d96_causal_128x128_s2_wg2_ov_pp_mb1_persist_e1"));
}

// A causal mask with a sliding window (Mistral's, here 48 keys of 128) is realized by FACT's
// kernels, no longer left to ATen: the sm90 member's best kernel is built (the window is a
// run-time argument, so it is the causal kernel; the build hits the cache after the test above).
TEST(CompileAttention, OneWindowedSm90KernelBuildsForSm90a) {
  if (skip_nvcc()) GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  json p = mingpt_problem("bfloat16");
  p["window"] = 48;
  const json c = build_first(p, "fact_attn_sm90_bf16_d96_causal_128x128_s2_wg2_ov_pp_mb1_persist_e1");
  EXPECT_EQ(c.at("status"), "built") << c.dump(2);
}
