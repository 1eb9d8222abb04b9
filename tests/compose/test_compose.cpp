// Composition checks that realized.json belongs to the plan before anything is linked.
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
  // Builds `obj`, a stand-in kernel object exporting `symbol`'s ABI entry points with the
  // host compiler (compose only links it); false, with the reason in `why`, without one.
  bool stand_in_object(const std::string& symbol, const fs::path& obj, std::string& why) {
    if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
      why = "FACT_SKIP_NVCC_TESTS=1";
      return false;
    }
    const fs::path src = obj.string() + ".c";
    const std::string& k = symbol;
    fact::write_file(src, "#include <stddef.h>\nint " + k + "_can_implement(const void* a) { return 0; }\n" +
                              "size_t " + k + "_workspace_bytes(const void* a) { return 0; }\n" + "int " + k +
                              "_run(const void* a, void* w, size_t n, void* s) { return 0; }\n" +
                              "const char* " + k + "_name(void) { return \"" + k + "\"; }\n");
    if (fact::run_process({"cc", "-c", "-fPIC", src.string(), "-o", obj.string()}, dir / "cc.log") != 0) {
      why = "no host C compiler (cc)";
      return false;
    }
    return true;
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
  EXPECT_EQ(manifest["patterns"][0]["abi"], "gemm");
  EXPECT_TRUE(manifest["library"].is_null());
  const std::string report = fact::read_file(dir / "artifact" / "report.md");
  EXPECT_NE(report.find("`relu` (aten.relu.default): no rule matches"), std::string::npos);
  EXPECT_NE(report.find("the vendor path was fastest"), std::string::npos);
}

TEST_F(ComposeTest, NodesTheCanonicalFormDroppedAreListedForTheRuntime) {
  plan["fallback"].push_back({{"node", "to"}, {"op", "aten.to.dtype"}, {"same_as", "x"},
                              {"reason", "the canonical form drops it: a cast to its own dtype, same as %x"}});
  plan["fallback"].push_back({{"node", "check"}, {"op", "aten._assert_tensor_metadata.default"}, {"same_as", ""},
                              {"reason", "the canonical form drops it: an assertion"}});
  fact::compose::run_compose(options());
  const json manifest = json::parse(fact::read_file(dir / "artifact" / "manifest.json"));
  EXPECT_EQ(manifest.at("dropped"), json::parse(R"([{"node": "to", "same_as": "x"}, {"node": "check", "same_as": ""}])"));
}

