// Registry, cost model and plan JSON checks (the gemm rule's cases are golden files).
#include <gtest/gtest.h>

#include "base/error.h"
#include "discover/plan.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

MatchResult never(const MatchContext&, const graph::Node&) { return NotApplicable{}; }

TEST(RuleRegistry, RejectsDuplicateNames) {
  RuleRegistry r;
  r.add(Rule{.name = "x", .meaning = "", .kernel_family = "", .tests = "", .match = &never});
  try {
    r.add(Rule{.name = "x", .meaning = "", .kernel_family = "", .tests = "", .match = &never});
    FAIL() << "duplicate accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rule registry: duplicate rule name 'x'");
  }
  EXPECT_THROW(r.add(Rule{.name = "y"}), Error);  // no match function
  EXPECT_EQ(r.rules().size(), 1u);
}

TEST(RuleRegistry, BuiltinRulesIncludeGemmAndAttention) {
  const Rule* gemm = builtin_rules().find("gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->kernel_family, "gemm");
  const Rule* attention = builtin_rules().find("attention");
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->kernel_family, "attention");
  EXPECT_EQ(builtin_rules().find("nope"), nullptr);
}

TEST(CostModel, SquareTf32GemmIsComputeBound) {
  // 4096^3 fp32 under tf32: 2*4096^3 FLOP at 494 TFLOP/s = 278.2 us; 3 * 64 MiB at
  // 4.8 TB/s = 41.9 us.
  const int64_t n = 4096;
  Work w{2 * n * n * n, 3 * n * n * 4, matmul_unit(graph::DType::f32, Precision::tf32)};
  Estimate e = estimate(w, w.bytes);
  EXPECT_EQ(e.bound, Bound::compute);
  EXPECT_NEAR(e.time_us, 278.22, 0.01);
  EXPECT_NEAR(e.gain_us, 0.05 * 278.22, 0.01);  // no bytes saved: the tuning headroom only
  EXPECT_EQ(e.reason, "intensity 682.7 FLOP/B >= ridge 102.9 FLOP/B (tf32 tensor cores on NVIDIA H200)");
}

TEST(CostModel, FusionSavesBytes) {
  Work w{1000, 4'800'000, MathUnit::fp32_simt};  // 1 us of traffic
  Estimate e = estimate(w, 3 * 4'800'000);       // the ATen path moves 3x the bytes
  EXPECT_EQ(e.bound, Bound::memory);
  EXPECT_NEAR(e.time_us, 1.0, 1e-9);
  EXPECT_NEAR(e.gain_us, 2.0 + 0.05, 1e-9);
}

TEST(CostModel, PolicyPicksTheMathUnit) {
  EXPECT_EQ(matmul_unit(graph::DType::f32, Precision::fp32), MathUnit::fp32_simt);
  EXPECT_EQ(matmul_unit(graph::DType::f32, Precision::bf16), MathUnit::bf16_tensor);
  EXPECT_EQ(matmul_unit(graph::DType::f16, Precision::fp32), MathUnit::fp16_tensor);
  EXPECT_THROW(matmul_unit(graph::DType::i64, Precision::tf32), Error);
  EXPECT_EQ(precision_from_name("bf16"), Precision::bf16);
  EXPECT_THROW(precision_from_name("fp8"), Error);
}

