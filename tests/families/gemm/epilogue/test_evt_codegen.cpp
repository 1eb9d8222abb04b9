// EVT generation from discovery's expression trees: node types, argument initializers,
// desugaring of hardtanh/clamp/leaky_relu/pow, and what is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "families/gemm/epilogue/evt_codegen.h"
#include "epilogue_tree_util.h"

using namespace fact::realize;
using nlohmann::json;

using fact::test::leaf_acc;
using fact::test::num;
using fact::test::op;

TEST(EvtCodegen, TailASubMulReluNestsComputeNodesOverAccAndScalars) {
  // relu(mul(sub(acc, 2.0), 1.5))
  const auto src = render_evt(op("relu", {op("mul", {op("sub", {leaf_acc(), num(2.0)}), num(1.5)})}), json::object());
  EXPECT_NE(src.declarations.find("using Evt0 = cutlass::epilogue::fusion::Sm90EVT<EvtCompute<cutlass::minus>, EvtAcc, EvtScalar>;"),
            std::string::npos) << src.declarations;
  EXPECT_NE(src.declarations.find("using Evt1 = cutlass::epilogue::fusion::Sm90EVT<EvtCompute<cutlass::multiplies>, Evt0, EvtScalar>;"),
            std::string::npos);
  EXPECT_NE(src.declarations.find("using FusionOp = cutlass::epilogue::fusion::Sm90EVT<EvtRoot<FactRelu>, Evt1>;"),
            std::string::npos);
  // relu keeps NaN, as torch.relu does; only the functors used are defined.
  EXPECT_NE(src.declarations.find("x > 0.0f ? x : (x != x ? x : 0.0f)"), std::string::npos);
  EXPECT_EQ(src.declarations.find("FactMax"), std::string::npos);
  EXPECT_NE(src.declarations.find("kEpiInputMask = 0u, kEpiTensorMask = 0u"), std::string::npos);
  EXPECT_EQ(src.arguments, "  args.epilogue.thread = {{{{}, {{float(2)}}, {}}, {{float(1.5)}}, {}}, {}};\n");
}

TEST(EvtCodegen, TranscendentalsUseAccurateFp32Math) {
  // gelu's argument (mish of acc) is unbounded above: CUDA's erff (see ProvenRanges... below).
  const auto src = render_evt(op("tanh", {op("sigmoid", {op("gelu", {op("mish", {leaf_acc()})})})}), json::object());
  EXPECT_NE(src.declarations.find("tanhf(x)"), std::string::npos);
  EXPECT_NE(src.declarations.find("erff(x * 0.70710678118654752f)"), std::string::npos);
  // sigmoid's reciprocal without an IEEE division (a slow-path call in the epilogue).
  EXPECT_NE(src.declarations.find("__fdividef(1.0f, 1.0f + expf(-x))"), std::string::npos);
  EXPECT_NE(src.declarations.find("x * tanhf(log1pf(expf(x)))"), std::string::npos);
  EXPECT_EQ(src.declarations.find("tanh.approx"), std::string::npos);
  EXPECT_EQ(src.declarations.find("cutlass::epilogue::thread::"), std::string::npos);
  const auto e = render_evt(op("exp", {leaf_acc()}), json::object());
  EXPECT_NE(e.declarations.find("struct FactExp"), std::string::npos);
  EXPECT_NE(e.declarations.find("return expf(x);"), std::string::npos);
  EXPECT_EQ(e.declarations.find("__expf"), std::string::npos);
}

