// Composition of a norm pattern: a FACT winner (an object built here with the host compiler:
// compose only links it) gets a norm manifest entry whose extra output is the sum exactly
// when the problem writes one; inconsistent operands are refused in the family's words.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_io.h"
#include "base/process.h"
#include "compose/compose.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kKernel = "fact_norm_ln_f32_f32_f32_c768_rwb_r4_t64_v4";

json norm_problem(bool sum) {
  return {{"kind", "norm"}, {"norm", "layer"}, {"rows", 4096}, {"cols", 768}, {"dtype", "float32"},
          {"out_dtype", "float32"}, {"param_dtype", "float32"}, {"eps", 1e-5}, {"weight", true}, {"bias", true},
          {"residual", true}, {"sum_output", sum ? json("add") : json(nullptr)},
          {"strides", {{"x", 768}, {"residual", 768}}}, {"form", "layer_norm"}};
}

struct NormComposeTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() /
                 ("fact-compose-norm-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  void SetUp() override {
    fs::remove_all(dir);
    fs::create_directories(dir);
    fact::write_file(dir / "graph.json", "{}");
  }
  void TearDown() override { fs::remove_all(dir); }
  // Writes plan and realized.json for one norm pattern won by kKernel; false without cc.
  bool write(const json& problem, const json& operands) {
    if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') return false;
    const fs::path src = dir / "k.c", obj = dir / "k.o";
    const std::string k = kKernel;
    fact::write_file(src, "#include <stddef.h>\nint " + k + "_can_implement(const void* a) { return 0; }\nsize_t " + k +
                              "_workspace_bytes(const void* a) { return 0; }\nint " + k +
                              "_run(const void* a, void* w, size_t n, void* s) { return 0; }\nconst char* " + k +
                              "_name(void) { return \"" + k + "\"; }\n");
    if (fact::run_process({"cc", "-c", "-fPIC", src.string(), "-o", obj.string()}, dir / "cc.log") != 0) return false;
    const json plan = {{"format", "fact.plan"}, {"version", 1}, {"precision", "tf32"},
                       {"patterns", {{{"id", "p0"}, {"rule", "norm"}, {"nodes", {"add", "layer_norm"}},
                                      {"output", "layer_norm"}, {"operands", operands}, {"problem", problem}}}},
                       {"rejected", json::array()}, {"fallback", json::array()}};
    const json realized = {
        {"format", "fact.realized"}, {"version", 1}, {"policy", "tf32"}, {"gpu", "NVIDIA H200"},
        {"patterns", {{{"id", "p0"}, {"problem", problem}, {"winner", kKernel}, {"winner_impl", "cutlass"},
                       {"aten_check", "module"},
                       {"candidates", {{{"kernel", "vendor"}, {"impl", "vendor"}, {"status", "ok"}, {"median_ms", 0.01}},
                                       {{"kernel", kKernel}, {"impl", "cutlass"}, {"status", "ok"}, {"median_ms", 0.012},
                                        {"max_rel_err", 1e-6}, {"object", obj.string()}}}}}}}};
    fact::write_file(dir / "plan.json", plan.dump());
    fact::write_file(dir / "realized.json", realized.dump());
    return true;
  }
  fact::compose::ComposeOptions options() {
    return {dir / "plan.json", dir / "realized.json", dir / "graph.json", dir / "artifact", ""};
  }
};

const json kOperands = {{"x", "x"}, {"residual", "y"}, {"weight", "p_w"}, {"bias", "p_b"}};

}  // namespace

TEST_F(NormComposeTest, TheSumIsAnExtraOutputExactlyWhenTheProblemWritesIt) {
  for (bool sum : {true, false}) {
    if (!write(norm_problem(sum), kOperands)) GTEST_SKIP() << "no host C compiler or FACT_SKIP_NVCC_TESTS=1";
    fact::compose::run_compose(options());
    const json m = json::parse(fact::read_file(dir / "artifact" / "manifest.json")).at("patterns").at(0);
    EXPECT_EQ(m["abi"], "norm");
    EXPECT_EQ(m["impl"], "cutlass");
    EXPECT_EQ(m["symbol"], kKernel);
    EXPECT_EQ(m["aten_check"], "module");
    EXPECT_EQ(m.contains("extra_outputs"), sum);
    if (sum) EXPECT_EQ(m["extra_outputs"], json({{"sum", "add"}}));
    const std::string report = fact::read_file(dir / "artifact" / "report.md");
    EXPECT_NE(report.find("layernorm rows=4096 cols=768 float32->float32 +residual"), std::string::npos) << report;
    EXPECT_NE(report.find("## Norms"), std::string::npos) << report;
    fs::remove_all(dir / "artifact");
  }
}

TEST_F(NormComposeTest, OperandsTheProblemDoesNotNameAreRefused) {
  json ops = kOperands;
  ops.erase("bias");
  if (!write(norm_problem(false), ops)) GTEST_SKIP() << "no host C compiler or FACT_SKIP_NVCC_TESTS=1";
  try {
    fact::compose::run_compose(options());
    FAIL() << "composed";
  } catch (const fact::Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan pattern p0 (norm): operand bias is missing"), std::string::npos) << e.what();
  }
}
