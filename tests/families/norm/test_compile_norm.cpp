// One norm kernel per dtype (fp32 LayerNorm with weight, bias and the residual add; bf16
// RMSNorm with a weight), realized without a GPU through `factc realize` (tune budget 1),
// rendered from the embedded template, compiles for sm_90a with the real nvcc, exports the
// norm C ABI under its name and is reported as built with its symbol. Two compiles on first
// run; later runs hit the cache under the build directory. FACT_SKIP_NVCC_TESTS=1 skips.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "base/process.h"
#include "../../engine/realize_options_util.h"
#include "engine/realize.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json problem(const char* norm, const char* dtype, bool residual, bool bias, int64_t cols) {
  return {{"kind", "norm"}, {"norm", norm}, {"rows", 4096}, {"cols", cols}, {"dtype", dtype}, {"out_dtype", dtype},
          {"param_dtype", dtype}, {"eps", 1e-5}, {"weight", true}, {"bias", bias}, {"residual", residual},
          {"sum_output", residual ? json("add") : json(nullptr)},
          {"strides", {{"x", cols}, {"residual", residual ? json(cols) : json(nullptr)}}}, {"form", "written"}};
}

}  // namespace

TEST(CompileNorm, OneKernelPerDtypeBuildsForSm90aAndExportsTheAbi) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  }
  const fs::path dir = fs::temp_directory_path() / "fact-compile-norm";
  fs::remove_all(dir);
  const json patterns = {{{"id", "p0"}, {"rule", "norm"}, {"problem", problem("layer", "float32", true, true, 768)}},
                         {{"id", "p1"}, {"rule", "norm"}, {"problem", problem("rms", "bfloat16", false, false, 4096)}}};
  fact::realize::RealizeOptions o =
      fact::test::options_for(dir, json{{"format", "fact.plan"}, {"version", 1}, {"patterns", patterns}});
  o.cache_dir = FACT_TEST_CACHE_DIR;  // shared with the other compile tests: later runs hit it
  o.tune_budget = 1;
  o.policy = fact::Precision::tf32;
  ASSERT_EQ(fact::realize::run_realize(o), 0);
  const json r = json::parse(fact::read_file(dir / "realized.json"));
  const char* prefixes[] = {"fact_norm_ln_f32_f32_f32_c768_rwb_", "fact_norm_rms_bf16_bf16_bf16_c4096_nwn_"};
  for (int i = 0; i < 2; ++i) {
    const json& pat = r.at("patterns").at(i);
    ASSERT_EQ(pat.at("candidates").size(), 1u) << pat.dump(2);
    const json& c = pat["candidates"][0];
    const std::string name = c.at("kernel");
    ASSERT_EQ(c.at("status"), "built") << c.dump(2);
    EXPECT_EQ(name.rfind(prefixes[i], 0), 0u) << name;
    EXPECT_EQ(c.at("symbol"), name);
    const std::string syms = fact::capture_output({"nm", "-D", "--defined-only", c.at("library").get<std::string>()});
    for (const char* suffix : {"_run", "_can_implement", "_workspace_bytes", "_name"}) {
      EXPECT_NE(syms.find(name + suffix), std::string::npos) << name << " lacks " << name << suffix;
    }
    EXPECT_NE(fact::read_file(c.at("object").get<std::string>()).find("sm_90a"), std::string::npos) << name;
    EXPECT_EQ(pat.at("aten_check"), "module");
  }
  fs::remove_all(dir);
}