TEST(PlanJson, LinearPatternFollowsDocs03) {
  graph::Graph g = graph::parse_text(R"(graph Model {
  input %x : bf16[8192,4096]{4096,1}
  parameter %p_weight : bf16[4096,4096]{4096,1} = "weight"
  parameter %p_bias : bf16[4096]{1} = "bias"
  %linear : bf16[8192,4096]{4096,1} = aten.linear.default(%x, %p_weight, %p_bias)
  %relu : bf16[8192,4096]{4096,1} = aten.relu.default(%linear)
  output (%relu)
})");
  nlohmann::ordered_json j = plan_to_json(make_plan(g, builtin_rules(), Precision::tf32));
  EXPECT_EQ(j["format"], "fact.plan");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["graph"], "Model");
  ASSERT_EQ(j["patterns"].size(), 1u);
  const auto& p = j["patterns"][0];
  EXPECT_EQ(p["id"], "p0");
  EXPECT_EQ(p["rule"], "gemm");
  EXPECT_EQ(p["priority"], 0);
  EXPECT_EQ(p["nodes"].dump(), R"(["linear"])");
  EXPECT_EQ(p["output"], "linear");
  EXPECT_EQ(p["operands"].dump(), R"({"a":"x","b":"p_weight","bias":"p_bias"})");
  EXPECT_EQ(p["problem"].dump(),
            R"({"kind":"gemm","m":8192,"n":4096,"k":4096,"l":1,"dtype_a":"bfloat16",)"
            R"("dtype_b":"bfloat16","dtype_d":"bfloat16","dtype_acc":"float32","layout_a":"row",)"
            R"("layout_b":"col","lda":4096,"ldb":4096,"ldd":4096,"batch_stride_a":0,)"
            R"("batch_stride_b":0,"batch_stride_d":0,"bias":"n","alpha":1.0,"beta":1.0})");
  EXPECT_EQ(p["estimate"]["flops"], 274877906944);
  // x 64 MiB + w 32 MiB + bias 8 KiB + D 64 MiB, bf16.
  EXPECT_EQ(p["estimate"]["bytes"], 167780352);
  EXPECT_EQ(p["estimate"]["bound"], "compute");
  EXPECT_NEAR(p["estimate"]["time_us"].get<double>(), 277.94, 0.01);  // at 989 TFLOP/s
  EXPECT_EQ(p["estimate"]["reason"],
            "intensity 1638.3 FLOP/B >= ridge 206.0 FLOP/B (bf16 tensor cores on NVIDIA H200)");
  EXPECT_TRUE(p["vetted_example"].is_null());
  // The ReLU is the GEMM's epilogue tail: 64 MiB written and read, then written again.
  EXPECT_EQ(p["epilogue"]["nodes"].dump(), R"(["relu"])");
  EXPECT_EQ(p["epilogue"]["expr"], "relu(acc)");
  EXPECT_EQ(p["epilogue"]["tree"].dump(), R"({"op":"relu","args":[{"acc":true}]})");
  EXPECT_EQ(p["epilogue"]["saved_bytes"], 2 * 8192 * 4096 * 2);
  EXPECT_NEAR(p["epilogue"]["gain_us"].get<double>(), 2.0 * 8192 * 4096 * 2 / 4.8e12 * 1e6, 1e-9);
  EXPECT_FALSE(p.contains("epilogue_stop"));
  EXPECT_EQ(j["rejected"].size(), 0u);
  // The tail belongs to p0 (realization fuses it or the report says why not): no fallback.
  EXPECT_EQ(j["fallback"].dump(), "[]");
}

TEST(PlanJson, EpilogueNamesItsInputsAndHowTheyBroadcast) {
  graph::Graph g = graph::parse_text(R"(graph Model {
  input %x : f32[64,32]{32,1}
  input %w : f32[32,16]{16,1}
  input %v : f32[1,16]{16,1}
  input %r : f32[64,16]{16,1}
  %mm : f32[64,16]{16,1} = aten.mm.default(%x, %w)
  %add : f32[64,16]{16,1} = aten.add.Tensor(%mm, %v, alpha=2.0)
  %mul : f32[64,16]{16,1} = aten.mul.Tensor(%add, %r)
  output (%mul)
})");
  nlohmann::ordered_json j = plan_to_json(make_plan(g, builtin_rules(), Precision::tf32));
  const auto& e = j["patterns"][0]["epilogue"];
  EXPECT_EQ(e["expr"], "mul(add(acc, mul(c0, 2.0)), c1)");
  EXPECT_EQ(e["inputs"].dump(), R"({"c0":"v","c1":"r"})");
  EXPECT_EQ(e["broadcast"].dump(), R"({"c0":"n","c1":"mn"})");
  // Unfused: add reads acc (4 KiB) and v (64 B), writes 4 KiB; mul reads 4 KiB twice and
  // writes 4 KiB. Fused: v and r are still read; D is written once instead of acc.
  EXPECT_EQ(e["saved_bytes"], (4096 + 64 + 4096) + (4096 + 4096 + 4096) - 64 - 4096);
}

TEST(PlanJson, TwoGemmsDoNotShareATail) {
  // add(mm, mm_1): each GEMM sees the other's output as an external operand; the tail
  // goes to the first pattern only.
  graph::Graph g = graph::parse_text(R"(graph Model {
  input %x : f32[64,32]{32,1}
  input %w : f32[32,16]{16,1}
  input %w2 : f32[32,16]{16,1}
  %mm : f32[64,16]{16,1} = aten.mm.default(%x, %w)
  %mm_1 : f32[64,16]{16,1} = aten.mm.default(%x, %w2)
  %add : f32[64,16]{16,1} = aten.add.Tensor(%mm, %mm_1)
  output (%add)
})");
  Plan plan = make_plan(g, builtin_rules(), Precision::tf32);
  ASSERT_EQ(plan.patterns.size(), 2u);
  int tails = 0;
  for (const auto& p : plan.patterns) {
    if (p.epilogue) {
      ++tails;
      EXPECT_EQ(p.epilogue->nodes, std::vector<std::string>{"add"});
    } else {
      EXPECT_NE(p.epilogue_stop.find("already belongs to"), std::string::npos) << p.epilogue_stop;
    }
  }
  EXPECT_EQ(tails, 1);
}

