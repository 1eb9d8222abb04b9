// One generated kernel per dtype (tf32 on fp32 inputs, bf16 with a bias epilogue, fp16),
// plus a staged 3xTF32 stream-K kernel with the promoting mainloop and the no-TMA epilogue,
// and a fused elementwise tail generated as an Epilogue Visitor Tree (vector along N,
// scalars, max/min, activations), and (a test of its own) fp32 operands rounded to bf16 in
// the staging copy with a fused tail, compiles for sm_90a with the real nvcc and CUTLASS headers, without ptxas warning C7510,
// and exports the C ABI. Takes a few minutes on first run; later runs hit the cache under
// the build directory. Set FACT_SKIP_NVCC_TESTS=1 to skip (e.g. without the toolkit).
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "base/process.h"
#include "engine/build.h"
#include "families/gemm/codegen.h"

using namespace fact::realize;

namespace {
// Every result built without C7510, exports the ABI entry points and holds sm_90a code.
void expect_built_for_sm90a(const std::vector<BuildResult>& results, size_t expected) {
  ASSERT_EQ(results.size(), expected);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.reason;
    EXPECT_FALSE(has_wgmma_serialization_warning(fact::read_file(r.log))) << r.name;
    // The library exports the ABI entry points.
    const std::string syms = fact::capture_output({"nm", "-D", "--defined-only", r.library.string()});
    const std::string sym = kernel_symbol(r.name);
    for (const char* suffix : {"_run", "_can_implement", "_workspace_bytes", "_name"}) {
      EXPECT_NE(syms.find(sym + suffix), std::string::npos) << r.name << " lacks " << sym << suffix;
    }
    // The embedded fatbin records the target it was assembled for ("-arch sm_90a").
    EXPECT_NE(fact::read_file(r.object).find("sm_90a"), std::string::npos) << r.name;
  }
}

// MiniGPT's c_fc epilogue on family `f`: the GEMM's bias along N and NewGELU (gelu_tanh) as
// an EVT, in a 128x256x64 cooperative persistent kernel, built once for sm_90a.
void expect_bias_gelu_builds(GemmFamilyKey f) {
  f.epilogue_tree = nlohmann::json::parse(
      R"({"op": "gelu_tanh", "args": [{"op": "add", "args": [{"acc": true}, {"input": "bias"}]}]})");
  f.epilogue_broadcast = {{"bias", "n"}};
  const GemmConfig cfg{128, 256, 64, 1, 1, Schedule::Cooperative, TileScheduler::Persistent};
  const std::vector<BuildRequest> reqs{{gemm_kernel_name(f, cfg), render_gemm_sm90(f, cfg)}};
  expect_built_for_sm90a(build_kernels(reqs, find_toolchain("", ""), FACT_TEST_CACHE_DIR, 1), 1);
}
}  // namespace

TEST(CompileSm90, OneKernelPerDtypeBuildsWithoutC7510) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  }
  const Toolchain tc = find_toolchain("", "");
  const GemmConfig coop{128, 128, 0, 1, 2, Schedule::Cooperative, TileScheduler::Persistent};
  struct Case { GemmFamilyKey family; int tile_k; TileScheduler scheduler; };
  const auto P = TileScheduler::Persistent;
  // Tail (h) of docs/03-rules.md's examples (+ a vector along N, Swish written out, tanh,
  // GELU, hardtanh(-1, 1)) after a GEMM with its own bias, then * a vector along M and + a
  // tensor of D's shape: every leaf kind, in a kernel that computes D^T (A and B row-major),
  // where vectors along N and M swap. tanh bounds gelu's argument: the range analysis drops
  // the hardtanh and gives gelu the bounded erf (evt_ranges.h), whose text the kernel embeds.
  const auto tail = nlohmann::json::parse(R"({"op": "add", "args": [{"op": "mul", "args": [
      {"op": "hardtanh", "args": [{"op": "gelu", "args": [
      {"op": "tanh", "args": [{"op": "mul", "args": [{"op": "add", "args": [{"op": "add", "args": [{"acc": true}, {"input": "bias"}]}, {"input": "c0"}]},
      {"op": "sigmoid", "args": [{"op": "add", "args": [{"op": "add", "args": [{"acc": true}, {"input": "bias"}]}, {"input": "c0"}]}]}]}]}]},
      {"scalar": -1.0}, {"scalar": 1.0}]}, {"input": "c1"}]}, {"input": "c2"}]})");
  GemmFamilyKey evt{"tf32", DType::f32, Layout::Row, Layout::Row, true};
  evt.epilogue_tree = tail;
  evt.epilogue_broadcast = {{"bias", "n"}, {"c0", "n"}, {"c1", "m"}, {"c2", "mn"}};
  const std::vector<Case> cases{
      // A staged (PDL after the copy) and B^T through registers (the RS mainloop with the
      // 128-byte-swizzled register operand); the evt case below is RS without staging.
      {{"tf32", DType::f32, Layout::Col, Layout::Row, false, true}, 32, P},
      {{"bf16", DType::bf16, Layout::Row, Layout::Col, true}, 64, P},
      {{"f16", DType::f16, Layout::Row, Layout::Col, false}, 64, P},
      {{"3xtf32", DType::f32, Layout::Col, Layout::Row, false, true, true, 3, true}, 32, TileScheduler::StreamK},
      {evt, 32, P},
  };
  std::vector<BuildRequest> reqs;
  for (const auto& c : cases) {
    GemmConfig cfg = coop;
    cfg.tile_k = c.tile_k;
    cfg.scheduler = c.scheduler;
    reqs.push_back({gemm_kernel_name(c.family, cfg), render_gemm_sm90(c.family, cfg)});
  }
  expect_built_for_sm90a(build_kernels(reqs, tc, FACT_TEST_CACHE_DIR, 2), cases.size());
}

TEST(CompileSm90, Fp32UnderBf16StagedWithFusedTailBuildsWithoutC7510) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  }
  // MiniGPT's c_fc under --precision bf16: fp32 x (row-major) times the weight as linear's
  // B^T (column-major), both rounded to bf16 in the staging copy, bf16 WGMMA, then the
  // GEMM's bias and NewGELU (gelu_tanh) in the EVT, D in fp32.
  expect_bias_gelu_builds({"bf16", DType::f32, Layout::Row, Layout::Col, true, true, true});
}

TEST(CompileSm90, NarrowedBf16DWithFp32BiasBuildsWithoutC7510) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  }
  // MiniGPT's c_fc with its values narrowed (discover/narrow.h): bf16 operands as given,
  // the fp32 bias and NewGELU in the EVT, D written in bf16 for the next GEMM.
  GemmFamilyKey f{"bf16", DType::bf16, Layout::Row, Layout::Col, true};
  f.element_epi = DType::f32;
  expect_bias_gelu_builds(f);
}
