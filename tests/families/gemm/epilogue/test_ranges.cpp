// Range analysis of epilogue trees (evt_ranges.h): the intervals it derives from unbounded
// leaves, and the rewrites those intervals allow — or do not.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "families/gemm/epilogue/program.h"
#include "families/gemm/epilogue/ranges.h"
#include "epilogue_tree_util.h"

using namespace fact::realize;
using nlohmann::json;

using fact::test::num;
using fact::test::op;

namespace {
json acc() { return fact::test::leaf_acc(); }
json clamp(json x, json lo, json hi) { return op("clamp", {std::move(x), std::move(lo), std::move(hi)}); }
}  // namespace

TEST(EvtRanges, IntervalsFromUnboundedLeaves) {
  auto r = epilogue_tree_range(op("silu", {acc()}));  // silu's minimum at x = -1.278465
  EXPECT_NEAR(r.first, -0.2784645, 1e-6);
  EXPECT_EQ(r.second, INFINITY);
  r = epilogue_tree_range(op("mul", {op("sigmoid", {acc()}), num(2.0)}));
  EXPECT_EQ(r.first, 0.0);
  EXPECT_EQ(r.second, 2.0);
  r = epilogue_tree_range(op("gelu", {op("tanh", {acc()})}));  // gelu over [-1, 1]
  EXPECT_NEAR(r.first, -0.1699712, 1e-6);
  EXPECT_NEAR(r.second, 0.8413447, 1e-6);
  // An input (a bias, a tensor) may hold anything, as acc may.
  r = epilogue_tree_range(op("add", {op("tanh", {acc()}), json{{"input", "bias"}}}));
  EXPECT_EQ(r.first, -INFINITY);
  EXPECT_EQ(r.second, INFINITY);
  r = epilogue_tree_range(op("exp", {acc()}));
  EXPECT_EQ(r.first, 0.0);
  EXPECT_EQ(r.second, INFINITY);
}

TEST(EvtRanges, TailGDropsTheBoundsItsArgumentsNeverReach) {
  // (g): clamp(tanh(clamp(silu(acc) / 2, -1, 1)), -1, 1). silu / 2 >= -0.139: the inner
  // lower bound goes, the upper stays; tanh of [-0.139, 1] lies in [-0.138, 0.762]: the
  // outer clamp goes.
  const json g = clamp(op("tanh", {clamp(op("div", {op("silu", {acc()}), num(2.0)}), num(-1.0), num(1.0))}), num(-1.0), num(1.0));
  std::vector<std::string> notes;
  const json s = simplify_epilogue_by_range(g, &notes);
  const json want = op("tanh", {clamp(op("div", {op("silu", {acc()}), num(2.0)}), nullptr, num(1.0))});
  EXPECT_EQ(s, want) << s.dump();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].rfind("clamp: the argument lies in [-0.139, inf]; its lower bound is dropped", 0), 0u) << notes[0];
  EXPECT_EQ(notes[1].rfind("clamp: the argument lies in [-0.138, 0.762]; the op is dropped", 0), 0u) << notes[1];
}

TEST(EvtRanges, BoundsTouchingTheRangeAndUnboundedArgumentsStay) {
  // tanh reaches +-1 (fp32 rounds there): within the margin, so the clamp stays.
  const json t = clamp(op("tanh", {acc()}), num(-1.0), num(1.0));
  EXPECT_EQ(simplify_epilogue_by_range(t), t);
  // relu of sigmoid: the argument reaches 0. relu of sigmoid + 0.5: never below 0.5.
  const json r0 = op("relu", {op("sigmoid", {acc()})});
  EXPECT_EQ(simplify_epilogue_by_range(r0), r0);
  const json r1 = op("relu", {op("add", {op("sigmoid", {acc()}), num(0.5)})});
  EXPECT_EQ(simplify_epilogue_by_range(r1), r1.at("args").at(0));
  // A clamp of acc itself, or of an input added to a bounded value.
  const json a = clamp(acc(), num(-2.0), num(2.0));
  EXPECT_EQ(simplify_epilogue_by_range(a), a);
  const json b = clamp(op("add", {op("tanh", {acc()}), json{{"input", "c0"}}}), num(-2.0), num(2.0));
  EXPECT_EQ(simplify_epilogue_by_range(b), b);
}

