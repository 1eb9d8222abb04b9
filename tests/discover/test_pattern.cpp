// The pattern language (src/discover/pattern.h): operands in order and swapped, captures
// bound consistently across the DAG, numbers within tolerance, alternatives with
// backtracking, keyword arguments, single use.
#include <gtest/gtest.h>

#include <cmath>

#include "discover/pattern.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

// A graph whose nodes read %x (f32[8,4]) and %y; `body` is the node lines.
graph::Graph graph_of(const std::string& body, const std::string& out) {
  return graph::parse_text("graph G {\n  input %x : f32[8,4]{4,1}\n  input %y : f32[8,4]{4,1}\n" + body +
                           "  output (" + out + ")\n}\n");
}

const graph::Node& node(const graph::GraphIndex& g, const std::string& value) { return *g.producer(value); }

PatternExpr swish(bool commutative) {
  PatternExpr p = op({"aten.mul.Tensor"}, {capture("x"), op({"aten.sigmoid.default"}, {capture("x")})});
  return commutative ? p.commutative() : p;
}

TEST(Pattern, CommutativeOperandsMatchInEitherOrder) {
  const auto g0 = graph_of(
      "  %s : f32[8,4]{4,1} = aten.sigmoid.default(%x)\n"
      "  %m : f32[8,4]{4,1} = aten.mul.Tensor(%s, %x)\n",
      "%m");
  const graph::GraphIndex g(g0);
  EXPECT_FALSE(match_first(g, swish(false), node(g, "m")));
  auto m = match_first(g, swish(true), node(g, "m"));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->values.at("x"), "x");
  ASSERT_EQ(m->nodes.size(), 2u);
  EXPECT_EQ(m->nodes[0]->name, "s");  // graph order, root last
  EXPECT_EQ(m->nodes[1]->name, "m");
}

TEST(Pattern, ACaptureReadTwiceMustBeOneValue) {
  const auto g0 = graph_of(
      "  %s : f32[8,4]{4,1} = aten.sigmoid.default(%y)\n"
      "  %m : f32[8,4]{4,1} = aten.mul.Tensor(%x, %s)\n",
      "%m");
  const graph::GraphIndex g(g0);
  EXPECT_FALSE(match_first(g, swish(true), node(g, "m")));
  // x * x: both operands bind the same value, and the two orders give one match.
  const auto sq0 = graph_of("  %m : f32[8,4]{4,1} = aten.mul.Tensor(%x, %x)\n", "%m");
  const graph::GraphIndex sq(sq0);
  EXPECT_EQ(match_all(sq, op({"aten.mul.Tensor"}, {capture("a"), capture("a")}).commutative(), node(sq, "m")).size(), 1u);
  EXPECT_EQ(match_all(sq, op({"aten.mul.Tensor"}, {capture("a"), capture("b")}).commutative(), node(sq, "m")).size(), 1u);
}

TEST(Pattern, NumbersMatchWithinTheirToleranceAndBind) {
  const auto g0 = graph_of(
      "  %a : f32[8,4]{4,1} = aten.mul.Tensor(%x, 0.7978846)\n"
      "  %b : f32[8,4]{4,1} = aten.mul.Tensor(%x, 0.8)\n"
      "  %c : f32[8,4]{4,1} = aten.pow.Tensor_Scalar(%x, 3)\n",
      "%a, %b, %c");
  const graph::GraphIndex g(g0);
  const PatternExpr scaled = op({"aten.mul.Tensor"}, {capture("x"), number(std::sqrt(2.0 / M_PI))});
  EXPECT_TRUE(match_first(g, scaled, node(g, "a")));   // 7 significant digits
  EXPECT_FALSE(match_first(g, scaled, node(g, "b")));
  auto m = match_first(g, op({"aten.mul.Tensor"}, {capture("x"), number_capture("s")}), node(g, "b"));
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->numbers.at("s"), 0.8);
  // An integer argument is a number too.
  EXPECT_TRUE(match_first(g, op({"aten.pow.Tensor_Scalar"}, {capture("x"), number(3.0)}), node(g, "c")));
  // A tensor where a number is wanted, and a number where a tensor is wanted, do not match.
  EXPECT_FALSE(match_first(g, op({"aten.mul.Tensor"}, {number(0.8), capture("x")}), node(g, "b")));
  EXPECT_FALSE(match_first(g, op({"aten.mul.Tensor"}, {capture("x"), capture("y")}), node(g, "b")));
}

