// The report's fused-tail section (render_report): a fused pattern lists what the range
// analysis changed in its kernel's tail; an unfused one does not claim it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compose/compose.h"

using nlohmann::json;

namespace {
json problem() {
  return {{"kind", "gemm"}, {"m", 1024}, {"n", 8192}, {"k", 8192}, {"l", 1}, {"dtype_a", "float32"},
          {"dtype_b", "float32"}, {"dtype_d", "float32"}, {"layout_a", "row"}, {"layout_b", "col"}};
}
const char* kNote = "hardtanh: the argument lies in [-0.106, 0.841]; the op is dropped";
const char* kUnreachable = "clamp (upper bound) (step 9): x lies in [-0.107, 0.841], never x >= 1";

std::string report_with(bool fused) {
  const json plan = {{"patterns", {{{"id", "p0"}, {"rule", "gemm"}, {"nodes", {"linear"}},
                                    {"epilogue", {{"expr", "hardtanh(gelu(tanh(silu(acc))), -1.0, 1.0)"},
                                                  {"nodes", {"silu", "tanh", "gelu", "hardtanh"}}}}}}},
                     {"fallback", json::array()}};
  const json realized = {{"patterns", {{{"id", "p0"}, {"epilogue", {{"fusable", true}, {"ranges", {kNote}}}},
                                        {"verification", {{"draws", json::array()}, {"unexercised", ""},
                                                          {"unreachable", kUnreachable}}},
                                        {"candidates", json::array()}}}}};
  const json manifest = {{"patterns", {{{"id", "p0"}, {"nodes", {"linear", "silu", "tanh", "gelu", "hardtanh"}},
                                        {"rule", "gemm"}, {"problem", problem()}, {"impl", fused ? "cutlass" : "vendor"},
                                        {"kernel", fused ? json("k_evt") : json("cublas_tf32")}, {"fused", fused}}}}};
  return fact::compose::render_report(plan, realized, manifest);
}
}  // namespace

TEST(Report, AFusedTailListsTheRangeRewritesOfItsKernel) {
  const std::string r = report_with(true);
  EXPECT_NE(r.find("— fused into `k_evt`\n  - by range, in the kernel: " + std::string(kNote) + "\n"), std::string::npos) << r;
  EXPECT_NE(r.find("  - branches no input can take (by range): " + std::string(kUnreachable) + "\n"), std::string::npos) << r;
  EXPECT_EQ(r.find("branches never exercised"), std::string::npos);  // an empty list is not shown
}

TEST(Report, AnUnfusedTailClaimsNoRewrite) {
  const std::string r = report_with(false);
  EXPECT_EQ(r.find("in the kernel"), std::string::npos) << r;
  // What verification found holds either way.
  EXPECT_NE(r.find("branches no input can take (by range): " + std::string(kUnreachable)), std::string::npos);
  EXPECT_NE(r.find("## Fused tails"), std::string::npos);
}
