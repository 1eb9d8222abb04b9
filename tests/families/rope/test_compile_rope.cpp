// One rope kernel per dtype (half-split fp32, half-split bf16, interleaved-pairs fp16, and fp32
// written as bf16 for a narrowed output, at the
// Llama-3-8B q shape), realized without a GPU through `factc realize` (tune budget 1),
// rendered from the embedded template, compiles for sm_90a with the real nvcc, exports the
// rope C ABI under its name and is reported as built with its symbol. Three compiles on
// first run; later runs hit the cache under the build directory. FACT_SKIP_NVCC_TESTS=1
// skips.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "base/process.h"
#include "../../engine/realize_options_util.h"
#include "engine/realize.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace fact::realize {
json llama_rope_q(const char* dtype);  // test_space.cpp
}

TEST(CompileRope, OneKernelPerDtypeBuildsForSm90aAndExportsTheAbi) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  }
  const fs::path dir = fs::temp_directory_path() / "fact-compile-rope";
  fs::remove_all(dir);
  json pairs = fact::realize::llama_rope_q("float16");
  pairs["form"] = "pairs";
  json narrowed = fact::realize::llama_rope_q("float32");  // fp32 x, output narrowed to bf16
  narrowed["out_dtype"] = "bfloat16";
  const json patterns = {{{"id", "p0"}, {"rule", "rope"}, {"problem", fact::realize::llama_rope_q("float32")}},
                         {{"id", "p1"}, {"rule", "rope"}, {"problem", fact::realize::llama_rope_q("bfloat16")}},
                         {{"id", "p2"}, {"rule", "rope"}, {"problem", pairs}},
                         {{"id", "p3"}, {"rule", "rope"}, {"problem", narrowed}}};
  fact::realize::RealizeOptions o =
      fact::test::options_for(dir, json{{"format", "fact.plan"}, {"version", 1}, {"patterns", patterns}});
  o.cache_dir = FACT_TEST_CACHE_DIR;  // shared with the other compile tests: later runs hit it
  o.tune_budget = 1;
  o.policy = fact::Precision::tf32;
  ASSERT_EQ(fact::realize::run_realize(o), 0);
  const json r = json::parse(fact::read_file(dir / "realized.json"));
  const char* names[] = {"fact_rope_half_f32_d128_t256_v4", "fact_rope_half_bf16_d128_t256_v8",
                         "fact_rope_pairs_f16_d128_t256_v8", "fact_rope_half_f32_to_bf16_d128_t256_v4"};
  for (int i = 0; i < 4; ++i) {
    const json& pat = r.at("patterns").at(i);
    ASSERT_EQ(pat.at("candidates").size(), 1u) << pat.dump(2);
    const json& c = pat["candidates"][0];
    ASSERT_EQ(c.at("status"), "built") << c.dump(2);
    EXPECT_EQ(c.at("kernel"), names[i]);
    EXPECT_EQ(c.at("symbol"), names[i]);
    const std::string syms = fact::capture_output({"nm", "-D", "--defined-only", c.at("library").get<std::string>()});
    for (const char* suffix : {"_run", "_can_implement", "_workspace_bytes", "_name"}) {
      EXPECT_NE(syms.find(std::string(names[i]) + suffix), std::string::npos) << names[i] << " lacks " << suffix;
    }
    EXPECT_NE(fact::read_file(c.at("object").get<std::string>()).find("sm_90a"), std::string::npos) << names[i];
    EXPECT_EQ(pat.at("aten_check"), "module");
  }
  fs::remove_all(dir);
}
