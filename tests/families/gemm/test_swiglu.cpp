// SwiGLU as one GEMM (src/families/gemm/swiglu.h) without a GPU: reading the plan problem
// and its refusals, the families and space a SwiGLU kernel can be, names and rendering.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "families/gemm/swiglu.h"

using namespace fact::realize;
using nlohmann::json;
using fact::Precision;

namespace {
// Llama-3-8B's MLP gate/up at B*T = 32768 rows: K 4096, H 9728, bf16.
json llama_problem() {
  return json::parse(R"({"kind": "gemm", "m": 32768, "n": 19456, "k": 4096, "l": 1, "dtype_a": "bfloat16",
      "dtype_b": "bfloat16", "dtype_d": "bfloat16", "dtype_acc": "float32", "layout_a": "row", "layout_b": "col",
      "lda": 4096, "ldb": 4096, "ldd": 9728, "batch_stride_a": 0, "batch_stride_b": 0, "batch_stride_d": 0,
      "bias": null, "alpha": 1.0, "beta": 0.0, "swiglu": {"gate": {"output": "linear_4", "b": "w1"},
      "up": {"output": "linear_5", "b": "w3"}, "hidden": 9728, "interleave": 8}})");
}
}  // namespace

TEST(Swiglu, ReadsTheProblemAsTheGemmOverTheInterleavedWeight) {
  const SwigluProblem p = swiglu_problem_from_json(llama_problem());
  EXPECT_EQ(p.hidden, 9728);
  EXPECT_EQ(p.ldd, 9728);
  EXPECT_EQ(p.gemm.n, 19456);
  EXPECT_EQ(p.gemm.ldd, 19456);  // the GEMM the space ranks: M x 2H
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 32768 * 19456 * 4096);
  EXPECT_TRUE(is_swiglu_problem(llama_problem()));
  json plain = llama_problem();
  plain.erase("swiglu");
  EXPECT_FALSE(is_swiglu_problem(plain));
  // Output column j's gate value is GEMM column 16 (j / 8) + j % 8; its up value 8 further.
  EXPECT_EQ(swiglu_gate_column(0), 0);
  EXPECT_EQ(swiglu_gate_column(7), 7);
  EXPECT_EQ(swiglu_gate_column(8), 16);
  EXPECT_EQ(swiglu_gate_column(9727), 19447);
}

TEST(Swiglu, RefusesWhatTheKernelsDoNotComputeNamingIt) {
  auto refused = [](const char* key, const json& value, const char* says) {
    json p = llama_problem();
    if (std::string(key).starts_with("swiglu.")) p["swiglu"][std::string(key).substr(7)] = value;
    else p[key] = value;
    try {
      swiglu_problem_from_json(p);
      ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
    } catch (const fact::Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused("swiglu.interleave", 4, "interleave 4");
  refused("swiglu.hidden", 9720 + 4, "not a positive multiple of 8");
  refused("n", 19448, "is not 2 * hidden");
  refused("bias", "n", "with a bias");
  refused("beta", 1.0, "alpha 1 and beta 1");
  refused("layout_b", "row", "ldb = 4096 is smaller");  // the GEMM reader says it first
  refused("ldb", 8192, "column-major, ldb = K");
  refused("ldd", 9000, "ldd 9000 < hidden 9728");
  refused("swiglu.hidden", "9728", "field 'hidden' must be an integer, got \"9728\"");
  refused("swiglu.interleave", 8.5, "field 'interleave' must be an integer, got 8.5");
  refused("ldd", int64_t(1) << 50, "SwiGLU ldd = 1125899906842624 passes 2^48");
  refused("ldd", int64_t(1) << 40, "SwiGLU output: spans");  // M - 1 rows 2^40 apart
}

TEST(Swiglu, FamiliesReadTheOperandsAsGivenAndTheSpaceIsPersistent) {
  std::string why;
  const SwigluProblem p = swiglu_problem_from_json(llama_problem());
  const auto families = swiglu_families(p, Precision::bf16, why);
  ASSERT_EQ(families.size(), 1u) << why;
  EXPECT_EQ(families[0].mma, "bf16");
  const auto choices = swiglu_kernel_choices(families, p, 132, 3);
  ASSERT_EQ(choices.size(), 3u);
  for (const auto& c : choices) EXPECT_EQ(c.config.scheduler, TileScheduler::Persistent);
  // fp32 inputs: tf32 reads them as given; the fp32 policy's 3xTF32 and bf16's rounding
  // stage them, which the SwiGLU kernel does not do.
  json f32 = llama_problem();
  for (const char* k : {"dtype_a", "dtype_b", "dtype_d"}) f32[k] = "float32";
  const SwigluProblem q = swiglu_problem_from_json(f32);
  EXPECT_EQ(swiglu_families(q, Precision::tf32, why).at(0).mma, "tf32");
  why.clear();
  EXPECT_TRUE(swiglu_families(q, Precision::bf16, why).empty());
  EXPECT_NE(why.find("need staging"), std::string::npos) << why;
}

TEST(Swiglu, NameAndSourceSpellTheConfiguration) {
  const GemmFamilyKey f{"bf16", DType::bf16, Layout::Row, Layout::Col, false};
  const GemmConfig c{128, 256, 64, 2, 1, Schedule::Pingpong, TileScheduler::Persistent};
  EXPECT_EQ(swiglu_kernel_name(f, c), "cutlass3x_sm90a_bf16_rcr_128x256x64_2x1x1_pingpong_persistent_swiglu8");
  const std::string src = render_swiglu_sm90(f, c);
  EXPECT_NE(src.find("using Element = cutlass::bfloat16_t;"), std::string::npos);
  EXPECT_NE(src.find("using TileShape = Shape<_128, _256, _64>;"), std::string::npos);
  EXPECT_NE(src.find("KernelTmaWarpSpecializedPingpong"), std::string::npos);
  EXPECT_NE(src.find(kernel_symbol(swiglu_kernel_name(f, c)) + "_run"), std::string::npos);
  EXPECT_EQ(src.find("{{"), std::string::npos);
  GemmFamilyKey staged = f;
  staged.stage_a = true;
  EXPECT_THROW(render_swiglu_sm90(staged, c), fact::Error);
}
