// Epilogue idioms (src/families/gemm/epilogue/idioms/): the written-out forms become one op of the
// tail's expression; near misses keep the ops as written.
#include <gtest/gtest.h>

#include "families/gemm/epilogue/epilogue.h"
#include "families/gemm/epilogue/idiom.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

// The expression of the tail after %mm = a @ w (f32[16,8]); `body` computes %out from %mm.
std::string tail_expr(const std::string& body) {
  const std::string text =
      "graph G {\n  input %a : f32[16,32]{32,1}\n  input %w : f32[32,8]{8,1}\n"
      "  %mm : f32[16,8]{8,1} = aten.mm.default(%a, %w)\n" +
      body + "  output (%out)\n}\n";
  const graph::Graph g = graph::parse_text(text);
  const graph::GraphIndex index(g);
  EpilogueSearch s = find_epilogue(index, "mm");
  if (!s.epilogue) return "none: " + s.stop;
  EXPECT_EQ(s.epilogue->output, "out");
  return s.epilogue->expr;
}

constexpr const char* kT = " : f32[16,8]{8,1} = ";

std::string line(const std::string& name, const std::string& rhs) { return "  %" + name + kT + rhs + "\n"; }

TEST(Idioms, SwishWrittenEitherWayIsSilu) {
  EXPECT_EQ(tail_expr(line("s", "aten.sigmoid.default(%mm)") + line("out", "aten.mul.Tensor(%mm, %s)")), "silu(acc)");
  EXPECT_EQ(tail_expr(line("s", "aten.sigmoid.default(%mm)") + line("out", "aten.mul.Tensor(%s, %mm)")), "silu(acc)");
  // Over a tail value: x = acc + 1 is read once.
  EXPECT_EQ(tail_expr(line("x", "aten.add.Tensor(%mm, 1.0)") + line("s", "aten.sigmoid.default(%x)") +
                      line("out", "aten.mul.Tensor(%s, %x)")),
            "silu(add(acc, 1.0))");
}

TEST(Idioms, SwishAsADivisionByOnePlusExpIsSilu) {
  EXPECT_EQ(tail_expr(line("n", "aten.neg.default(%mm)") + line("e", "aten.exp.default(%n)") +
                      line("d", "aten.add.Tensor(%e, 1.0)") + line("out", "aten.div.Tensor(%mm, %d)")),
            "silu(acc)");
  // exp alone is an epilogue op: 1 + exp(x) (no negation) stays as written.
  EXPECT_EQ(tail_expr(line("e", "aten.exp.default(%mm)") + line("d", "aten.add.Tensor(%e, 1.0)") +
                      line("out", "aten.div.Tensor(%mm, %d)")),
            "div(acc, add(exp(acc), 1.0))");
}

TEST(Idioms, NewGeluIsGeluTanhInEveryWrittenOrder) {
  const std::string inner = line("p", "aten.pow.Tensor_Scalar(%mm, 3.0)") + line("c", "aten.mul.Tensor(%p, 0.044715)") +
                            line("s", "aten.add.Tensor(%mm, %c)") + line("u", "aten.mul.Tensor(%s, 0.7978845608028654)") +
                            line("t", "aten.tanh.default(%u)") + line("one", "aten.add.Tensor(%t, 1.0)");
  // minGPT: 0.5 * x * (1 + tanh(...)).
  EXPECT_EQ(tail_expr(line("h", "aten.mul.Tensor(%mm, 0.5)") + inner + line("out", "aten.mul.Tensor(%h, %one)")),
            "gelu_tanh(acc)");
  // x * (1 + tanh(...)) * 0.5, x * (0.5 * (1 + tanh(...))), x * (1 + tanh(...)) / 2.
  EXPECT_EQ(tail_expr(inner + line("xo", "aten.mul.Tensor(%mm, %one)") + line("out", "aten.mul.Tensor(%xo, 0.5)")),
            "gelu_tanh(acc)");
  EXPECT_EQ(tail_expr(inner + line("ho", "aten.mul.Tensor(%one, 0.5)") + line("out", "aten.mul.Tensor(%mm, %ho)")),
            "gelu_tanh(acc)");
  EXPECT_EQ(tail_expr(inner + line("xo", "aten.mul.Tensor(%one, %mm)") + line("out", "aten.div.Tensor(%xo, 2.0)")),
            "gelu_tanh(acc)");
  // x^3 written as x * x * x, and sqrt(2/pi) to 7 digits.
  const std::string cubed = line("xx", "aten.mul.Tensor(%mm, %mm)") + line("p", "aten.mul.Tensor(%xx, %mm)") +
                            line("c", "aten.mul.Tensor(%p, 0.044715)") + line("s", "aten.add.Tensor(%c, %mm)") +
                            line("u", "aten.mul.Tensor(%s, 0.7978846)") + line("t", "aten.tanh.default(%u)") +
                            line("one", "aten.add.Tensor(%t, 1.0)");
  EXPECT_EQ(tail_expr(line("h", "aten.mul.Tensor(%mm, 0.5)") + cubed + line("out", "aten.mul.Tensor(%h, %one)")),
            "gelu_tanh(acc)");
}

