// JSON reader/writer details of docs/02: float vs integer constants, non-finite floats,
// enum constants, kwargs order, and error messages with a JSON path.
#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/json.h"
#include "graph/text.h"

namespace fact::graph {
namespace {

using json = nlohmann::ordered_json;

std::string graph_with_node(const std::string& node) {
  return R"({"format": "fact.graph", "version": 1, "name": "G",
    "inputs": [{"name": "x", "kind": "user_input",
                "type": {"dtype": "float32", "shape": [2], "strides": [1]}}],
    "params": [], "nodes": [)" + node + R"(], "outputs": [{"ref": "x"}]})";
}

std::string read_error(const std::string& text) {
  try {
    graph_from_json_string(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GraphJson, FloatsStayFloatsAndIntegersStayIntegers) {
  Graph g = graph_from_json_string(graph_with_node(
      R"({"name": "n", "op": "aten.foo.default", "args": [2.0, 2, {"float": "-inf"}],
          "kwargs": {"z": 1, "a": 0.5}, "outputs": []})"));
  const Node& n = g.nodes.at(0);
  EXPECT_TRUE(n.args[0].is<double>());
  EXPECT_TRUE(n.args[1].is<int64_t>());
  EXPECT_EQ(*n.args[2].get_if<double>(), -std::numeric_limits<double>::infinity());
  ASSERT_EQ(n.kwargs.size(), 2u);
  EXPECT_EQ(n.kwargs[0].first, "z");  // file order, not sorted
  EXPECT_EQ(n.kwargs[1].first, "a");

  json back = graph_to_json(g)["nodes"][0];
  EXPECT_EQ(back["args"].dump(), R"([2.0,2,{"float":"-inf"}])");
  EXPECT_EQ(back["kwargs"].dump(), R"({"z":1,"a":0.5})");
}

TEST(GraphJson, EnumConstantsRoundTrip) {
  for (const char* arg : {R"({"dtype":"bfloat16"})", R"({"device":"cuda:0"})",
                          R"({"layout":"strided"})", R"({"memory_format":"channels_last"})",
                          R"({"float":"nan"})", R"({"ref":"x"})", R"([1,[true,null],"s"])"}) {
    Arg a = arg_from_json(json::parse(arg), "arg");
    EXPECT_EQ(arg_to_json(a).dump(), arg);
  }
}

TEST(GraphJson, ErrorsNameTheJsonPath) {
  EXPECT_EQ(read_error(graph_with_node(
                R"({"name": "n", "op": "aten.relu.default", "args": [{"ref": "x"}], "kwargs": {},
                    "outputs": [{"name": "n", "type": {"dtype": "float8", "shape": [2], "strides": [1]}}]})")),
            "nodes[0].outputs[0].type.dtype: unknown dtype 'float8'");
  EXPECT_EQ(read_error(graph_with_node(
                R"({"name": "n", "op": "aten.relu.default", "args": [{"ref": "y"}], "kwargs": {},
                    "outputs": []})")),
            "node 'n' uses 'y', which is not defined before it");
  EXPECT_EQ(read_error(graph_with_node(
                R"({"name": "n", "op": "aten.relu.default", "args": [{"float": "big"}], "kwargs": {},
                    "outputs": []})")),
            "nodes[0].args[0].float: expected \"inf\", \"-inf\" or \"nan\", got \"big\"");
  EXPECT_EQ(read_error(graph_with_node(
                R"({"name": "n", "op": "aten.relu.default", "args": [], "kwargs": {},
                    "outputs": [{"name": "m", "type": null}]})")),
            "node 'n': output 0 is named 'm', expected 'n'");
  EXPECT_EQ(read_error(R"({"format": "fact.graph", "version": 1, "name": "g", "inputs": [],
      "params": [{"name": "b", "kind": "buffer", "target": "b", "value": 1,
                  "type": {"dtype": "bool", "shape": [2], "strides": [1]}}],
      "nodes": [], "outputs": []})"),
            "params[0].value: expected a value class name (a non-empty string)");
  EXPECT_EQ(read_error(R"({"format": "fact.graph", "version": 3})"),
            "version: unsupported version 3 (this build reads 1 and 2)");
  EXPECT_EQ(read_error(R"({"format": "fact.plan", "version": 1})"), "format: expected \"fact.graph\"");
}

TEST(GraphJson, DuplicateKeysAreErrorsNotTheLastValue) {
  EXPECT_EQ(read_error(R"({"format": "fact.graph", "version": 1, "version": 2})"),
            "graph JSON: duplicate key \"version\" in one object");
  EXPECT_EQ(read_error(graph_with_node(
                R"({"name": "n", "op": "aten.relu.default", "args": [{"ref": "x"}], "kwargs": {},
                    "outputs": [{"name": "n", "type": {"dtype": "float32", "dtype": "float16",
                                                       "shape": [2], "strides": [1]}}]})")),
            "graph JSON: duplicate key \"dtype\" in one object (inside \"type\")");
  // The same key in two different objects is fine.
  EXPECT_EQ(read_error(graph_with_node(
                R"({"name": "n", "op": "aten.relu.default", "args": [{"ref": "x"}], "kwargs": {},
                    "outputs": [{"name": "n", "type": {"dtype": "float32", "shape": [2], "strides": [1]}}]})")),
            "(no error)");
}

TEST(GraphJson, ANumberTooLargeForItsTypeIsAnErrorNotAnAbort) {
  // Found by the fuzzers: nlohmann's out_of_range (406) escaped the reader as an exception
  // that was not fact::Error.
  EXPECT_EQ(read_error(R"({"format": "fact.graph", "version": 1E999999})"),
            "graph JSON: [json.exception.out_of_range.406] number overflow parsing '1E999999'");
}

TEST(GraphJson, AKeywordThatTheTextFormCannotReadIsAnError) {
  // Found by fuzz_graph_json: a keyword argument "du:type" was read, but its text could not
  // be read back.
  EXPECT_EQ(read_error(graph_with_node(
                R"({"name": "n", "op": "aten.relu.default", "args": [{"ref": "x"}], "kwargs": {"du:type": 1},
                    "outputs": [{"name": "n", "type": {"dtype": "float32", "shape": [2], "strides": [1]}}]})")),
            "node 'n' has keyword argument 'du:type', which is not a name (a letter or '_', then letters, digits, "
            "'_' and '.', as in dtype)");
}

TEST(GraphJson, AValueNameThatTheTextFormCannotReadIsAnError) {
  // Found by fuzz_graph_json: a buffer named "`_mask" was read, but its text could not be
  // read back ("expected a value name after '%'").
  EXPECT_EQ(read_error(graph_with_node(
                R"({"name": "n`", "op": "aten.relu.default", "args": [{"ref": "x"}], "kwargs": {},
                    "outputs": [{"name": "n`", "type": {"dtype": "float32", "shape": [2], "strides": [1]}}]})")),
            "graph 'G': node 'n`' is not a value name (letters, digits, '_' and '.', as in linear_1)");
}

TEST(GraphJson, AnEmptyOpIsAnError) {
  // An empty op was read, but the text form it prints cannot be read back.
  EXPECT_EQ(read_error(graph_with_node(R"({"name": "n", "op": "", "args": [], "kwargs": {}, "outputs": []})")),
            "node 'n' has an empty op (expected \"aten.<op>.<overload>\")");
}

TEST(GraphJson, AnOpThatTheTextFormCannotReadIsAnError) {
  // Found by fuzz_graph_json: "aten!cat.default" was read, but its text could not be read
  // back (tests/fuzz/corpus/graph_json/op_not_an_op_name.json).
  for (const char* op : {"aten!cat.default", "1aten.mm", "aten mm", ".mm"}) {
    EXPECT_EQ(read_error(graph_with_node(std::string(R"({"name": "n", "op": ")") + op +
                                         R"(", "args": [], "kwargs": {}, "outputs": []})")),
              std::string("node 'n' has op '") + op +
                  "', which is not an op name (a letter or '_', then letters, digits, '_' and '.', as in aten.mm.default)")
        << op;
  }
  EXPECT_TRUE(fact::graph::is_op_name("aten._scaled_dot_product_flash_attention.default"));
}

TEST(GraphJson, StridesBeyondAnyGpuAddressAreErrors) {
  auto with_input = [](const std::string& shape, const std::string& strides) {
    return R"({"format": "fact.graph", "version": 1, "name": "G",
      "inputs": [{"name": "x", "kind": "user_input",
                  "type": {"dtype": "float32", "shape": )" + shape + R"(, "strides": )" + strides + R"(}}],
      "params": [], "nodes": [], "outputs": [{"ref": "x"}]})";
  };
  EXPECT_EQ(read_error(with_input("[4, 2]", "[4611686018427387904, 1]")),
            "value 'x': dimension 0 (size 4, stride 4611686018427387904) spans more than 2^48 elements");
  EXPECT_EQ(read_error(with_input("[2, 2]", "[70368744177664, 1]")),
            "value 'x': spans 70368744177666 elements of 4 bytes, more than 2^48 bytes");
  EXPECT_EQ(read_error(with_input("[2]", "[-1]")), "value 'x': negative stride -1");
  // A size-1 or empty dimension never moves the offset, whatever its stride.
  EXPECT_EQ(read_error(with_input("[1, 2]", "[4611686018427387904, 1]")), "(no error)");
  EXPECT_EQ(read_error(with_input("[0, 2]", "[4611686018427387904, 1]")), "(no error)");
}