TEST(EvtRanges, ErfAndGeluOfBoundedArgumentsUseTheBoundedErf) {
  EXPECT_EQ(simplify_epilogue_by_range(op("erf", {op("mul", {op("tanh", {acc()}), num(0.9)})})).at("op"), "erf_bounded");
  // tanh reaches the limit |z| = 1 itself: within the margin, so CUDA's erff stays.
  EXPECT_EQ(simplify_epilogue_by_range(op("erf", {op("tanh", {acc()})})).at("op"), "erf");
  EXPECT_EQ(simplify_epilogue_by_range(op("erf", {op("mul", {op("tanh", {acc()}), num(1.5)})})).at("op"), "erf");
  // gelu takes erf(x / sqrt 2): bounded while |x| <= sqrt 2 (less the margin).
  EXPECT_EQ(simplify_epilogue_by_range(op("gelu", {op("mul", {op("tanh", {acc()}), num(1.414)})})).at("op"), "gelu_bounded");
  EXPECT_EQ(simplify_epilogue_by_range(op("gelu", {op("mul", {op("tanh", {acc()}), num(1.4143)})})).at("op"), "gelu");
  EXPECT_EQ(simplify_epilogue_by_range(op("gelu", {acc()})).at("op"), "gelu");
  // A tree compile_epilogue rejects comes back as it is.
  const json bad = op("frobnicate", {acc()});
  EXPECT_EQ(simplify_epilogue_by_range(bad), bad);
}

TEST(EvtRanges, BranchReachOfTailH) {
  // (h) as verification compiles it: hardtanh(gelu(tanh(silu(acc + c0))), -1, 1) -> the two
  // clamp steps take one side only; relu of acc takes both.
  const json x = op("add", {acc(), json{{"input", "c0"}}});
  const EpilogueProgram h = compile_epilogue(clamp(op("gelu", {op("tanh", {op("silu", {x})})}), num(-1.0), num(1.0)));
  const auto reach = epilogue_branch_reach(h);
  ASSERT_EQ(int(reach.size()), h.size);
  int clamps = 0;
  for (int i = 0; i < h.size; ++i) {
    if (h.code[i].op == EpiOp::clamp_lo) {
      ++clamps;
      EXPECT_TRUE(reach[size_t(i)].through);   // x > -1
      EXPECT_FALSE(reach[size_t(i)].other);    // never x <= -1
      EXPECT_NEAR(reach[size_t(i)].lo, -0.1066, 1e-3);
    }
    if (h.code[i].op == EpiOp::clamp_hi) {
      ++clamps;
      EXPECT_TRUE(reach[size_t(i)].through);   // x < 1
      EXPECT_FALSE(reach[size_t(i)].other);    // never x >= 1
      EXPECT_NEAR(reach[size_t(i)].hi, 0.8413, 1e-3);
    }
  }
  EXPECT_EQ(clamps, 2);
  const EpilogueProgram r = compile_epilogue(op("relu", {acc()}));
  const auto rr = epilogue_branch_reach(r);
  EXPECT_TRUE(rr[1].through);
  EXPECT_TRUE(rr[1].other);
  // relu of sigmoid reaches 0 (within the margin): both sides stay, as the rewrite keeps it.
  const auto rs = epilogue_branch_reach(compile_epilogue(op("relu", {op("sigmoid", {acc()})})));
  EXPECT_TRUE(rs[2].through);
  EXPECT_TRUE(rs[2].other);
  // relu of exp(acc) + 1: never <= 0.
  const auto re = epilogue_branch_reach(compile_epilogue(op("relu", {op("add", {op("exp", {acc()}), num(1.0)})})));
  EXPECT_TRUE(re[4].through);
  EXPECT_FALSE(re[4].other);
}

TEST(EvtRanges, AClampWithItsBoundsCrossedKeepsTheUpperBound) {
  // torch.clamp(x, min=2, max=1.5) is 1.5 everywhere. sigmoid's [0, 1] lies below both
  // bounds, but the upper bound acts on max(x, 2) = 2, not on x: it must stay (and the lower
  // one, which x never clears, stays too).
  const json c = clamp(op("sigmoid", {acc()}), num(2.0), num(1.5));
  const json s = simplify_epilogue_by_range(c);
  EXPECT_EQ(s, c) << s.dump();
  EXPECT_EQ(epilogue_tree_range(c), std::make_pair(1.5, 1.5));
  // Above both: the lower bound goes, min(x, 1.5) = 1.5 as before.
  const json above = clamp(op("add", {op("sigmoid", {acc()}), num(3.0)}), num(2.0), num(1.5));
  EXPECT_EQ(simplify_epilogue_by_range(above), clamp(op("add", {op("sigmoid", {acc()}), num(3.0)}), nullptr, num(1.5)));
}

TEST(EvtRanges, ANaNBoundIsNeverDropped) {
  // Not writable in JSON text, but a tree built in memory can hold it: clamp(x, NaN, 2) is
  // NaN everywhere (FactMax propagates the NaN bound), so the lower bound stays.
  const json c = clamp(op("sigmoid", {acc()}), num(NAN), num(2.0));
  const json s = simplify_epilogue_by_range(c);
  EXPECT_EQ(s.at("op"), "clamp");
  ASSERT_FALSE(s.at("args").at(1).is_null());
  EXPECT_TRUE(std::isnan(s.at("args").at(1).at("scalar").get<double>()));
}
