// graph::Arg::number: the one reading of a numeric constant that discovery's rules share.
#include <gtest/gtest.h>

#include "graph/graph.h"

namespace fact::graph {
namespace {

TEST(GraphArg, NumberReadsIntsAndFloatsOnly) {
  EXPECT_EQ(Arg(int64_t{3}).number(), 3.0);
  EXPECT_EQ(Arg(0.5).number(), 0.5);
  EXPECT_FALSE(Arg(true).number().has_value());  // a bool is not a number here
  EXPECT_FALSE(Arg(Ref{"x"}).number().has_value());
  EXPECT_FALSE(Arg(None{}).number().has_value());
  EXPECT_FALSE(Arg("3").number().has_value());
}

}  // namespace
}  // namespace fact::graph
