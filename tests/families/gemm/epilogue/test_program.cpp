// The float64 epilogue evaluator: each op against PyTorch's definition, and trees that
// discovery captured from graphs evaluated end to end (hand-written NewGELU = gelu_tanh).
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "discover/plan.h"
#include "graph/text.h"
#include "families/gemm/epilogue/program.h"

using namespace fact::realize;
using nlohmann::json;

namespace {

// The epilogue tree discovery finds after the mm of `tail` (graph text lines after %mm).
json tree_of(const std::string& inputs, const std::string& tail, const std::string& out) {
  const std::string text = "graph T {\n  input %x : f32[8,4]{4,1}\n  input %w : f32[4,4]{4,1}\n" + inputs +
                           "  %mm : f32[8,4]{4,1} = aten.mm.default(%x, %w)\n" + tail + "  output (%" + out + ")\n}\n";
  auto plan = fact::discover::make_plan(fact::graph::parse_text(text), fact::discover::builtin_rules(),
                                        fact::Precision::tf32);
  EXPECT_TRUE(plan.patterns.at(0).epilogue.has_value()) << plan.patterns.at(0).epilogue_stop;
  return plan.patterns.at(0).epilogue->tree;
}

double eval(const json& tree, double acc, double c0 = 0) {
  const double inputs[1] = {c0};
  return eval_epilogue(compile_epilogue(tree), acc, inputs);
}

const std::string T = " : f32[8,4]{4,1} = ";

// epilogue_error_bound at acc, with the tail's value and peak there as the kernels compute
// them first.
double bound_at(const EpilogueProgram& prog, double acc, double delta, double out_unit) {
  const double in[4] = {0, 0, 0, 0};
  double peak = 0;
  const double r = eval_epilogue<double>(prog, acc, in, nullptr, &peak);
  return epilogue_error_bound(prog, acc, r, peak, in, delta, out_unit);
}

}  // namespace

TEST(EpilogueProgram, HandWrittenNewGeluEqualsTheTanhGelu) {
  const json t = tree_of("",
      "  %mul" + T + "aten.mul.Tensor(%mm, 0.5)\n  %pow" + T + "aten.pow.Tensor_Scalar(%mm, 3.0)\n"
      "  %mul_1" + T + "aten.mul.Tensor(%pow, 0.044715)\n  %add" + T + "aten.add.Tensor(%mm, %mul_1)\n"
      "  %mul_2" + T + "aten.mul.Tensor(%add, 0.7978845608028654)\n  %tanh" + T + "aten.tanh.default(%mul_2)\n"
      "  %add_1" + T + "aten.add.Tensor(%tanh, 1.0)\n  %mul_3" + T + "aten.mul.Tensor(%mul, %add_1)\n", "mul_3");
  const json gelu_tanh{{"op", "gelu_tanh"}, {"args", {{{"acc", true}}}}};
  for (double x : {-3.0, -0.5, 0.0, 0.25, 1.0, 4.0}) EXPECT_NEAR(eval(t, x), eval(gelu_tanh, x), 1e-15) << x;
  EXPECT_NEAR(eval(gelu_tanh, 1.0), 0.8411919906082768, 1e-15);  // torch: F.gelu(1., 'tanh')
}

