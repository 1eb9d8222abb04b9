// Size expressions, symbols and specialization of version-2 graphs (graph/symbolic.h).
#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/json.h"
#include "graph/symbolic.h"

namespace fact::graph {
namespace {

using json = nlohmann::ordered_json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// x [B, 64] -> view [B*64] (a size argument) ; B in [2, 4096], seen 8.
json doc() {
  return json::parse(R"({"format": "fact.graph", "version": 2, "name": "G",
    "symbols": {"B": {"min": 2, "max": 4096, "seen": [8], "buckets": null}},
    "inputs": [{"name": "x", "kind": "user_input", "type": {"dtype": "float32", "shape": ["B", 64], "strides": [64, 1]}}],
    "params": [],
    "nodes": [{"name": "view", "op": "aten.view.default", "args": [{"ref": "x"}, [{"sym": "64*B"}]], "kwargs": {},
               "outputs": [{"name": "view", "type": {"dtype": "float32", "shape": ["64*B"], "strides": [1]}}]}],
    "outputs": [{"ref": "view"}]})");
}

TEST(Monomial, ParsesFormatsAndEvaluates) {
  const Monomial m = parse_monomial("T * 512 * B * B", "here");
  EXPECT_EQ(m.coeff, 512);
  EXPECT_EQ(m.powers.at("B"), 2);
  EXPECT_EQ(format_monomial(m), "512*B*B*T");
  EXPECT_EQ(evaluate(m, {{"B", 3}, {"T", 2}}), 512 * 9 * 2);
  EXPECT_EQ(format_monomial(parse_monomial("7", "")), "7");
}

TEST(Monomial, RejectsWhatIsNotAProduct) {
  EXPECT_NE(error_of([] { parse_monomial("B+1", "shape[0]"); }).find("shape[0]: size expression 'B+1'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_monomial("B**2", ""); }).find("empty factor"), std::string::npos);
  EXPECT_NE(error_of([] { evaluate(parse_monomial("2*T", ""), {{"B", 1}}); }).find("no value for symbol 'T'"),
            std::string::npos);
  EXPECT_NE(error_of([] { evaluate(parse_monomial("B*B*B", ""), {{"B", int64_t(1) << 30}}); }).find("overflows"),
            std::string::npos);
}

TEST(SymbolicGraph, SpecializesSizesStridesAndArguments) {
  const SymbolicGraph g = symbolic_from_json(doc());
  EXPECT_EQ(g.hints().at("B"), 8);
  const Graph at = specialize(g, {{"B", 5}});
  EXPECT_EQ(at.inputs[0].type.shape, (std::vector<int64_t>{5, 64}));
  EXPECT_EQ(at.nodes[0].outputs[0].type->shape, (std::vector<int64_t>{320}));
  EXPECT_EQ(at.nodes[0].args[1], Arg(Arg::List{Arg(int64_t{320})}));
  EXPECT_NE(error_of([&] { specialize(g, {{"B", 5000}}); }).find("B=5000 is outside its range [2, 4096]"),
            std::string::npos);
}

TEST(SymbolicGraph, ErrorsNameThePath) {
  json j = doc();
  j["nodes"][0]["outputs"][0]["type"]["shape"][0] = "64*C";
  EXPECT_NE(error_of([&] { symbolic_from_json(j); }).find("nodes[0].outputs[0].type.shape[0]: symbol 'C' is not declared"),
            std::string::npos);
  j = doc();
  j["symbols"]["B"]["seen"] = json::array({1});
  EXPECT_NE(error_of([&] { symbolic_from_json(j); }).find("symbols.B.seen[0]: 1 is outside"), std::string::npos);
  j = doc();
  j["symbols"]["B"]["buckets"] = json::array({64, 16});
  EXPECT_NE(error_of([&] { symbolic_from_json(j); }).find("increase strictly"), std::string::npos);
  // A size past 2^48 (no tensor dimension on a GPU has one; bucket bounds double past it).
  j = doc();
  j["symbols"]["B"]["bound"] = int64_t(9223372036854775807);
  EXPECT_NE(error_of([&] { symbolic_from_json(j); }).find("symbols.B.bound: expected an integer from 1 to 2^48"),
            std::string::npos);
}

TEST(SymbolicGraph, StaticReaderTakesVersionOneAndTwoButNotSymbols) {
  EXPECT_NE(error_of([] { graph_from_json(doc()); }).find("symbols: the graph has symbolic sizes"), std::string::npos);
  json j = doc();
  j.erase("symbols");
  j["inputs"][0]["type"]["shape"][0] = 8;
  j["nodes"][0]["args"][1][0] = 512;
  j["nodes"][0]["outputs"][0]["type"]["shape"][0] = 512;
  EXPECT_EQ(graph_from_json(j).name, "G");  // version 2 without symbols is a static graph
  j["version"] = 3;
  EXPECT_NE(error_of([&] { graph_from_json(j); }).find("unsupported version 3"), std::string::npos);
}

TEST(Buckets, PowersOfTwoFromTheSeenSizeToTheBound) {
  Symbol s{"B", 2, 4096, {8}, {}, std::nullopt};
  EXPECT_EQ(bucket_bounds(s), (std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}));
  s.max = 1000;
  s.seen = {5, 40};
  EXPECT_EQ(bucket_bounds(s), (std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512, 1000}));
  s.max = std::nullopt;
  s.bound = 64;
  EXPECT_EQ(bucket_bounds(s), (std::vector<int64_t>{8, 16, 32, 64}));
  s.buckets = {16, 256};
  EXPECT_EQ(bucket_bounds(s), (std::vector<int64_t>{16, 256}));
}

TEST(SymbolValues, ParsesTheAtOption) {
  EXPECT_EQ(parse_symbol_values("B=8,T=128"), (SymbolValues{{"B", 8}, {"T", 128}}));
  EXPECT_NE(error_of([] { parse_symbol_values("B:8"); }).find("NAME=SIZE"), std::string::npos);
}

}  // namespace
}  // namespace fact::graph