TEST(EvtCodegen, ProvenRangesDropNoOpClampsAndBoundErf) {
  // Tail (h): hardtanh(gelu(tanh(silu(acc + bias + c0))), -1, 1). tanh bounds gelu's argument
  // to [-0.27, 1], so gelu lies in [-0.11, 0.85]: hardtanh(-1, 1) does nothing, and erf's
  // argument stays within |z| <= 0.71.
  const json x = op("add", {op("add", {leaf_acc(), json{{"input", "bias"}}}), json{{"input", "c0"}}});
  const json h = op("hardtanh", {op("gelu", {op("tanh", {op("silu", {x})})}), num(-1.0), num(1.0)});
  const auto src = render_evt(h, json{{"c0", "n"}});
  EXPECT_NE(src.declarations.find("using FusionOp = cutlass::epilogue::fusion::Sm90EVT<EvtRoot<FactGeluBounded>, Evt3>;"),
            std::string::npos) << src.declarations;
  EXPECT_NE(src.declarations.find("fact_erf_bounded(x * 0.70710678118654752f)"), std::string::npos);
  EXPECT_NE(src.declarations.find("#ifndef FACT_BOUNDED_MATH_H"), std::string::npos);  // the function's text
  EXPECT_NE(src.declarations.find("// By range (src/realize/evt_ranges.cpp): hardtanh: the argument lies in"),
            std::string::npos);
  EXPECT_EQ(src.declarations.find("FactMax"), std::string::npos);
  EXPECT_EQ(src.declarations.find("FactMin"), std::string::npos);
  EXPECT_EQ(src.declarations.find("erff("), std::string::npos);
  // The argument initializer follows the smaller tree: gelu over tanh over silu over the adds.
  EXPECT_EQ(src.arguments,
            "  args.epilogue.thread = {{{{{{}, {static_cast<const ElementEpi*>(p.bias)}, {}}, "
            "{static_cast<const ElementEpi*>(p.epi[0])}, {}}, {}}, {}}, {}};\n");
  // Near miss: without the tanh, gelu's argument (silu >= -0.28) is unbounded above: erff
  // stays, and so does hardtanh's upper bound; its lower bound goes (gelu >= -0.11 there).
  const auto open = render_evt(op("hardtanh", {op("gelu", {op("silu", {x})}), num(-1.0), num(1.0)}), json{{"c0", "n"}});
  EXPECT_NE(open.declarations.find("erff(x * 0.70710678118654752f)"), std::string::npos);
  EXPECT_NE(open.declarations.find("using FusionOp = cutlass::epilogue::fusion::Sm90EVT<EvtRoot<FactMin>, Evt3, EvtScalar>;"),
            std::string::npos) << open.declarations;
  EXPECT_EQ(open.declarations.find("FactMax"), std::string::npos);
  EXPECT_EQ(open.declarations.find("FACT_BOUNDED_MATH_H"), std::string::npos);
  EXPECT_NE(open.declarations.find("its lower bound is dropped"), std::string::npos);
}

TEST(EvtCodegen, ATailThatFoldsToALeafKeepsItsOps) {
  // clamp(0.5, 0, 1) of no acc at all: the rewrite would leave a bare scalar (no FusionOp).
  const auto src = render_evt(op("clamp", {num(0.5), num(0.0), num(1.0)}), json::object());
  EXPECT_NE(src.declarations.find("using FusionOp = "), std::string::npos) << src.declarations;
  EXPECT_EQ(src.declarations.find("By range"), std::string::npos);
}

TEST(EvtCodegen, HardtanhLeakyReluAndCubeBecomePrimitiveNodes) {
  const auto h = render_evt(op("hardtanh", {leaf_acc(), num(-2.0), num(2.0)}), json::object());
  EXPECT_NE(h.declarations.find("struct FactMax"), std::string::npos);
  EXPECT_NE(h.declarations.find("Sm90EVT<EvtCompute<FactMax>, EvtAcc, EvtScalar>"), std::string::npos);
  EXPECT_NE(h.declarations.find("using FusionOp = cutlass::epilogue::fusion::Sm90EVT<EvtRoot<FactMin>, Evt0, EvtScalar>;"),
            std::string::npos);
  const auto l = render_evt(op("leaky_relu", {leaf_acc(), num(0.1)}), json::object());
  EXPECT_NE(l.declarations.find("EvtRoot<cutlass::plus>"), std::string::npos);
  const auto c = render_evt(op("pow", {leaf_acc(), num(3.0)}), json::object());
  EXPECT_NE(c.declarations.find("Sm90EVT<EvtCompute<cutlass::multiplies>, EvtAcc, EvtAcc>"), std::string::npos);
  // clamp with one bound only: a single max.
  const auto lo = render_evt(json{{"op", "clamp"}, {"args", {leaf_acc(), num(0.0), nullptr}}}, json::object());
  EXPECT_NE(lo.declarations.find("using FusionOp = cutlass::epilogue::fusion::Sm90EVT<EvtRoot<FactMax>, EvtAcc, EvtScalar>;"),
            std::string::npos);
}