TEST(EpilogueProgram, TailsAToIAsWritten) {
  // (a) relu((x - 2) * 1.5)
  const json a = tree_of("", "  %sub" + T + "aten.sub.Tensor(%mm, 2.0)\n  %m" + T + "aten.mul.Tensor(%sub, 1.5)\n"
                             "  %r" + T + "aten.relu.default(%m)\n", "r");
  EXPECT_DOUBLE_EQ(eval(a, 5.0), 4.5);
  EXPECT_DOUBLE_EQ(eval(a, 1.0), 0.0);
  // (d) relu(x + b) with a vector input
  const json d = tree_of("  input %b : f32[4]{1}\n", "  %add" + T + "aten.add.Tensor(%mm, %b)\n"
                         "  %r" + T + "aten.relu.default(%add)\n", "r");
  EXPECT_DOUBLE_EQ(eval(d, 1.0, -3.0), 0.0);
  EXPECT_DOUBLE_EQ(eval(d, 1.0, 0.5), 1.5);
  // (e) gelu(x / 10), erf form: torch F.gelu(0.5) = 0.34573123063700656
  const json e = tree_of("", "  %d" + T + "aten.div.Tensor(%mm, 10.0)\n  %g" + T + "aten.gelu.default(%d)\n", "g");
  EXPECT_NEAR(eval(e, 5.0), 0.34573123063700656, 1e-15);
  // (f) gelu(hardtanh(0.5 x, -2, 2))
  const json f = tree_of("", "  %m" + T + "aten.mul.Tensor(%mm, 0.5)\n  %h" + T + "aten.hardtanh.default(%m, -2.0, 2.0)\n"
                             "  %g" + T + "aten.gelu.default(%h)\n", "g");
  EXPECT_NEAR(eval(f, 100.0), 2.0 * 0.5 * (1.0 + std::erf(2.0 / std::sqrt(2.0))), 1e-15);
  // (b) leaky_relu(2x, 0.1)
  const json b = tree_of("", "  %m" + T + "aten.mul.Tensor(%mm, 2.0)\n  %l" + T + "aten.leaky_relu.default(%m, 0.1)\n", "l");
  EXPECT_DOUBLE_EQ(eval(b, -1.0), -0.2);
  // (i) sigmoid(x) * 2 + x
  const json i = tree_of("", "  %s" + T + "aten.sigmoid.default(%mm)\n  %m" + T + "aten.mul.Tensor(%s, 2.0)\n"
                             "  %a" + T + "aten.add.Tensor(%m, %mm)\n", "a");
  EXPECT_NEAR(eval(i, 0.0), 1.0, 1e-15);
  EXPECT_NEAR(eval(i, 2.0), 2.0 / (1.0 + std::exp(-2.0)) + 2.0, 1e-15);
}

TEST(EpilogueProgram, NanPropagatesThroughClampAndRelu) {
  const json clamp{{"op", "clamp"}, {"args", {{{"acc", true}}, {{"scalar", -1.0}}, {{"scalar", 1.0}}}}};
  const json relu{{"op", "relu"}, {"args", {{{"acc", true}}}}};
  EXPECT_TRUE(std::isnan(eval(clamp, NAN)));
  EXPECT_TRUE(std::isnan(eval(relu, NAN)));
  EXPECT_DOUBLE_EQ(eval(clamp, 7.0), 1.0);
  const json mish{{"op", "mish"}, {"args", {{{"acc", true}}}}};
  EXPECT_NEAR(eval(mish, 1.0), 0.8650983882673103, 1e-15);  // torch: F.mish(1.)
}

TEST(EpilogueProgram, MalformedTreesAreNamed) {
  EXPECT_THROW(compile_epilogue(json{{"op", "cosh"}, {"args", {{{"acc", true}}}}}), fact::Error);
  EXPECT_THROW(compile_epilogue(json{{"input", "x7"}}), fact::Error);
  json deep{{"acc", true}};
  for (int k = 0; k < 40; ++k) deep = json{{"op", "add"}, {"args", {{{"scalar", 1.0}}, deep}}};
  EXPECT_THROW(compile_epilogue(deep), fact::Error);  // > 64 steps
}

TEST(EpilogueProgram, BranchSidesRecordWhichWayEachBreakpointWent) {
  // relu(mul(sub(acc, 2.0), 1.5)): acc, 2.0, sub, 1.5, mul, relu -> relu is step 5.
  const auto prog = compile_epilogue(json::parse(
      R"({"op":"relu","args":[{"op":"mul","args":[{"op":"sub","args":[{"acc":true},{"scalar":2.0}]},{"scalar":1.5}]}]})"));
  const double in[4] = {0, 0, 0, 0};
  uint32_t sides[2 * EpilogueProgram::kMaxInstr / 32] = {};
  eval_epilogue<double>(prog, 0.5, in, sides);  // (0.5 - 2) * 1.5 < 0: cut
  EXPECT_EQ(sides[0], 1u << 11);
  eval_epilogue<double>(prog, 3.0, in, sides);  // passes through
  EXPECT_EQ(sides[0], (1u << 11) | (1u << 10));
  // hardtanh(acc, -1, 1): clamp_lo at step 1, clamp_hi at step 2.
  const auto ht = compile_epilogue(json::parse(R"({"op":"hardtanh","args":[{"acc":true},{"scalar":-1.0},{"scalar":1.0}]})"));
  uint32_t s2[2 * EpilogueProgram::kMaxInstr / 32] = {};
  eval_epilogue<double>(ht, 5.0, in, s2);  // above both bounds: lo passes, hi cuts
  EXPECT_EQ(s2[0], (1u << 2) | (1u << 5));
}

