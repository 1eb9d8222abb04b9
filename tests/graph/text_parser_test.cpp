// Parser diagnostics: each bad text gives one exact message with line:column.
#include <cmath>

#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/text.h"

namespace fact::graph {
namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_text(text, "bad.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A graph header and input shared by the cases below; the case's line is line 3.
std::string with_line(const std::string& line) {
  return "graph G {\n  input %x : f32[2,2]{2,1}\n" + line + "\n  output (%x)\n}\n";
}

TEST(TextParser, MissingColonAfterValue) {
  EXPECT_EQ(parse_error(with_line("  %y f32[2,2]{2,1} = aten.relu.default(%x)")),
            "bad.txt:3:6: expected ':', found 'f32'");
}

TEST(TextParser, UnknownDtype) {
  EXPECT_EQ(parse_error(with_line("  %y : f33[2,2]{2,1} = aten.relu.default(%x)")),
            "bad.txt:3:8: expected a dtype (f64 f32 f16 bf16 i64 i32 i16 i8 u8 b8), found 'f33'");
}

TEST(TextParser, UndefinedReference) {
  EXPECT_EQ(parse_error(with_line("  %y : f32[2,2]{2,1} = aten.relu.default(%z)")),
            "bad.txt:3:42: reference to a value not defined above, found '%z'");
}

TEST(TextParser, ValueDefinedTwice) {
  EXPECT_EQ(parse_error(with_line("  %x : f32[2,2]{2,1} = aten.relu.default(%x)")),
            "bad.txt:3:3: value defined twice, found '%x'");
}

TEST(TextParser, ShapeAndStridesDifferInRank) {
  EXPECT_EQ(parse_error(with_line("  %y : f32[2,2]{1} = aten.relu.default(%x)")),
            "bad.txt:3:11: shape has 2 dimensions but strides has 1");
}

TEST(TextParser, UnterminatedString) {
  EXPECT_EQ(parse_error(with_line("  %y : f32[2,2]{2,1} = aten.gelu.default(%x, approximate=\"tanh)")),
            "bad.txt:3:58: unterminated string");
}

TEST(TextParser, UnknownEscape) {
  EXPECT_EQ(parse_error(with_line("  %y : f32[2,2]{2,1} = aten.gelu.default(%x, approximate=\"a\\qb\")")),
            "bad.txt:3:61: unknown escape '\\q' in string (use \\\" \\\\ \\n \\t \\r)");
}

TEST(TextParser, PositionalAfterKeyword) {
  EXPECT_EQ(parse_error(with_line("  %y : f32[2,2]{2,1} = aten.gelu.default(approximate=\"tanh\", %x)")),
            "bad.txt:3:62: expected a keyword argument after keyword arguments, found '%x'");
}

TEST(TextParser, UnexpectedCharacter) {
  EXPECT_EQ(parse_error(with_line("  %y : f32[2,2]{2,1} = aten.relu.default(%x) ;")),
            "bad.txt:3:46: unexpected character ';'");
}

TEST(TextParser, IntegerOutOfRange) {
  EXPECT_EQ(parse_error(with_line("  %y : f32[2,2]{2,1} = aten.add.Scalar(%x, 99999999999999999999)")),
            "bad.txt:3:44: integer out of range: 99999999999999999999");
}

TEST(TextParser, TrailingTextAfterGraph) {
  EXPECT_EQ(parse_error("graph G {\n  input %x : f32[]{}\n  output (%x)\n}\nextra\n"),
            "bad.txt:5:1: expected end of input after the graph, found 'extra'");
}

TEST(TextParser, MissingOutputLine) {
  EXPECT_EQ(parse_error("graph G {\n  input %x : f32[]{}\n}\n"),
            "bad.txt:3:1: expected input, parameter, buffer, constant, a node (%name ...) or output, "
            "found '}'");
}

TEST(TextParser, TupleOutputsNamedAfterOneNode) {
  // Graph-level checks run after parsing and name the source without a position.
  EXPECT_EQ(parse_error(with_line("  %s.0 : f32[2,1]{2,1}, %t.1 : f32[2,1]{2,1} = aten.split.Tensor(%x, 1, 1)")),
            "bad.txt: node 's': output 1 is named 't.1', expected 's.1'");
}

TEST(TextParser, CommentsAndBlankLinesAreIgnored) {
  Graph g = parse_text("# a comment\ngraph G {  # trailing comment\n\n  input %x : f32[]{}\n  output (%x)\n}\n");
  EXPECT_EQ(g.name, "G");
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].name, "x");
  EXPECT_EQ(print_text(g), "graph G {\n  input %x : f32[]{}\n  output (%x)\n}\n");
}

TEST(TextParser, ConstantsReadBackExactly) {
  Graph g = parse_text(with_line(
      "  %y : f32[2,2]{2,1} = aten.foo.default(%x, -3, 2.0, 1e-05, -inf, nan, true, none, "
      "[1, [2]], dtype(bf16), s=\"a\\\"b\")"));
  const Node& n = g.nodes.at(0);
  ASSERT_EQ(n.args.size(), 10u);
  EXPECT_EQ(*n.args[1].get_if<int64_t>(), -3);
  EXPECT_EQ(*n.args[2].get_if<double>(), 2.0);
  EXPECT_EQ(*n.args[3].get_if<double>(), 1e-05);
  EXPECT_TRUE(std::isinf(*n.args[4].get_if<double>()) && *n.args[4].get_if<double>() < 0);
  EXPECT_TRUE(std::isnan(*n.args[5].get_if<double>()));
  EXPECT_EQ(*n.args[6].get_if<bool>(), true);
  EXPECT_TRUE(n.args[7].is<None>());
  EXPECT_EQ(n.args[8], (Arg::List{Arg(int64_t{1}), Arg(Arg::List{Arg(int64_t{2})})}));
  EXPECT_EQ(n.args[9].get_if<ScalarType>()->dtype, DType::bf16);
  EXPECT_EQ(*n.kwarg("s")->get_if<std::string>(), "a\"b");
}

TEST(TextParser, ValueClassOfABuffer) {
  Graph g = parse_text(with_line("  buffer %b : b8[1,4,4]{16,4,1} = \"mask\" value=\"tril\""));
  ASSERT_EQ(g.params.size(), 1u);
  EXPECT_EQ(g.params[0].target, "mask");
  EXPECT_EQ(g.params[0].value_class, "tril");
  EXPECT_EQ(parse_error(with_line("  buffer %b : b8[4,4]{4,1} = \"mask\" value=\"triu\"")),
            "bad.txt: placeholder 'b': unknown value class 'triu' (known: tril)");
  EXPECT_EQ(parse_error(with_line("  parameter %w : f32[4,4]{4,1} = \"w\" value=\"tril\"")),
            "bad.txt: parameter 'w' has value class 'tril': only buffers and constants record one");
  EXPECT_EQ(parse_error(with_line("  buffer %b : b8[4,4]{4,1} = \"mask\" value=tril")),
            "bad.txt:3:43: expected a value class (a quoted string), found 'tril'");
}

TEST(TextFormat, DoublesAreShortestAndStayDoubles) {
  EXPECT_EQ(format_double(2.0), "2.0");
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(1e-05), "1e-05");
  EXPECT_EQ(format_double(-0.5), "-0.5");
  EXPECT_EQ(format_double(1.0 / 3.0), "0.3333333333333333");
}

}  // namespace
}  // namespace fact::graph
