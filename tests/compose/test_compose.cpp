// Composition checks that realized.json belongs to the plan before anything is linked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "compose/compose.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json gemm_problem(int n) {
  return {{"kind", "gemm"}, {"m", n}, {"n", n}, {"k", n}, {"l", 1}, {"dtype_a", "float32"},
          {"dtype_b", "float32"}, {"dtype_d", "float32"}, {"layout_a", "row"}, {"layout_b", "row"},
          {"lda", n}, {"ldb", n}, {"ldd", n}, {"bias", nullptr}, {"alpha", 1.0}, {"beta", 0.0}};
}

struct ComposeTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() /
                 ("fact-compose-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  json plan, realized;
  void SetUp() override {
    fs::remove_all(dir);
    fs::create_directories(dir);
    plan = {{"format", "fact.plan"}, {"version", 1}, {"precision", "tf32"},
            {"patterns", {{{"id", "p0"}, {"rule", "gemm"}, {"nodes", {"mm"}}, {"output", "mm"},
                           {"operands", {{"a", "x"}, {"b", "w"}}}, {"problem", gemm_problem(64)}}}},
            {"rejected", json::array()},
            {"fallback", {{{"node", "relu"}, {"op", "aten.relu.default"}, {"reason", "no rule matches"}}}}};
    realized = {{"format", "fact.realized"}, {"version", 1}, {"policy", "tf32"}, {"gpu", "NVIDIA H200"},
                {"patterns", {{{"id", "p0"}, {"problem", gemm_problem(64)}, {"winner", "cublas_tf32"},
                               {"winner_impl", "vendor"},
                               {"candidates", {{{"kernel", "cublas_tf32"}, {"impl", "vendor"}, {"status", "ok"},
                                                {"median_ms", 0.01}, {"max_rel_err", 1e-4}}}}}}}};
    fact::write_file(dir / "graph.json", "{}");
  }
  void TearDown() override { fs::remove_all(dir); }
  fact::compose::ComposeOptions options() {
    fact::write_file(dir / "plan.json", plan.dump());
    fact::write_file(dir / "realized.json", realized.dump());
    return {dir / "plan.json", dir / "realized.json", dir / "graph.json", dir / "artifact", ""};
  }
  std::string error_of(const fact::compose::ComposeOptions& o) {
    try {
      fact::compose::run_compose(o);
    } catch (const fact::Error& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace

TEST_F(ComposeTest, VendorWinnerStaysAtenAndTheReportSaysWhy) {
  fact::compose::run_compose(options());
  const json manifest = json::parse(fact::read_file(dir / "artifact" / "manifest.json"));
  ASSERT_EQ(manifest.at("patterns").size(), 1u);
  EXPECT_EQ(manifest["patterns"][0]["impl"], "vendor");
  EXPECT_EQ(manifest["patterns"][0]["kernel"], "cublas_tf32");
  EXPECT_TRUE(manifest["library"].is_null());
  const std::string report = fact::read_file(dir / "artifact" / "report.md");
  EXPECT_NE(report.find("`relu` (aten.relu.default): no rule matches"), std::string::npos);
  EXPECT_NE(report.find("the vendor path was fastest"), std::string::npos);
}

TEST_F(ComposeTest, RealizedWithoutGpuIsRefused) {
  realized["gpu"] = nullptr;
  EXPECT_NE(error_of(options()).find("without a GPU"), std::string::npos);
}

TEST_F(ComposeTest, RealizedForAnotherProblemIsRefused) {
  realized["patterns"][0]["problem"] = gemm_problem(128);
  EXPECT_NE(error_of(options()).find("another problem"), std::string::npos);
}

TEST_F(ComposeTest, QuarantinedWinnerIsRefused) {
  realized["patterns"][0]["candidates"][0]["status"] = "quarantined";
  EXPECT_NE(error_of(options()).find("not a verified candidate"), std::string::npos);
}

TEST_F(ComposeTest, PolicyMismatchIsRefused) {
  realized["policy"] = "bf16";
  EXPECT_NE(error_of(options()).find("policy"), std::string::npos);
}

TEST_F(ComposeTest, MalformedRealizedIsAnErrorNotAnAbort) {
  realized["patterns"][0].erase("winner");
  EXPECT_NE(error_of(options()).find("malformed"), std::string::npos);
}

TEST_F(ComposeTest, BaselineIsTheFastestVendorCandidate) {
  auto& cands = realized["patterns"][0]["candidates"];
  cands.push_back({{"kernel", "cublaslt_tf32"}, {"impl", "vendor"}, {"status", "ok"}, {"median_ms", 0.008},
                   {"max_rel_err", 1e-4}});
  cands.push_back({{"kernel", "slow_vendor"}, {"impl", "vendor"}, {"status", "ok"}, {"median_ms", 0.5},
                   {"max_rel_err", 1e-4}});
  fact::compose::run_compose(options());
  const json manifest = json::parse(fact::read_file(dir / "artifact" / "manifest.json"));
  EXPECT_DOUBLE_EQ(manifest["patterns"][0]["vendor_ms"].get<double>(), 0.008);
}