TEST(EpilogueProgram, ErrorBoundFollowsTheTailsSlope) {
  const double in[4] = {0, 0, 0, 0};
  const auto tanh_prog = compile_epilogue(json::parse(R"({"op":"tanh","args":[{"acc":true}]})"));
  // Near 0 tanh has slope 1: an acc error of 1e-3 may move the output by 1e-3.
  EXPECT_NEAR(bound_at(tanh_prog, 0.0, 1e-3, 0.0), 1e-3, 1e-6);
  // Saturated, the same acc error barely moves it: the bound shrinks with it (a kernel
  // off by 1e-3 there is wrong).
  EXPECT_LT(bound_at(tanh_prog, 20.0, 1e-3, 0.0), 1e-4);
  // A scale multiplies it: (acc - 2) * 1.5.
  const auto lin = compile_epilogue(json::parse(
      R"({"op":"mul","args":[{"op":"sub","args":[{"acc":true},{"scalar":2.0}]},{"scalar":1.5}]})"));
  EXPECT_NEAR(bound_at(lin, 10.0, 1e-2, 0.0), 1.5e-2, 2e-4);  // + 64 ulps of 12, 10 and 12
  // The float32 evaluation term never lets a constant-zero output pass where ref is 1.
  const auto relu = compile_epilogue(json::parse(R"({"op":"relu","args":[{"acc":true}]})"));
  EXPECT_LT(bound_at(relu, 1.0, 1e-3, 0.0), 0.01);
  // A saturated clamp in bf16: no slope, but the stored value still rounds (2^-8 relative).
  const auto clamp = compile_epilogue(json::parse(R"({"op":"gelu","args":[{"op":"hardtanh","args":[{"acc":true},{"scalar":-2.0},{"scalar":2.0}]}]})"));
  const double gelu2 = 0.5 * 2.0 * (1.0 + std::erf(2.0 / std::sqrt(2.0)));
  EXPECT_GE(bound_at(clamp, 10.0, 1e-2, std::ldexp(1.0, -8)), std::ldexp(1.0, -8) * gelu2);
}

TEST(EpilogueProgram, RangeEnclosesInteriorMinimaTheEndsMiss) {
  // hardtanh(gelu(tanh(sigmoid(x) * x))), x = acc: over [-160, 160] the ends are saturated
  // (0 and gelu(1)), but swish's minimum (-0.278 at -1.28) lies inside. An acc error of 3
  // near x = 1.5 moves the output from 0.68 to -0.106: the bound must allow it.
  const auto prog = compile_epilogue(json::parse(R"({"op":"hardtanh","args":[{"op":"gelu","args":[{"op":"tanh","args":[
      {"op":"mul","args":[{"op":"sigmoid","args":[{"acc":true}]},{"acc":true}]}]}]},{"scalar":-1.0},{"scalar":1.0}]})"));
  const double in[4] = {0, 0, 0, 0};
  const double r = eval_epilogue<double>(prog, 1.5213522704041225, in);
  const double wrong_by_gemm = eval_epilogue<double>(prog, 1.5213522704041225 - 2.8, in);
  EXPECT_NEAR(wrong_by_gemm, -0.106, 2e-3);
  EXPECT_GE(bound_at(prog, 1.5213522704041225, 160.0, 0.0), std::fabs(r - wrong_by_gemm));
  // gelu alone over [-2, 0.5]: its minimum -0.16997 at -0.7518.
  const auto g = compile_epilogue(json::parse(R"({"op":"gelu","args":[{"acc":true}]})"));
  double lo, hi;
  eval_epilogue_range(g, -2.0, 0.5, in, &lo, &hi);
  EXPECT_NEAR(lo, -0.16997120747985495, 1e-9);
  EXPECT_NEAR(hi, eval_epilogue<double>(g, 0.5, in), 1e-15);
  // Far from any feature the enclosure is tight: tanh over [30, 50] is 1 to rounding (64
  // ulps of the value 1, of acc 40 and of the range's largest value 1).
  const auto t = compile_epilogue(json::parse(R"({"op":"tanh","args":[{"acc":true}]})"));
  EXPECT_LT(bound_at(t, 40.0, 10.0, 0.0) - 64.0 * std::ldexp(1.0, -24) * 42.0, 1e-12);
}

