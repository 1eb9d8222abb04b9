// restore_dropped: dropped nodes join the pattern they sit inside or are listed as fallback,
// and a pattern whose inner value is still read outside it is given up.
#include <gtest/gtest.h>

#include "discover/canonical/canonical.h"
#include "discover/plan.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

const char* kGraph = R"(graph G {
  input %x : f32[4,8]{8,1}
  %relu : f32[4,8]{8,1} = aten.relu.default(%x)
  %to : f32[4,8]{8,1} = aten.to.dtype(%relu, dtype(f32))
  %neg : f32[4,8]{8,1} = aten.neg.default(%to)
  %dropout : f32[4,8]{8,1} = aten.dropout.default(%neg, 0.1, false)
  %tanh : f32[4,8]{8,1} = aten.tanh.default(%relu)
  output (%dropout, %tanh)
})";

Pattern pattern(std::vector<std::string> nodes, std::string output) {
  Pattern p;
  p.id = "p0";
  p.rule = "test";
  p.nodes = std::move(nodes);
  p.output = std::move(output);
  return p;
}

TEST(RestoreDropped, InnerDropsJoinOthersAreFallback) {
  graph::Graph g = graph::parse_text(kGraph);
  g.nodes.pop_back();  // no %tanh: nothing else reads %relu
  g.outputs = {"dropout"};
  const CanonicalGraph c = canonicalize(g);
  ASSERT_EQ(c.dropped.size(), 2u);  // %to (a no-op cast) and %dropout (eval mode)
  Plan plan;
  plan.patterns.push_back(pattern({"relu", "neg"}, "neg"));
  restore_dropped(g, c, plan);
  ASSERT_EQ(plan.patterns.size(), 1u);
  EXPECT_EQ(plan.patterns[0].nodes, (std::vector<std::string>{"relu", "to", "neg"}));
  ASSERT_EQ(plan.fallback.size(), 1u);
  EXPECT_EQ(plan.fallback[0].node, "dropout");
  EXPECT_EQ(plan.fallback[0].reason, "the canonical form drops it: dropout with train=False, same as %neg");
}

TEST(RestoreDropped, APatternWhoseInnerValueIsReadOutsideIsGivenUp) {
  const graph::Graph g = graph::parse_text(kGraph);
  const CanonicalGraph c = canonicalize(g);
  Plan plan;  // a rule that ignored %tanh reading %relu (none of FACT's does)
  plan.patterns.push_back(pattern({"relu", "neg"}, "neg"));
  restore_dropped(g, c, plan);
  EXPECT_TRUE(plan.patterns.empty());
  ASSERT_EQ(plan.fallback.size(), 4u);
  EXPECT_EQ(plan.fallback[0].node, "relu");
  EXPECT_EQ(plan.fallback[0].reason,
            "rule test matched, but %tanh (aten.tanh.default) reads a value inside the pattern, which the canonical "
            "form did not show the rule");
  EXPECT_EQ(plan.fallback[3].node, "dropout");
}

}  // namespace
}  // namespace fact::discover
