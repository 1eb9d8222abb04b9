// The epilogue op table (op_table.h): every ATen op discovery lists reaches every stage
// through its row — the program, the interval evaluator, the EVT and the cost model — and
// the per-op columns the stages read come out of the table as it states them.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "base/error.h"
#include "families/gemm/epilogue/epilogue.h"
#include "families/gemm/epilogue/evt_codegen.h"
#include "families/gemm/epilogue/program.h"

using namespace fact::realize;
using fact::discover::EpilogueOpKind;
using nlohmann::json;

namespace {

json leaf_acc() { return {{"acc", true}}; }
json number(double v) { return {{"scalar", v}}; }

// A tree of `op` over acc with the arguments its ATen op's kind gives it.
json tree_for(const fact::discover::EpilogueOp& op) {
  const std::string name(op.name);
  switch (op.kind) {
    case EpilogueOpKind::binary: return {{"op", name}, {"args", {leaf_acc(), number(3.0)}}};
    case EpilogueOpKind::leaky_relu:
    case EpilogueOpKind::pow: return {{"op", name}, {"args", {leaf_acc(), number(2.0)}}};
    case EpilogueOpKind::hardtanh:
    case EpilogueOpKind::clamp: return {{"op", name}, {"args", {leaf_acc(), number(-1.0), number(1.0)}}};
    default: return {{"op", name}, {"args", {leaf_acc()}}};
  }
}

TEST(EpilogueOpTable, EveryListedOpCompilesEvaluatesAndRenders) {
  const double in[4] = {0, 0, 0, 0};
  std::set<std::string> names;
  for (const auto& op : fact::discover::epilogue_ops()) {
    names.insert(std::string(op.name));
    const json tree = tree_for(op);
    const EpilogueProgram prog = compile_epilogue(tree);
    ASSERT_GE(prog.size, 2) << op.aten;
    EXPECT_TRUE(std::isfinite(eval_epilogue<double>(prog, 0.5, in))) << op.aten;
    double lo = 0, hi = 0;
    eval_epilogue_range(prog, 0.25, 0.75, in, &lo, &hi);
    const double at = eval_epilogue<double>(prog, 0.5, in);
    EXPECT_LE(lo, at) << op.aten;
    EXPECT_GE(hi, at) << op.aten;
    EXPECT_NO_THROW(render_evt(tree, json::object())) << op.aten;
  }
  // 21 ATen ops over 17 tree ops (add/sub/mul/div each have a Tensor and a Scalar form).
  EXPECT_EQ(fact::discover::epilogue_ops().size(), 21u);
  EXPECT_EQ(names.size(), 17u);
}

TEST(EpilogueOpTable, TheRowsGiveEachStageItsColumn) {
  // Listing order is the table's: the binary ops first, pow last.
  const auto& ops = fact::discover::epilogue_ops();
  EXPECT_EQ(ops.front().aten, "aten.add.Tensor");
  EXPECT_EQ(ops.back().aten, "aten.pow.Tensor_Scalar");
  // Cost: about 20 instructions a transcendental, 1 otherwise (and for a name not in it).
  EXPECT_EQ(epilogue_op_cost("gelu_tanh"), 20);
  EXPECT_EQ(epilogue_op_cost("exp"), 20);
  EXPECT_EQ(epilogue_op_cost("relu"), 1);
  EXPECT_EQ(epilogue_op_cost("hardtanh"), 1);
  EXPECT_EQ(epilogue_op_cost("frobnicate"), 1);
  // Branches: side, breakpoint and label.
  EXPECT_EQ(epilogue_branch_direction(EpiOp::relu), +1);
  EXPECT_EQ(epilogue_branch_direction(EpiOp::clamp_hi), -1);
  EXPECT_EQ(epilogue_branch_direction(EpiOp::gelu), 0);
  EXPECT_EQ(epilogue_breakpoint({EpiOp::clamp_lo, -2.5}), -2.5);
  EXPECT_EQ(epilogue_breakpoint({EpiOp::leaky_relu, 0.1}), 0.0);
  EXPECT_STREQ(epilogue_branch_label(EpiOp::clamp_lo), "clamp (lower bound)");
  EXPECT_STREQ(epilogue_branch_label(EpiOp::exp), "op");
  // Critical points: silu's minimum, none for a monotone op.
  EXPECT_DOUBLE_EQ(epilogue_critical_point(EpiOp::silu), -1.278465);
  EXPECT_TRUE(std::isnan(epilogue_critical_point(EpiOp::tanh)));
  // The binary instructions are the table's binary rows, right after the leaves.
  EXPECT_TRUE(epilogue_binary(EpiOp::add));
  EXPECT_TRUE(epilogue_binary(EpiOp::min));
  EXPECT_FALSE(epilogue_binary(EpiOp::relu));
  EXPECT_FALSE(epilogue_binary(EpiOp::input));
}

TEST(EpilogueOpTable, InstructionOnlyRowsAreNoTreeOps) {
  // clamp_lo / clamp_hi are what clamp compiles to, never an op of a tree.
  for (const char* op : {"clamp_lo", "clamp_hi"}) {
    const json tree = {{"op", op}, {"args", {leaf_acc(), number(1.0)}}};
    try {
      compile_epilogue(tree);
      ADD_FAILURE() << op << " compiled";
    } catch (const fact::Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("unknown op '") + op + "'"), std::string::npos) << e.what();
    }
  }
  // A clamp with one bound compiles to that bound's instruction alone.
  const EpilogueProgram p = compile_epilogue({{"op", "clamp"}, {"args", {leaf_acc(), nullptr, number(4.0)}}});
  ASSERT_EQ(p.size, 2);
  EXPECT_EQ(p.code[1].op, EpiOp::clamp_hi);
  EXPECT_EQ(p.code[1].value, 4.0);
}

}  // namespace
