// EVT generation from discovery's expression trees: node types, argument initializers,
// desugaring of hardtanh/clamp/leaky_relu/pow, and what is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "realize/evt_codegen.h"

using namespace fact::realize;
using nlohmann::json;

namespace {
json leaf_acc() { return {{"acc", true}}; }
json num(double v) { return {{"scalar", v}}; }
json op(const char* name, std::vector<json> args) { return {{"op", name}, {"args", args}}; }
}  // namespace

TEST(EvtCodegen, TailASubMulReluNestsComputeNodesOverAccAndScalars) {
  // relu(mul(sub(acc, 2.0), 1.5))
  const auto src = render_evt(op("relu", {op("mul", {op("sub", {leaf_acc(), num(2.0)}), num(1.5)})}), json::object());
  EXPECT_NE(src.declarations.find("using Evt0 = cutlass::epilogue::fusion::Sm90EVT<EvtCompute<cutlass::minus>, EvtAcc, EvtScalar>;"),
            std::string::npos) << src.declarations;
  EXPECT_NE(src.declarations.find("using Evt1 = cutlass::epilogue::fusion::Sm90EVT<EvtCompute<cutlass::multiplies>, Evt0, EvtScalar>;"),
            std::string::npos);
  EXPECT_NE(src.declarations.find("using FusionOp = cutlass::epilogue::fusion::Sm90EVT<EvtRoot<cutlass::epilogue::thread::ReLu>, Evt1>;"),
            std::string::npos);
  EXPECT_EQ(src.declarations.find("FactMax"), std::string::npos);  // not needed
  EXPECT_EQ(src.arguments, "  args.epilogue.thread = {{{{}, {{float(2)}}, {}}, {{float(1.5)}}, {}}, {}};\n");
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

TEST(EvtCodegen, AVectorAlongNTravelsAsTheBiasPointer) {
  const auto src = render_evt(op("relu", {op("add", {leaf_acc(), json{{"input", "c0"}}})}), json{{"c0", "n"}});
  EXPECT_NE(src.declarations.find("Sm90RowBroadcast<0, TileShape, ElementD, ElementCompute>"), std::string::npos);
  EXPECT_NE(src.declarations.find("Sm90ColBroadcast<0, TileShape, ElementD, ElementCompute>"), std::string::npos);
  EXPECT_NE(src.arguments.find("static_cast<const ElementD*>(p.bias)"), std::string::npos);
}

TEST(EvtCodegen, RefusesWhatItCannotGenerate) {
  EXPECT_THROW(render_evt(op("mish", {leaf_acc()}), json::object()), fact::Error);
  EXPECT_THROW(render_evt(op("pow", {leaf_acc(), num(2.5)}), json::object()), fact::Error);
  EXPECT_THROW(render_evt(op("add", {leaf_acc(), json{{"input", "c0"}}}), json{{"c0", "mn"}}), fact::Error);
  EXPECT_THROW(render_evt(op("add", {op("add", {leaf_acc(), json{{"input", "c0"}}}), json{{"input", "c1"}}}),
                          json{{"c0", "n"}, {"c1", "n"}}),
               fact::Error);
  EXPECT_THROW(render_evt(leaf_acc(), json::object()), fact::Error);
}