TEST(Pattern, AlternativesBacktrack) {
  // x * x * x as (x * x) * x: the cube is pow(x, 3) or that product.
  const auto g0 = graph_of(
      "  %xx : f32[8,4]{4,1} = aten.mul.Tensor(%x, %x)\n"
      "  %x3 : f32[8,4]{4,1} = aten.mul.Tensor(%x, %xx)\n"
      "  %r : f32[8,4]{4,1} = aten.add.Tensor(%x3, %x)\n",
      "%r");
  const graph::GraphIndex g(g0);
  const PatternExpr x = capture("x");
  const PatternExpr cube = any_of({op({"aten.pow.Tensor_Scalar"}, {x, number(3.0)}),
                               op({"aten.mul.Tensor"}, {op({"aten.mul.Tensor"}, {x, x}), x}).commutative()});
  // The first operand of the add binds x inside the cube; the second must then be that x.
  auto m = match_first(g, op({"aten.add.Tensor"}, {cube, x}), node(g, "r"));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->values.at("x"), "x");
  EXPECT_EQ(m->nodes.size(), 3u);
  // Where the second operand is another value, no alternative can bind x consistently.
  const auto h0 = graph_of(
      "  %xx : f32[8,4]{4,1} = aten.mul.Tensor(%x, %x)\n"
      "  %x3 : f32[8,4]{4,1} = aten.mul.Tensor(%x, %xx)\n"
      "  %r : f32[8,4]{4,1} = aten.add.Tensor(%x3, %y)\n",
      "%r");
  const graph::GraphIndex h(h0);
  EXPECT_FALSE(match_first(h, op({"aten.add.Tensor"}, {cube, x}), node(h, "r")));
}

TEST(Pattern, KeywordArgumentsMustBeAllowedAndPredicatesHold) {
  const auto g0 = graph_of(
      "  %a : f32[8,4]{4,1} = aten.add.Tensor(%x, %y, alpha=2)\n"
      "  %b : f32[8,4]{4,1} = aten.gelu.default(%x, approximate=\"tanh\")\n",
      "%a, %b");
  const graph::GraphIndex g(g0);
  const PatternExpr add = op({"aten.add.Tensor"}, {capture("x"), capture("y")});
  EXPECT_FALSE(match_first(g, add, node(g, "a")));  // alpha scales y: not x + y
  EXPECT_TRUE(match_first(g, add.allowing("alpha"), node(g, "a")));
  const PatternExpr gelu = op({"aten.gelu.default"}, {capture("x")}).allowing("approximate");
  EXPECT_TRUE(match_first(g, gelu, node(g, "b")));
  EXPECT_FALSE(match_first(g, gelu.where([](const graph::Node& n) { return n.kwarg("approximate") == nullptr; }),
                           node(g, "b")));
}

// single_use_violation of the Swish match at %m in x * sigmoid(x), with `more` node lines
// after it and `outputs` as the graph's outputs.
std::string swish_single_use(const std::string& more, const std::string& outputs) {
  const auto g0 = graph_of(
      "  %s : f32[8,4]{4,1} = aten.sigmoid.default(%x)\n"
      "  %m : f32[8,4]{4,1} = aten.mul.Tensor(%x, %s)\n" + more,
      outputs);
  const graph::GraphIndex g(g0);
  auto m = match_first(g, swish(true), node(g, "m"));
  if (!m) return "no match";
  return single_use_violation(g, *m);
}

TEST(Pattern, SingleUseNamesTheOutsideReader) {
  EXPECT_EQ(swish_single_use("  %t : f32[8,4]{4,1} = aten.add.Tensor(%s, %y)\n", "%m, %t"),
            "%s is also read by %t, outside the match");
  EXPECT_EQ(swish_single_use("", "%m, %s"), "%s is a graph output, so it cannot vanish inside the match");
  EXPECT_EQ(swish_single_use("", "%m"), "");  // x itself is a capture, read freely
}

TEST(Pattern, NoneMatchesALeftOutOptionalOperand) {
  const auto g0 = graph::parse_text(
      "graph G {\n  input %x : f32[8,4]{4,1}\n  input %w : f32[2,4]{4,1}\n"
      "  %a : f32[8,2]{2,1} = aten.linear.default(%x, %w, none)\n"
      "  %b : f32[8,2]{2,1} = aten.linear.default(%x, %w, %x)\n  output (%a, %b)\n}\n");
  const graph::GraphIndex g(g0);
  const PatternExpr p = op({"aten.linear.default"}, {capture("x"), capture("w"), none_arg()});
  EXPECT_TRUE(match_first(g, p, *g.producer("a")));
  EXPECT_FALSE(match_first(g, p, *g.producer("b")));
}

}  // namespace
}  // namespace fact::discover