TEST(EpilogueProgram, BoundCoversRoundingOfIntermediatesThatCancel) {
  // sigmoid(acc) - 0.5 near acc = 0: fp32 sigmoid rounds in steps of 6e-8 at 0.5, so a
  // correct fp32 tail is off by ~1.5e-8 though the result is ~7e-8 (the 'small' draw).
  const auto prog = compile_epilogue(json::parse(
      R"({"op":"sub","args":[{"op":"sigmoid","args":[{"acc":true}]},{"scalar":0.5}]})"));
  const double acc = 2.759e-07;
  const float in32[4] = {0, 0, 0, 0};
  const double in64[4] = {0, 0, 0, 0};
  const double r = eval_epilogue<double>(prog, acc, in64);
  const float f32 = eval_epilogue<float>(prog, float(acc), in32);
  EXPECT_GT(std::fabs(double(f32) - r), 1e-9);  // the rounding is real
  EXPECT_GE(bound_at(prog, acc, 1e-12, std::ldexp(1.0, -24)), std::fabs(double(f32) - r));
  // The largest intermediate raises the bound to ~64 ulps of 0.5, still far below a wrong 0.5.
  EXPECT_LT(bound_at(prog, acc, 1e-12, std::ldexp(1.0, -24)), 1e-5);
}

TEST(EpilogueProgram, ExpIsEvaluatedAndEnclosedByItsEnds) {
  const auto e = compile_epilogue(json::parse(R"({"op":"exp","args":[{"acc":true}]})"));
  const double in[4] = {0, 0, 0, 0};
  EXPECT_DOUBLE_EQ(eval_epilogue<double>(e, 1.0, in), std::exp(1.0));
  double lo, hi;
  eval_epilogue_range(e, -1.0, 2.0, in, &lo, &hi);
  EXPECT_DOUBLE_EQ(lo, std::exp(-1.0));
  EXPECT_DOUBLE_EQ(hi, std::exp(2.0));
}

TEST(EpilogueProgram, ANegativePowerAcrossZeroIsUnbounded) {
  const auto inv = compile_epilogue(json::parse(R"({"op":"pow","args":[{"acc":true},{"scalar":-1.0}]})"));
  const double in[4] = {0, 0, 0, 0};
  double lo, hi;
  eval_epilogue_range(inv, -9e-4, 1.1e-3, in, &lo, &hi);
  EXPECT_EQ(lo, -INFINITY);
  EXPECT_EQ(hi, INFINITY);
  eval_epilogue_range(inv, 1.0, 2.0, in, &lo, &hi);  // away from the pole: by its ends
  EXPECT_DOUBLE_EQ(lo, 0.5);
  EXPECT_DOUBLE_EQ(hi, 1.0);
}

TEST(EpilogueProgram, BoundCoversFp32RoundingAtTheFarEndOfTheRange) {
  // (g) on the H200: clamp(tanh(clamp(silu(acc) / 2, -1, 1)), -1, 1) at an element whose
  // float64 GEMM value is 3.7e-4 (reference 9.3e-5); the tf32 GEMM put it beyond 2.2, where
  // the tail saturates at tanh(1), which fp32 rounds to 0.761594176 (2e-8 above tanh(1)).
  // The range over acc +- delta reaches tanh(1), so the bound must allow that rounding
  // too, not only 64 ulps of the tiny reference.
  const auto prog = compile_epilogue(json::parse(R"({"op":"clamp","args":[{"op":"tanh","args":[{"op":"clamp","args":[
      {"op":"div","args":[{"op":"silu","args":[{"acc":true}]},{"scalar":2.0}]},{"scalar":-1.0},{"scalar":1.0}]}]},
      {"scalar":-1.0},{"scalar":1.0}]})"));
  const double acc = 0.000373474868, delta = 175.7;
  const double in[4] = {0, 0, 0, 0};
  const double r = eval_epilogue<double>(prog, acc, in);
  EXPECT_NEAR(r, 9.33861523e-05, 1e-12);
  const float kernel = std::tanh(1.0f);
  EXPECT_GT(double(kernel), std::tanh(1.0));  // fp32 rounds up here
  EXPECT_GE(bound_at(prog, acc, delta, std::ldexp(1.0, -24)), std::fabs(double(kernel) - r));
  // Saturated at acc = 500 nothing can move: only rounding (64 ulps of acc and of the
  // value) is allowed, far below a wrong value such as 0.
  EXPECT_LT(bound_at(prog, 500.0, 1.0, std::ldexp(1.0, -24)), 0.01);
}
