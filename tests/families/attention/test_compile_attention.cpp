// One attention kernel, realized without a GPU through `factc realize` (tune budget 1), is
// rendered from the embedded template, compiles for sm_90a with the real nvcc, exports the
// attention C ABI under its name, and is reported as built with its symbol. Takes about a
// minute on first run; later runs hit the cache under the build directory. Set
// FACT_SKIP_NVCC_TESTS=1 to skip (e.g. without the toolkit).
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "base/process.h"
#include "engine/realize.h"

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CompileAttention, OneKernelBuildsForSm90aAndExportsTheAbi) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  }
  // minGPT's causal attention (q/k/v strided views of [B, T, 3C], O merged [B, T, C]), fp32 under tf32.
  const json problem{{"kind", "attention"}, {"batch", 2}, {"heads", 4}, {"kv_heads", 4}, {"seq_q", 128},
                     {"seq_k", 128}, {"head_dim", 96}, {"dtype", "float32"}, {"scale", 0.1020620726},
                     {"mask", "causal"},
                     {"strides", {{"q", {147456, 96, 1152}}, {"k", {147456, 96, 1152}}, {"v", {147456, 96, 1152}},
                                  {"o", {49152, 96, 384}}, {"mask", nullptr}}},
                     {"output_layout", "bthd"}};
  const fs::path dir = fs::temp_directory_path() / "fact-compile-attention";
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
  o.policy = fact::Precision::tf32;
  ASSERT_EQ(fact::realize::run_realize(o), 0);
  const json r = json::parse(fact::read_file(dir / "realized.json"));
  const json& pat = r.at("patterns").at(0);
  ASSERT_EQ(pat.at("candidates").size(), 1u) << pat.dump(2);
  const json& c = pat["candidates"][0];
  const std::string name = c.at("kernel");
  ASSERT_EQ(c.at("status"), "built") << c.dump(2);
  EXPECT_EQ(c.at("impl"), "cutlass");
  EXPECT_EQ(name.rfind("fact_attn_sm80_tf32_f32_d96_causal_", 0), 0u) << name;
  EXPECT_EQ(c.at("symbol"), name);  // the template's {{NAME}} is the symbol prefix
  const std::string syms = fact::capture_output({"nm", "-D", "--defined-only", c.at("library").get<std::string>()});
  for (const char* suffix : {"_run", "_can_implement", "_workspace_bytes", "_name"}) {
    EXPECT_NE(syms.find(name + suffix), std::string::npos) << name << " lacks " << name << suffix;
  }
  EXPECT_NE(fact::read_file(c.at("object").get<std::string>()).find("sm_90a"), std::string::npos) << name;
  EXPECT_TRUE(pat.at("winner").is_null());
  fs::remove_all(dir);
}