TEST_F(ComposeTest, TheReportSaysWhichPatternsShareKernelsAndTuning) {
  json p1 = plan["patterns"][0];
  p1["id"] = "p1", p1["nodes"] = {"mm_1"}, p1["output"] = "mm_1";
  plan["patterns"].push_back(p1);
  realized["patterns"][0]["compile_s"] = 41.0, realized["patterns"][0]["tune_s"] = 2.5;
  json r1 = realized["patterns"][0];
  r1["id"] = "p1", r1["compile_s"] = 0.0, r1["tune_s"] = 0.0;
  r1["shares_kernels_with"] = {"p0"}, r1["tuned_with"] = "p0";
  realized["patterns"].push_back(r1);
  fact::compose::run_compose(options());
  const std::string report = fact::read_file(dir / "artifact" / "report.md");
  EXPECT_NE(report.find("| 41.0 | 2.5 |"), std::string::npos) << report;
  EXPECT_NE(report.find("| 0.0 (kernels of p0) | tuned with p0 |"), std::string::npos) << report;
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

TEST_F(ComposeTest, AKeyTwiceInThePlanOrRealizedIsAnErrorNamingTheFileAndKey) {
  // Read through the strict reader: nlohmann alone took the last of two "winner"s silently.
  auto o = options();
  std::string text = realized.dump();
  text.replace(text.find("\"winner\":"), 9, "\"winner\":\"cutlass3x_other\",\"winner\":");
  fact::write_file(o.realized, text);
  std::string err = error_of(o);
  EXPECT_NE(err.find("duplicate key \"winner\""), std::string::npos) << err;
  EXPECT_NE(err.find(o.realized.string()), std::string::npos) << err;
  o = options();
  text = plan.dump();
  text.replace(text.find("\"precision\":"), 12, "\"precision\":\"fp32\",\"precision\":");
  fact::write_file(o.plan, text);
  err = error_of(o);
  EXPECT_NE(err.find("duplicate key \"precision\""), std::string::npos) << err;
  EXPECT_NE(err.find(o.plan.string()), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir / "artifact" / "manifest.json"));
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

TEST_F(ComposeTest, VendorWinnerWithATailKernelLinksItAndGivesTheRuntimeItsTail) {
  // linear-like mm then relu(acc + c0): the vendor GEMM won, its tail ran as the tail kernel.
  const json epilogue = {{"nodes", {"add", "relu"}}, {"output", "relu"}, {"expr", "relu(add(acc, c0))"},
                         {"tree", {{"op", "relu"}, {"args", {{{"op", "add"}, {"args", {{{"acc", true}}, {{"input", "c0"}}}}}}}}},
                         {"inputs", {{"c0", "v"}}}, {"broadcast", {{"c0", "n"}}}};
  plan["patterns"][0]["epilogue"] = epilogue;
  const std::string tail = "fact_tail_f32_evt0badf00d", symbol = "fact_k_00112233deadbeef";
  std::string why;
  if (!stand_in_object(symbol, dir / "tail.o", why)) GTEST_SKIP() << why;
  auto& r = realized["patterns"][0];
  r["winner"] = "cublas_tf32+tail";
  r["candidates"][0]["kernel"] = "cublas_tf32+tail";
  r["candidates"][0]["companion"] = {{"kernel", tail}, {"symbol", symbol}, {"object", (dir / "tail.o").string()},
                                     {"key", "k"}};
  fact::compose::run_compose(options());
  const json manifest = json::parse(fact::read_file(dir / "artifact" / "manifest.json"));
  const json& m = manifest.at("patterns").at(0);
  EXPECT_EQ(m["impl"], "vendor");
  EXPECT_EQ(m["nodes"], json({"mm"}));  // the GEMM's nodes stay ATen
  EXPECT_EQ(manifest["library"], "libfact_kernels.so");
  ASSERT_TRUE(m.contains("tail")) << m.dump();
  const json& t = m["tail"];
  EXPECT_EQ(t["id"], "p0_tail");
  EXPECT_EQ(t["impl"], "cutlass");
  EXPECT_EQ(t["abi"], "gemm");
  EXPECT_EQ(t["kernel"], tail);
  EXPECT_EQ(t["symbol"], symbol);
  EXPECT_EQ(t["nodes"], json({"add", "relu"}));
  EXPECT_EQ(t["output"], "relu");
  EXPECT_EQ(t["operands"], json({{"a", "mm"}}));  // C is the GEMM's output
  EXPECT_EQ(t["problem"]["lda"], 64);
  EXPECT_EQ(t["problem"]["ldd"], 64);
  EXPECT_EQ(t["problem"]["m"], 64);
  EXPECT_TRUE(t["fused"].get<bool>());
  EXPECT_EQ(t["epilogue"], epilogue);
  const std::string syms = fact::capture_output(
      {"nm", "-D", "--defined-only", (dir / "artifact" / "libfact_kernels.so").string()});
  EXPECT_NE(syms.find(symbol + "_run"), std::string::npos);
  const std::string report = fact::read_file(dir / "artifact" / "report.md");
  EXPECT_NE(report.find("after the vendor GEMM `cublas_tf32+tail`, one elementwise kernel over D: `" + tail + "`"),
            std::string::npos) << report;
  EXPECT_EQ(report.find("in p0's tail, not fused"), std::string::npos) << report;
  // A companion without a build to link is refused, naming the pattern.
  r["candidates"][0]["companion"].erase("object");
  EXPECT_NE(error_of(options()).find("p0: the winner's tail kernel " + tail + " has no build to link"), std::string::npos);
}

// ------------------------------------------------------------------ attention

namespace {

json attention_problem(const std::string& mask) {
  return {{"kind", "attention"}, {"batch", 2}, {"heads", 8}, {"kv_heads", 2}, {"seq_q", 128}, {"seq_k", 128},
          {"head_dim", 64}, {"dtype", "float32"}, {"scale", 0.125}, {"mask", mask},
          {"strides", {{"q", {8192 * 3, 64, 1536}}, {"k", {4096, 64, 512}}, {"v", {4096, 64, 512}},
                       {"o", {65536, 64, 512}}, {"mask", nullptr}}},
          {"output_layout", "bthd"}};
}

const char* kAttnKernel = "fact_attn_sm90_tf32_f32_d64_causal_64x64_mb2";

// The attention pattern of a minGPT-like block (GQA 4:1, causal), its winner a FACT kernel
// (an object built here with the host compiler: compose only links it) or the vendor path.
struct AttentionComposeTest : ComposeTest {
  void SetUp() override {
    ComposeTest::SetUp();
    const json nodes = {"transpose_3", "matmul", "mul", "slice_1", "slice_2", "eq", "masked_fill", "softmax",
                        "dropout", "matmul_1", "transpose_4", "contiguous", "view_3"};
    plan["patterns"] = {{{"id", "p1"}, {"rule", "attention"}, {"nodes", nodes}, {"output", "view_3"},
                         {"operands", {{"q", "transpose_1"}, {"k", "transpose"}, {"v", "transpose_2"}}},
                         {"problem", attention_problem("causal")}}};
    realized["patterns"] = {{{"id", "p1"}, {"problem", attention_problem("causal")}, {"winner", "cublas_attn_tf32"},
                             {"winner_impl", "vendor"}, {"compile_s", 30.0}, {"tune_s", 2.0},
                             {"candidates", {{{"kernel", "cublas_attn_tf32"}, {"impl", "vendor"}, {"status", "ok"},
                                              {"median_ms", 0.2}, {"max_rel_err", 2e-4}}}}}};
  }
  // Builds the stand-in kernel object; false (with the reason in `why`) without a C compiler.
  bool cutlass_winner(std::string& why) {
    const fs::path obj = dir / "attn.o";
    if (!stand_in_object(kAttnKernel, obj, why)) return false;
    auto& r = realized["patterns"][0];
    r["winner"] = kAttnKernel;
    r["winner_impl"] = "cutlass";
    r["candidates"].push_back({{"kernel", kAttnKernel}, {"impl", "cutlass"}, {"status", "ok"}, {"median_ms", 0.05},
                               {"min_ms", 0.049}, {"max_ms", 0.052}, {"max_rel_err", 1e-3}, {"workspace_bytes", 256},
                               {"object", obj.string()}, {"cached", false}});
    return true;
  }
};

}  // namespace

TEST_F(AttentionComposeTest, CutlassWinnerIsLinkedWithAnAttentionManifestEntry) {
  std::string why;
  if (!cutlass_winner(why)) GTEST_SKIP() << why;
  fact::compose::run_compose(options());
  const json manifest = json::parse(fact::read_file(dir / "artifact" / "manifest.json"));
  ASSERT_EQ(manifest.at("patterns").size(), 1u);
  const json& m = manifest["patterns"][0];
  EXPECT_EQ(m["abi"], "attention");
  EXPECT_EQ(m["rule"], "attention");
  EXPECT_EQ(m["impl"], "cutlass");
  EXPECT_EQ(m["kernel"], kAttnKernel);
  EXPECT_EQ(m["symbol"], kAttnKernel);  // an attention kernel's symbol is its name
  EXPECT_EQ(m["operands"], plan["patterns"][0]["operands"]);
  EXPECT_EQ(m["problem"], attention_problem("causal"));
  EXPECT_EQ(m["nodes"].size(), 13u);
  EXPECT_EQ(m["output"], "view_3");
  EXPECT_EQ(m["workspace_bytes"], 256);
  EXPECT_DOUBLE_EQ(m["time_ms"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(m["vendor_ms"].get<double>(), 0.2);
  EXPECT_FALSE(m.contains("fused"));
  EXPECT_EQ(manifest["library"], "libfact_kernels.so");
  const std::string syms = fact::capture_output(
      {"nm", "-D", "--defined-only", (dir / "artifact" / "libfact_kernels.so").string()});
  for (const char* entry : {"_can_implement", "_workspace_bytes", "_run", "_name"}) {
    EXPECT_NE(syms.find(std::string(kAttnKernel) + entry), std::string::npos) << entry;
  }
  const std::string report = fact::read_file(dir / "artifact" / "report.md");
  EXPECT_NE(report.find("attention B=2 H=8 Hkv=2 (GQA 4:1) Tq=128 Tk=128 D=64 float32 mask:causal out:bthd"), std::string::npos) << report;
  EXPECT_NE(report.find("a lower bound"), std::string::npos);
  EXPECT_NE(report.find("- p1: mask causal, 8 heads over 2 K/V heads (GQA ratio 4), head dim 64"), std::string::npos) << report;
  EXPECT_NE(report.find("replaces its 13 nodes"), std::string::npos);
}

TEST_F(AttentionComposeTest, MultiheadAttentionLayoutTbhdIsComposed) {
  // nn.MultiheadAttention writes O as [T, B, H*D]: strides.o says where, any order of b, h, t.
  std::string why;
  if (!cutlass_winner(why)) GTEST_SKIP() << why;
  json p = attention_problem("causal");
  p["output_layout"] = "tbhd";
  p["strides"]["o"] = {512, 64, 1024};
  plan["patterns"][0]["problem"] = realized["patterns"][0]["problem"] = p;
  fact::compose::run_compose(options());
  const json manifest = json::parse(fact::read_file(dir / "artifact" / "manifest.json"));
  EXPECT_EQ(manifest["patterns"][0]["problem"]["output_layout"], "tbhd");
  EXPECT_EQ(manifest["patterns"][0]["impl"], "cutlass");
}

TEST_F(AttentionComposeTest, VendorWinnerStaysAtenWithoutALibrary) {
  fact::compose::run_compose(options());
  const json manifest = json::parse(fact::read_file(dir / "artifact" / "manifest.json"));
  const json& m = manifest["patterns"][0];
  EXPECT_EQ(m["abi"], "attention");
  EXPECT_EQ(m["impl"], "vendor");
  EXPECT_TRUE(m["symbol"].is_null());
  EXPECT_TRUE(manifest["library"].is_null());
  const std::string report = fact::read_file(dir / "artifact" / "report.md");
  EXPECT_NE(report.find("pattern p1 runs its 13 ATen nodes (the matmuls on cuBLAS): the vendor path was fastest"),
            std::string::npos) << report;
  EXPECT_NE(report.find("left to ATen: no FACT kernel was a candidate"), std::string::npos) << report;
  // With a FACT kernel that was slower than the vendor GEMMs alone, the report says so.
  realized["patterns"][0]["candidates"].push_back({{"kernel", kAttnKernel}, {"impl", "cutlass"}, {"status", "ok"},
                                                   {"median_ms", 0.3}, {"max_rel_err", 1e-3}});
  fact::compose::run_compose(options());
  EXPECT_NE(fact::read_file(dir / "artifact" / "report.md")
                .find("left to ATen: cuBLAS's GEMMs alone (`cublas_attn_tf32`, a lower bound of the ATen nodes) took "
                      "0.2000 ms, the best FACT kernel 0.3000 ms"),
            std::string::npos);
}

TEST_F(AttentionComposeTest, InconsistentAttentionPatternsAreRefused) {
  std::string why;
  if (!cutlass_winner(why)) GTEST_SKIP() << why;
  // The problem is read by realization's parser (attention_problem_from_json), so compose
  // refuses what realize refuses, in its words.
  // A mask tensor kind without its operand.
  json p = attention_problem("keep");
  p["strides"]["mask"] = {0, 0, 128};
  plan["patterns"][0]["problem"] = realized["patterns"][0]["problem"] = p;
  EXPECT_NE(error_of(options()).find("plan pattern p1 (attention): mask kind keep needs a mask operand"), std::string::npos);
  // A mask tensor kind without its strides.
  plan["patterns"][0]["problem"] = realized["patterns"][0]["problem"] = attention_problem("keep");
  EXPECT_NE(error_of(options()).find("field 'strides.mask' is null, but mask 'keep' reads a tensor"), std::string::npos);
  // Grouped heads that do not divide.
  p = attention_problem("causal");
  p["kv_heads"] = 3;
  plan["patterns"][0]["problem"] = realized["patterns"][0]["problem"] = p;
  EXPECT_NE(error_of(options()).find("field 'kv_heads' = 3 does not divide heads = 8"), std::string::npos);
  // An output layout that is no order of b, h, t followed by d.
  p = attention_problem("causal");
  p["output_layout"] = "bdht";
  plan["patterns"][0]["problem"] = realized["patterns"][0]["problem"] = p;
  EXPECT_NE(error_of(options()).find("field 'output_layout' must be an order of b, h, t followed by d"), std::string::npos);
  // The attention rule with a GEMM problem.
  plan["patterns"][0]["problem"] = realized["patterns"][0]["problem"] = gemm_problem(64);
  EXPECT_NE(error_of(options()).find("rule \"attention\" with a problem of kind \"gemm\""), std::string::npos);
}

// ------------------------------------------------------------------ buckets

// A pattern over a symbolic M = 4*B realized per bucket of B (docs/04, "Buckets"): the
// manifest lists each bucket's range and choice, the report's table says which serves which.
TEST_F(ComposeTest, BucketsAreListedPerRangeInManifestAndReport) {
  json symbolic = gemm_problem(64);
  symbolic["m"] = "4*B";
  plan["version"] = 2;
  plan["symbols"] = {{"B", {{"min", 2}, {"max", 4096}, {"seen", {8}}, {"buckets", {8, 16}}}}};
  plan["patterns"][0]["problem"] = symbolic;
  auto bucket = [](int lo, int hi, const char* kernel, double ms) {
    json p = gemm_problem(64);
    p["m"] = 4 * hi;
    return json{{"lo", lo}, {"hi", hi}, {"problem", p}, {"winner", kernel}, {"winner_impl", "vendor"},
                {"candidates", {{{"kernel", kernel}, {"impl", "vendor"}, {"status", "ok"}, {"median_ms", ms},
                                 {"max_rel_err", 1e-4}}}}};
  };
  realized["patterns"] = {{{"id", "p0"}, {"problem", symbolic}, {"symbol", "B"}, {"winner", nullptr},
                           {"candidates", json::array()},
                           {"buckets", {bucket(2, 8, "cublas_tf32", 0.01), bucket(9, 16, "cublaslt_tf32", 0.02)}}}};
  fact::compose::run_compose(options());
  const json manifest = json::parse(fact::read_file(dir / "artifact" / "manifest.json"));
  const json& m = manifest.at("patterns").at(0);
  EXPECT_EQ(m.at("size_symbol"), "B");
  EXPECT_EQ(m.at("problem").at("m"), "4*B");
  ASSERT_EQ(m.at("buckets").size(), 2u);
  EXPECT_EQ(m["buckets"][1]["lo"], 9);
  EXPECT_EQ(m["buckets"][1]["hi"], 16);
  EXPECT_EQ(m["buckets"][1]["kernel"], "cublaslt_tf32");
  EXPECT_EQ(m["buckets"][1]["problem"]["m"], 64);
  EXPECT_EQ(m.at("impl"), "vendor");
  const std::string report = fact::read_file(dir / "artifact" / "report.md");
  EXPECT_NE(report.find("## Buckets"), std::string::npos) << report;
  EXPECT_NE(report.find("| 9..16 | M=64 N=64 K=64"), std::string::npos) << report;
  EXPECT_NE(report.find("`cublaslt_tf32`"), std::string::npos);
  EXPECT_NE(report.find("B > 16 runs the 9..16 bucket's configuration"), std::string::npos);
  EXPECT_NE(report.find("### p0 [B 2..8]"), std::string::npos);
}