TEST(EvtCodegen, InputsReadTheirOwnSlotsByBroadcastKind) {
  // relu(add(add(acc, bias), c0)) * c1 + c2: the GEMM's bias, a vector along N, one along
  // M and a tensor of D's shape.
  const json tree = op("add", {op("mul", {op("relu", {op("add", {op("add", {leaf_acc(), json{{"input", "bias"}}}),
                                                                  json{{"input", "c0"}}})}),
                                          json{{"input", "c1"}}}),
                               json{{"input", "c2"}}});
  const auto src = render_evt(tree, json{{"bias", "n"}, {"c0", "n"}, {"c1", "m"}, {"c2", "mn"}});
  EXPECT_NE(src.arguments.find("{static_cast<const ElementEpi*>(p.bias)}"), std::string::npos) << src.arguments;
  EXPECT_NE(src.arguments.find("{static_cast<const ElementEpi*>(p.epi[0])}"), std::string::npos);
  EXPECT_NE(src.arguments.find("{static_cast<const ElementEpi*>(p.epi[1])}"), std::string::npos);
  EXPECT_NE(src.arguments.find("aux_stride(p.epi_ld[2], p.epi_batch_stride[2])"), std::string::npos);
  EXPECT_NE(src.declarations.find("kEpiInputMask = 7u, kEpiTensorMask = 4u"), std::string::npos);
  EXPECT_NE(src.declarations.find("Sm90EVT<EvtCompute<cutlass::plus>, EvtAcc, EvtRowVector>"), std::string::npos)
      << src.declarations;
  EXPECT_NE(src.declarations.find("Sm90EVT<EvtCompute<cutlass::multiplies>, Evt2, EvtColVector>"), std::string::npos);
  EXPECT_NE(src.declarations.find("Sm90EVT<EvtRoot<cutlass::plus>, Evt3, EvtTensor>"), std::string::npos);
  // Row and column swap in a kernel that computes D^T.
  EXPECT_NE(src.declarations.find("using EvtRowVector = cute::conditional_t<kSwapAB, EvtMVector, EvtNVector>;"),
            std::string::npos);
}

TEST(EvtCodegen, DivisionByANumberIsAMultiplyByItsReciprocal) {
  const auto src = render_evt(op("div", {op("relu", {leaf_acc()}), num(8.0)}), json::object());
  EXPECT_NE(src.declarations.find("Sm90EVT<EvtRoot<cutlass::multiplies>, Evt0, EvtScalar>"), std::string::npos)
      << src.declarations;
  EXPECT_NE(src.arguments.find("{{float(0.125)}}"), std::string::npos) << src.arguments;
  EXPECT_EQ(src.declarations.find("cutlass::divides"), std::string::npos);
  // Dividing by a tensor stays a division.
  const auto t = render_evt(op("div", {leaf_acc(), json{{"input", "c0"}}}), json{{"c0", "n"}});
  EXPECT_NE(t.declarations.find("cutlass::divides"), std::string::npos);
}

TEST(EvtCodegen, RefusesWhatItCannotGenerate) {
  EXPECT_THROW(render_evt(op("pow", {leaf_acc(), num(2.5)}), json::object()), fact::Error);
  EXPECT_THROW(render_evt(op("softmax", {leaf_acc()}), json::object()), fact::Error);
  EXPECT_THROW(render_evt(op("add", {leaf_acc(), json{{"input", "c0"}}}), json{{"c0", "scalar"}}), fact::Error);
  EXPECT_THROW(render_evt(op("add", {leaf_acc(), json{{"input", "c4"}}}), json{{"c4", "n"}}), fact::Error);
  EXPECT_THROW(render_evt(op("add", {leaf_acc(), json{{"input", "c0"}}}), json::object()), fact::Error);
  EXPECT_THROW(render_evt(leaf_acc(), json::object()), fact::Error);
}
