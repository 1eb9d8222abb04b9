// GEMM kernels on the GPU (skipped without one, or with FACT_SKIP_NVCC_TESTS=1): fp32 inputs
// under bf16 through the bf16 staging copy with a fused tail, and the vendor GEMM followed
// by the generated tail kernel, both verified against float64 and timed by verify_and_tune.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "engine/build.h"
#include "engine/gpu_context.h"
#include "families/gemm/candidates.h"
#include "families/gemm/codegen.h"
#include "families/gemm/epilogue/tail_codegen.h"
#include "families/gemm/epilogue/tail_verify.h"
#include "families/gemm/space.h"
#include "families/gemm/verify_tune.h"

using namespace fact::realize;
using fact::Precision;

namespace {

std::string skip_reason(std::optional<GpuInfo>& gpu) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') return "FACT_SKIP_NVCC_TESTS=1";
  gpu = probe_gpu();
  if (!gpu) return "no CUDA GPU";
  if (gpu->cc_major != 9) return "kernels are built for sm_90a; this GPU is cc " + std::to_string(gpu->cc_major);
  return "";
}

// MiniGPT's c_fc at a small size: x (M x K, row-major) times W^T (B column-major) plus the
// bias along N, then NewGELU.
GemmProblem linear_gelu_tanh() {
  GemmProblem p;
  p.m = 1024; p.n = 768; p.k = 256;
  p.layout_a = Layout::Row; p.layout_b = Layout::Col;
  p.lda = p.k; p.ldb = p.k; p.ldd = p.n;
  p.bias_n = true;
  p.tail_tree = nlohmann::json::parse(R"({"op": "gelu_tanh", "args": [{"acc": true}]})");
  p.tail_broadcast = nlohmann::json::object();
  p.tail_nodes = 8;  // NewGELU written out
  return p;
}

}  // namespace

TEST(GemmGpu, Fp32UnderBf16StagedKernelAndTheVendorTailKernelPass) {
  std::optional<GpuInfo> info;
  if (const std::string why = skip_reason(info); !why.empty()) GTEST_SKIP() << why;
  const GemmProblem p = linear_gelu_tanh();
  std::string why;
  const auto families = gemm_families(p, Precision::bf16, why);
  ASSERT_EQ(families.size(), 1u) << why;
  const GemmConfig c = gemm_tuning_space(families[0], p, info->sm_count, 1).at(0);
  const std::string gemm = gemm_kernel_name(families[0], c);
  const std::string tail = tail_kernel_name(p.tail_tree, p.tail_broadcast, p.dtype_d);
  const auto built = build_kernels({{gemm, render_gemm_sm90(families[0], c)},
                                    {tail, render_tail_kernel(p.tail_tree, p.tail_broadcast, p.dtype_d)}},
                                   find_toolchain("", ""), FACT_TEST_CACHE_DIR, 2);
  ASSERT_EQ(built.size(), 2u);
  for (const auto& b : built) ASSERT_TRUE(b.ok) << b.name << ": " << b.reason;
  const auto& lib = [&](const std::string& name) { return built[built[0].name == name ? 0 : 1].library.string(); };
  std::vector<std::unique_ptr<GemmCandidate>> cands;
  cands.push_back(make_tail_pass_candidate(make_cublaslt_candidate(p, Precision::bf16), p,
                                           load_cutlass_candidate(tail, lib(tail), kernel_symbol(tail))));
  cands.push_back(load_cutlass_candidate(gemm, lib(gemm), kernel_symbol(gemm)));
  GpuContext gpu(*info);
  nlohmann::json verification;
  const auto out = verify_and_tune(p, Precision::bf16, cands, gpu, 2, 20, true, &verification);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& o : out) {
    EXPECT_EQ(o.status, "ok") << o.kernel << ": " << o.reason;
    EXPECT_GT(o.median_ms, 0.0) << o.kernel;
    EXPECT_GT(o.max_rel_err, 0.0) << o.kernel << ": bf16 operands cannot match float64 exactly";
  }
  EXPECT_EQ(out[0].companion, tail);
  EXPECT_TRUE(out[0].note.empty()) << "a vendor candidate with its tail kernel is timed as it runs: " << out[0].note;
  std::printf("fused bf16 kernel %.4f ms, cuBLASLt bf16 + tail kernel %.4f ms (tail pass alone %.4f ms)\n",
              out[1].median_ms, out[0].median_ms, verification.value("tail_pass_ms", 0.0));
}