TEST(GraphIndex, Lookups) {
  Graph g = graph_from_json_string(graph_with_node(
      R"({"name": "relu", "op": "aten.relu.default", "args": [{"ref": "x"}], "kwargs": {},
          "outputs": [{"name": "relu", "type": {"dtype": "float32", "shape": [2], "strides": [1]}}]},
         {"name": "add", "op": "aten.add.Tensor", "args": [{"ref": "relu"}, {"ref": "x"}], "kwargs": {},
          "outputs": [{"name": "add", "type": {"dtype": "float32", "shape": [2], "strides": [1]}}]})"));
  GraphIndex index(g);
  EXPECT_EQ(index.producer("x"), nullptr);
  EXPECT_EQ(index.producer("add"), &g.nodes[1]);
  EXPECT_EQ(index.placeholder("x"), &g.inputs[0]);
  EXPECT_EQ(index.type("relu").shape, std::vector<int64_t>{2});
  EXPECT_EQ(index.position(g.nodes[1]), 1u);
  EXPECT_EQ(index.users("x"), (std::vector<const Node*>{&g.nodes[0], &g.nodes[1]}));
  EXPECT_THROW(index.type("nope"), Error);
  try {
    index.producer("nope");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "graph 'G' has no value 'nope'");
  }
}

TEST(TensorType, ContiguityAndDistinctElements) {
  TensorType t{DType::f32, {4, 1, 3}, {3, 99, 1}};
  EXPECT_TRUE(t.is_contiguous());  // a size-1 dimension takes any stride
  EXPECT_EQ(t.numel(), 12);
  TensorType expanded{DType::f16, {8, 4, 3}, {0, 3, 1}};
  EXPECT_FALSE(expanded.is_contiguous());
  EXPECT_EQ(expanded.distinct_elements(), 12);
  TensorType transposed{DType::f32, {3, 4}, {1, 3}};
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(contiguous_strides(std::vector<int64_t>{4, 3, 2}), (std::vector<int64_t>{6, 2, 1}));
}

}  // namespace
}  // namespace fact::graph
