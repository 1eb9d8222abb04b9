// Deeply nested input is refused with a clear error instead of exhausting the stack.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "base/nesting.h"
#include "graph/json.h"
#include "graph/text.h"

TEST(Nesting, CountsBracketsOutsideStrings) {
  EXPECT_EQ(fact::max_nesting_depth(R"({"a": [[1, 2], [3]], "s": "[[[[["})"), 3);
  EXPECT_EQ(fact::max_nesting_depth(R"("\"[[[")"), 0);
  EXPECT_EQ(fact::max_nesting_depth("graph G { }"), 1);
}

TEST(Nesting, DeepJsonGraphIsAnErrorNotACrash) {
  const std::string deep = R"({"format": "fact.graph", "version": 1, "x": )" + std::string(50000, '[') +
                           std::string(50000, ']') + "}";
  try {
    fact::graph::graph_from_json_string(deep);
    FAIL() << "expected fact::Error";
  } catch (const fact::Error& e) {
    EXPECT_NE(std::string(e.what()).find("nesting deeper than 256 levels (50001)"), std::string::npos) << e.what();
  }
}

TEST(Nesting, DeepTextGraphIsAnErrorNotACrash) {
  const std::string deep = "graph G {\n  output (" + std::string(50000, '[') + ")\n}\n";
  EXPECT_THROW(fact::graph::parse_text(deep, "deep.txt"), fact::Error);
}
