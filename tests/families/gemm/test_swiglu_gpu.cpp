// SwiGLU on the GPU (skips without an sm_90 GPU): plan_swiglu's best bf16 kernel for a
// Llama-shaped MLP slice is built, verified against float64 silu(A Wg^T) * (A Wu^T) and
// timed with the vendor path (cuBLAS over the interleaved weight, then the pairing pass);
// both pass, and the vendor's time is charged ATen's silu and mul.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "engine/build.h"
#include "engine/gpu_context.h"
#include "families/gemm/swiglu_realize.h"

using namespace fact::realize;
using fact::families::plan_swiglu;

TEST(SwigluGpu, Bf16KernelAndTheVendorPathPassAgainstFloat64) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  const std::optional<GpuInfo> info = probe_gpu();
  if (!info) GTEST_SKIP() << "no CUDA GPU";
  if (info->cc_major != 9) GTEST_SKIP() << "SwiGLU kernels are built for sm_90a";
  const auto pattern = nlohmann::json::parse(R"({"id": "p0", "problem": {"kind": "gemm", "m": 2048, "n": 1024,
      "k": 512, "l": 1, "dtype_a": "bfloat16", "dtype_b": "bfloat16", "dtype_d": "bfloat16", "layout_a": "row",
      "layout_b": "col", "lda": 512, "ldb": 512, "ldd": 512, "bias": null, "alpha": 1.0, "beta": 0.0,
      "swiglu": {"gate": {"output": "g", "b": "wg"}, "up": {"output": "u", "b": "wu"}, "hidden": 512,
      "interleave": 8}}})");
  const std::optional<GpuInfo> gpu_info = info;
  fact::families::PlanContext ctx{fact::Precision::bf16, 1, &gpu_info, info->sm_count};
  std::map<std::string, BuildRequest> requests;
  auto w = plan_swiglu(pattern, ctx, requests);
  ASSERT_TRUE(w->unsupported.empty()) << w->unsupported;
  ASSERT_EQ(w->kernels.size(), 1u);
  std::vector<BuildRequest> reqs;
  for (auto& [name, r] : requests) reqs.push_back(r);
  std::map<std::string, BuildResult> built;
  for (auto& b : build_kernels(reqs, find_toolchain("", ""), FACT_TEST_CACHE_DIR, 1)) built[b.name] = b;
  ASSERT_TRUE(built.at(w->kernels[0]).ok) << built.at(w->kernels[0]).reason;
  GpuContext gpu(*info);
  fact::families::TuneContext tc{"p0", &built, fact::Precision::bf16, &gpu, info->sm_count, 2, 20, true};
  const auto result = w->tune(tc);
  ASSERT_EQ(result.outcomes.size(), 2u);
  for (const auto& o : result.outcomes) {
    EXPECT_EQ(o.status, "ok") << o.kernel << ": " << o.reason;
    EXPECT_GT(o.max_rel_err, 0.0) << o.kernel << ": bf16 cannot match float64 exactly";
    EXPECT_GT(o.median_ms, 0.0) << o.kernel;
  }
  EXPECT_FALSE(result.outcomes[0].note.empty()) << "the vendor path is charged ATen's silu and mul";
  std::printf("SwiGLU kernel %.4f ms, vendor path %.4f ms (pairing pass %.4f ms)\n", result.outcomes[1].median_ms,
              result.outcomes[0].median_ms, result.verification.value("pair_pass_ms", 0.0));
}
