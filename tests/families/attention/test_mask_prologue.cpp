// The attention rule's mask prologue (rule.cpp, peel_mask_prologue): an additive mask built
// as (r - m) * c (aten.rsub.Scalar then aten.mul by a number, Hugging Face's key-padding
// mask) is taken into the pattern, the mask operand becoming m and the problem recording
// mask_rsub = r and mask_scale = c; any other spelling leaves the ops outside.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "discover/plan.h"
#include "families/family.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

// q, k, v [2, 2, 16, 32]; a key-padding mask %m [2, 1, 1, 16] turned into the additive term
// %term by `rsub` and `mul` (graph text lines), added to the scaled scores.
std::string padding_graph(const std::string& rsub, const std::string& mul, const std::string& extra_inputs = "",
                          const std::string& outputs = "%matmul_1") {
  return fmt::format(R"(graph Pad {{
  input %q : f32[2,2,16,32]{{1024,512,32,1}}
  input %k : f32[2,2,16,32]{{1024,512,32,1}}
  input %v : f32[2,2,16,32]{{1024,512,32,1}}
  input %m : f32[2,1,1,16]{{16,16,16,1}}
  {}
  %rsub : f32[2,1,1,16]{{16,16,16,1}} = {}
  %term : f32[2,1,1,16]{{16,16,16,1}} = {}
  %kt : f32[2,2,32,16]{{1024,512,1,32}} = aten.transpose.int(%k, -2, -1)
  %matmul : f32[2,2,16,16]{{512,256,16,1}} = aten.matmul.default(%q, %kt)
  %div : f32[2,2,16,16]{{512,256,16,1}} = aten.div.Tensor(%matmul, 5.656854249492381)
  %add : f32[2,2,16,16]{{512,256,16,1}} = aten.add.Tensor(%div, %term)
  %softmax : f32[2,2,16,16]{{512,256,16,1}} = aten.softmax.int(%add, -1)
  %matmul_1 : f32[2,2,16,32]{{1024,512,32,1}} = aten.matmul.default(%softmax, %v)
  output ({})
}})",
                     extra_inputs, rsub, mul, outputs);
}

// The one attention pattern of `text`'s plan (tf32 policy).
nlohmann::ordered_json attention_pattern(const std::string& text) {
  graph::Graph g = graph::parse_text(text, "pad");
  const nlohmann::ordered_json j = plan_to_json(make_plan(g, builtin_rules(), Precision::tf32));
  for (const auto& p : j["patterns"])
    if (p["rule"] == "attention") return p;
  ADD_FAILURE() << "no attention pattern in " << j.dump();
  return {};
}

TEST(AttentionMaskPrologue, RsubThenMulByNumbersJoinsThePattern) {
  const auto p = attention_pattern(padding_graph("aten.rsub.Scalar(%m, 1.0)",
                                                 "aten.mul.Tensor(%rsub, -3.4028234663852886e+38)"));
  EXPECT_EQ(p["operands"]["mask"], "m");
  EXPECT_EQ(p["nodes"].dump(), R"(["rsub","term","kt","matmul","div","add","softmax","matmul_1"])");
  EXPECT_EQ(p["problem"]["mask"], "additive");
  EXPECT_EQ(p["problem"]["mask_rsub"].get<double>(), 1.0);
  EXPECT_EQ(p["problem"]["mask_scale"].get<double>(), -3.4028234663852886e+38);
  EXPECT_EQ(p["problem"]["strides"]["mask"].dump(), "[16,0,0]");
  EXPECT_FALSE(p["problem"].contains("mask_dtype"));
  // The number first (c * (r - m)), another r and c (BERT's original -10000), alpha 1 given.
  const auto q = attention_pattern(padding_graph("aten.rsub.Scalar(%m, 0.5, alpha=1)",
                                                 "aten.mul.Tensor(-10000.0, %rsub)"));
  EXPECT_EQ(q["operands"]["mask"], "m");
  EXPECT_EQ(q["problem"]["mask_rsub"].get<double>(), 0.5);
  EXPECT_EQ(q["problem"]["mask_scale"].get<double>(), -10000.0);
  // The report names the prologue with the mask kind.
  const families::Family* f = families::find_family("attention");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->problem_text(p["problem"]).find("mask:additive (1.0 - M) * -3.4028234663852886e+38 out:bhtd"),
            std::string::npos)
      << f->problem_text(p["problem"]);
}

// The mask operand stays the product %term and neither op joins the pattern.
void expect_outside(const nlohmann::ordered_json& p) {
  EXPECT_EQ(p["operands"]["mask"], "term");
  EXPECT_FALSE(p["problem"].contains("mask_rsub"));
  EXPECT_FALSE(p["problem"].contains("mask_scale"));
  for (const auto& n : p["nodes"]) EXPECT_TRUE(n != "rsub" && n != "term") << p["nodes"].dump();
}

TEST(AttentionMaskPrologue, ATensorFactorIsRefused) {
  expect_outside(attention_pattern(padding_graph("aten.rsub.Scalar(%m, 1.0)", "aten.mul.Tensor(%rsub, %c)",
                                                 "input %c : f32[2,1,1,16]{16,16,16,1}")));
  // A 0-d tensor factor is a tensor too: its value is not in the graph.
  expect_outside(attention_pattern(padding_graph("aten.rsub.Scalar(%m, 1.0)", "aten.mul.Tensor(%rsub, %c)",
                                                 "input %c : f32[]{}")));
}

TEST(AttentionMaskPrologue, OtherSpellingsStayOutside) {
  // A divide (x / c is not x * (1 / c) in fp32), alpha other than 1, an infinite factor.
  expect_outside(attention_pattern(padding_graph("aten.rsub.Scalar(%m, 1.0)", "aten.div.Tensor(%rsub, -10000.0)")));
  expect_outside(attention_pattern(padding_graph("aten.rsub.Scalar(%m, 1.0, alpha=2)",
                                                 "aten.mul.Tensor(%rsub, -10000.0)")));
  expect_outside(attention_pattern(padding_graph("aten.rsub.Scalar(%m, 1.0)", "aten.mul.Tensor(%rsub, -inf)")));
  // rsub's result read elsewhere too (a graph output): the kernel would not produce it.
  expect_outside(attention_pattern(padding_graph("aten.rsub.Scalar(%m, 1.0)", "aten.mul.Tensor(%rsub, -10000.0)",
                                                 "", "%matmul_1, %rsub")));
}

TEST(AttentionMaskPrologue, ADtypeChangeStaysOutside) {
  // rsub of an int64 mask promotes to float32: the kernel reads a mask of Q's dtype.
  const std::string text = padding_graph("aten.rsub.Scalar(%mi, 1.0)", "aten.mul.Tensor(%rsub, -10000.0)",
                                         "input %mi : i64[2,1,1,16]{16,16,16,1}");
  expect_outside(attention_pattern(text));
}

}  // namespace
}  // namespace fact::discover