TEST(PlanJson, AttentionProblemFollowsDocs03) {
  // minGPT's attention at the shapes of KernelBench level 3 #43 (B=128, T=512, 8 heads of
  // 96), q/k/v read in place from the [B, T, 3C] projection, the merge absorbed.
  graph::Graph g = graph::parse_text(R"(graph Model {
  input %q : f32[128,8,512,96]{1179648,96,2304,1}
  input %k : f32[128,8,512,96]{1179648,96,2304,1}
  input %v : f32[128,8,512,96]{1179648,96,2304,1}
  buffer %b_bias : f32[1,1,1024,1024]{1048576,1048576,1024,1} = "bias" value="tril"
  %kt : f32[128,8,96,512]{1179648,96,1,2304} = aten.transpose.int(%k, -2, -1)
  %matmul : f32[128,8,512,512]{2097152,262144,512,1} = aten.matmul.default(%q, %kt)
  %mul : f32[128,8,512,512]{2097152,262144,512,1} = aten.mul.Tensor(%matmul, 0.10206207261596575)
  %slice_1 : f32[1,1,512,1024]{1048576,1048576,1024,1} = aten.slice.Tensor(%b_bias, 2, 0, 512)
  %slice_2 : f32[1,1,512,512]{1048576,1048576,1024,1} = aten.slice.Tensor(%slice_1, 3, 0, 512)
  %eq : b8[1,1,512,512]{262144,262144,512,1} = aten.eq.Scalar(%slice_2, 0)
  %masked_fill : f32[128,8,512,512]{2097152,262144,512,1} = aten.masked_fill.Scalar(%mul, %eq, -inf)
  %softmax : f32[128,8,512,512]{2097152,262144,512,1} = aten.softmax.int(%masked_fill, -1)
  %matmul_1 : f32[128,8,512,96]{393216,49152,96,1} = aten.matmul.default(%softmax, %v)
  %transpose : f32[128,512,8,96]{393216,96,49152,1} = aten.transpose.int(%matmul_1, 1, 2)
  %contiguous : f32[128,512,8,96]{393216,768,96,1} = aten.contiguous.default(%transpose)
  %view : f32[128,512,768]{393216,768,1} = aten.view.default(%contiguous, [128, 512, 768])
  output (%view)
})");
  nlohmann::ordered_json j = plan_to_json(make_plan(g, builtin_rules(), Precision::tf32));
  ASSERT_EQ(j["patterns"].size(), 1u);
  const auto& p = j["patterns"][0];
  EXPECT_EQ(p["rule"], "attention");
  EXPECT_EQ(p["output"], "view");
  EXPECT_EQ(p["nodes"].dump(), R"(["kt","matmul","mul","slice_1","slice_2","eq","masked_fill","softmax",)"
                               R"("matmul_1","transpose","contiguous","view"])");
  EXPECT_EQ(j["rejected"].size(), 0u);
  EXPECT_EQ(j["fallback"].size(), 0u);
  EXPECT_EQ(p["operands"].dump(), R"({"q":"q","k":"k","v":"v"})");
  EXPECT_EQ(p["problem"].dump(),
            R"({"kind":"attention","batch":128,"heads":8,"kv_heads":8,"seq_q":512,"seq_k":512,)"
            R"("head_dim":96,"dtype":"float32","scale":0.10206207261596575,"mask":"causal",)"
            R"("strides":{"q":[1179648,96,2304],"k":[1179648,96,2304],"v":[1179648,96,2304],)"
            R"("o":[393216,96,768],"mask":null},"output_layout":"bthd","form":"matmul",)"
            R"("causal_buffer":"b_bias"})");
  // Causal: 4 * B * H * D * (T * (T + 1) / 2) FLOPs; Q, K, V read and O written once.
  EXPECT_EQ(p["estimate"]["flops"], int64_t{4} * 128 * 8 * 96 * (512 * 513 / 2));
  EXPECT_EQ(p["estimate"]["bytes"], int64_t{4} * 128 * 8 * 512 * 96 * 4);
}

}  // namespace
}  // namespace fact::discover
