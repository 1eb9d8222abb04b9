// One SwiGLU kernel (swiglu.h: the GEMM over the interleaved gate/up weight with FACT's
// silu(g)*u epilogue), bf16, cooperative, compiles for sm_90a with the real nvcc and
// CUTLASS headers without ptxas warning C7510 and exports the C ABI. Set
// FACT_SKIP_NVCC_TESTS=1 to skip (e.g. without the toolkit).
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/file_io.h"
#include "base/process.h"
#include "engine/build.h"
#include "families/gemm/swiglu.h"

using namespace fact::realize;

TEST(CompileSwiglu, OneBf16KernelBuildsWithoutC7510) {
  if (const char* skip = std::getenv("FACT_SKIP_NVCC_TESTS"); skip && *skip == '1') {
    GTEST_SKIP() << "FACT_SKIP_NVCC_TESTS=1";
  }
  const GemmFamilyKey f{"bf16", DType::bf16, Layout::Row, Layout::Col, false};
  const GemmConfig cfg{128, 256, 64, 1, 1, Schedule::Cooperative, TileScheduler::Persistent};
  const std::string name = swiglu_kernel_name(f, cfg);
  const std::vector<BuildResult> results =
      build_kernels({{name, render_swiglu_sm90(f, cfg)}}, find_toolchain("", ""), FACT_TEST_CACHE_DIR, 1);
  ASSERT_EQ(results.size(), 1u);
  const BuildResult& r = results[0];
  ASSERT_TRUE(r.ok) << r.name << ": " << r.reason;
  EXPECT_FALSE(has_wgmma_serialization_warning(fact::read_file(r.log))) << r.name;
  const std::string syms = fact::capture_output({"nm", "-D", "--defined-only", r.library.string()});
  for (const char* suffix : {"_run", "_can_implement", "_workspace_bytes", "_name"})
    EXPECT_NE(syms.find(kernel_symbol(name) + suffix), std::string::npos) << name << " lacks " << suffix;
  EXPECT_NE(fact::read_file(r.object).find("sm_90a"), std::string::npos) << name;
}