// %one = erf(%d) + 1 (with `add_kwargs` on the add) after the line that makes %d.
std::string one_plus_erf(const std::string& d_rhs, const std::string& add_kwargs = "") {
  return line("d", d_rhs) + line("e", "aten.erf.default(%d)") + line("one", "aten.add.Tensor(%e, 1.0" + add_kwargs + ")");
}

const std::string kHalfXTimesOne = line("h", "aten.mul.Tensor(%mm, 0.5)") + line("out", "aten.mul.Tensor(%h, %one)");

TEST(Idioms, FastGelusFactoredArgumentIsGeluTanh) {
  // HF FastGELUActivation: 0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x))).
  const std::string fast = line("sa", "aten.mul.Tensor(%mm, 0.7978845608)") + line("b", "aten.mul.Tensor(%mm, 0.044715)") +
                           line("c", "aten.mul.Tensor(%b, %mm)") + line("d", "aten.add.Tensor(%c, 1.0)") +
                           line("u", "aten.mul.Tensor(%sa, %d)") + line("t", "aten.tanh.default(%u)") +
                           line("one", "aten.add.Tensor(%t, 1.0)") + kHalfXTimesOne;
  EXPECT_EQ(tail_expr(fast), "gelu_tanh(acc)");
  // Megatron's gelu_impl: x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x))).
  const std::string megatron = line("sa", "aten.mul.Tensor(%mm, 0.79788456)") + line("xx", "aten.mul.Tensor(%mm, %mm)") +
                               line("c", "aten.mul.Tensor(%xx, 0.044715)") + line("d", "aten.add.Tensor(%c, 1.0)") +
                               line("u", "aten.mul.Tensor(%sa, %d)") + line("t", "aten.tanh.default(%u)") +
                               line("one", "aten.add.Tensor(%t, 1.0)") + kHalfXTimesOne;
  EXPECT_EQ(tail_expr(megatron), "gelu_tanh(acc)");
  // 1 + 0.044715 * x (not x * x) is another function.
  const std::string linear = line("sa", "aten.mul.Tensor(%mm, 0.7978845608)") + line("c", "aten.mul.Tensor(%mm, 0.044715)") +
                             line("d", "aten.add.Tensor(%c, 1.0)") + line("u", "aten.mul.Tensor(%sa, %d)") +
                             line("t", "aten.tanh.default(%u)") + line("one", "aten.add.Tensor(%t, 1.0)") + kHalfXTimesOne;
  EXPECT_NE(tail_expr(linear), "gelu_tanh(acc)");
}

TEST(Idioms, GeluWrittenWithErfIsGelu) {
  EXPECT_EQ(tail_expr(one_plus_erf("aten.div.Tensor(%mm, 1.4142135623730951)") + kHalfXTimesOne), "gelu(acc)");
  EXPECT_EQ(tail_expr(one_plus_erf("aten.mul.Tensor(%mm, 0.7071067811865476)") +
                      line("xo", "aten.mul.Tensor(%mm, %one)") + line("out", "aten.mul.Tensor(%xo, 0.5)")),
            "gelu(acc)");
}

TEST(Idioms, HalfXAsADivisionAndAnAlphaOfOneAreGelu) {
  // x / 2 * (1 + erf(x / sqrt 2)), and 1 + erf(...) written with alpha=1.
  EXPECT_EQ(tail_expr(one_plus_erf("aten.div.Tensor(%mm, 1.4142135623730951)") + line("h", "aten.div.Tensor(%mm, 2.0)") +
                      line("out", "aten.mul.Tensor(%h, %one)")),
            "gelu(acc)");
  EXPECT_EQ(tail_expr(one_plus_erf("aten.div.Tensor(%mm, 1.4142135623730951)", ", alpha=1") + kHalfXTimesOne),
            "gelu(acc)");
}

TEST(Idioms, NearMissesKeepTheOpsAsWritten) {
  // An exponent near 3 is not 3: x ** 3.000002 is NaN for negative x, GELU is not.
  const std::string near3 = line("p", "aten.pow.Tensor_Scalar(%mm, 3.000002)") +
                            line("c", "aten.mul.Tensor(%p, 0.044715)") + line("s", "aten.add.Tensor(%mm, %c)") +
                            line("u", "aten.mul.Tensor(%s, 0.7978845608028654)") + line("t", "aten.tanh.default(%u)") +
                            line("one", "aten.add.Tensor(%t, 1.0)") + kHalfXTimesOne;
  EXPECT_EQ(tail_expr(near3),
            "mul(mul(acc, 0.5), add(tanh(mul(add(acc, mul(pow(acc, 3.000002), 0.044715)), 0.7978845608028654)), 1.0))");
  // A different constant: not GELU (0.8 for sqrt(2/pi)).
  const std::string wrong = line("p", "aten.pow.Tensor_Scalar(%mm, 3.0)") + line("c", "aten.mul.Tensor(%p, 0.044715)") +
                            line("s", "aten.add.Tensor(%mm, %c)") + line("u", "aten.mul.Tensor(%s, 0.8)") +
                            line("t", "aten.tanh.default(%u)") + line("one", "aten.add.Tensor(%t, 1.0)") +
                            line("h", "aten.mul.Tensor(%mm, 0.5)") + line("out", "aten.mul.Tensor(%h, %one)");
  EXPECT_EQ(tail_expr(wrong), "mul(mul(acc, 0.5), add(tanh(mul(add(acc, mul(pow(acc, 3.0), 0.044715)), 0.8)), 1.0))");
  // x * sigmoid(y) with y another value of the tail.
  EXPECT_EQ(tail_expr(line("y", "aten.add.Tensor(%mm, 1.0)") + line("s", "aten.sigmoid.default(%y)") +
                      line("out", "aten.mul.Tensor(%mm, %s)")),
            "mul(acc, sigmoid(add(acc, 1.0)))");
  // alpha on the add: erf(...) + 2 * 1.0 is not 1 + erf(...).
  EXPECT_EQ(tail_expr(one_plus_erf("aten.div.Tensor(%mm, 1.4142135623730951)", ", alpha=2") + kHalfXTimesOne),
            "mul(mul(acc, 0.5), add(erf(div(acc, 1.4142135623730951)), mul(1.0, 2.0)))");
}

TEST(Idioms, AValueInsideAnIdiomReadElsewhereInTheTailKeepsItsExpression) {
  // sigmoid(x) is read by the swish and by the add: the swish becomes silu, the add still
  // reads sigmoid(acc).
  EXPECT_EQ(tail_expr(line("s", "aten.sigmoid.default(%mm)") + line("m", "aten.mul.Tensor(%mm, %s)") +
                      line("out", "aten.add.Tensor(%m, %s)")),
            "add(silu(acc), sigmoid(acc))");
}

TEST(Idioms, EveryIdiomHasFormsAMeaningAndAKnownOp) {
  ASSERT_GE(epilogue_idioms().size(), 3u);
  for (const Idiom& i : epilogue_idioms()) {
    EXPECT_FALSE(i.forms.empty()) << i.name;
    EXPECT_FALSE(i.meaning.empty()) << i.name;
    bool known = false;
    for (const EpilogueOp& op : epilogue_ops()) known |= op.name == i.op || (i.op == "gelu_tanh" && op.name == "gelu");
    EXPECT_TRUE(known) << i.name << " becomes " << i.op;
  }
}

}  // namespace
}  // namespace fact::discover
