// Constant masks: classify_mask over [R, C] (bool and additive), and evaluate_mask over a
// graph built as Hugging Face builds a mask (the goldens attention_hf_*.txt cover whole chains).
#include <gtest/gtest.h>

#include "families/attention/mask_eval.h"
#include "graph/text.h"

namespace fact::discover::attention {
namespace {

ConstTensor band(int64_t rows, int64_t cols, int64_t window, double kept, double removed, int64_t batch = 2) {
  ConstTensor t{{batch, 1, rows, cols}, {}};
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        t.data.push_back(j <= i && (window == 0 || j > i - window) ? kept : removed);
  return t;
}

TEST(MaskEval, ClassifiesCausalWindowAllAndOther) {
  EXPECT_EQ(classify_mask(band(6, 6, 0, 1, 0), false).kind, MaskClass::Kind::causal);
  EXPECT_EQ(classify_mask(band(6, 6, 0, 1, 0), false).window, 0);
  const MaskClass w = classify_mask(band(6, 6, 3, 0, -3.4028234663852886e+38), true);
  EXPECT_EQ(w.kind, MaskClass::Kind::causal);
  EXPECT_EQ(w.window, 3);
  EXPECT_EQ(classify_mask(band(6, 6, 6, 1, 0), false).window, 0);  // a window as wide as the keys: causal
  EXPECT_EQ(classify_mask(ConstTensor{{1, 4, 4}, std::vector<double>(16, 1)}, false).kind, MaskClass::Kind::all_kept);
  EXPECT_EQ(classify_mask(ConstTensor{{4, 4}, std::vector<double>(16, 0)}, true).kind, MaskClass::Kind::all_kept);
  EXPECT_EQ(classify_mask(ConstTensor{{4, 4}, std::vector<double>(16, 0)}, false).kind, MaskClass::Kind::none_kept);
  ConstTensor odd = band(6, 6, 0, 1, 0);
  odd.data[6 * 6 + 1] = 1;  // batch 1, row 0 keeps key 1
  EXPECT_EQ(classify_mask(odd, false).kind, MaskClass::Kind::other);
  const MaskClass half = classify_mask(band(6, 6, 0, 0, -1.0), true);  // -1 is not a removal
  EXPECT_EQ(half.kind, MaskClass::Kind::other);
  EXPECT_NE(half.why.find("neither 0 nor at most -1e9"), std::string::npos) << half.why;
}

TEST(MaskEval, EvaluatesConstantsAndStopsAtPlaceholders) {
  const graph::Graph g = graph::parse_text(R"(graph M {
  input %x : i64[4]{1}
  %arange : i64[4]{1} = aten.arange.default(4, device=device("cpu"), pin_memory=false)
  %unsqueeze : i64[4,1]{1,1} = aten.unsqueeze.default(%arange, 1)
  %unsqueeze_1 : i64[1,4]{4,1} = aten.unsqueeze.default(%arange, 0)
  %le : b8[4,4]{4,1} = aten.le.Tensor(%unsqueeze_1, %unsqueeze)
  %cumsum : i64[4]{1} = aten.cumsum.default(%arange, -1)
  %le_1 : b8[4]{1} = aten.le.Tensor(%x, %arange)
  output (%le, %cumsum, %le_1)
})");
  const graph::GraphIndex index(g);
  const auto le = evaluate_mask(index, "le");
  ASSERT_TRUE(le);
  EXPECT_EQ(le->shape, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(classify_mask(*le, false).kind, MaskClass::Kind::causal);
  EXPECT_EQ(evaluate_mask(index, "cumsum")->data, (std::vector<double>{0, 1, 3, 6}));
  EXPECT_FALSE(evaluate_mask(index, "le_1"));           // reads an input
  EXPECT_FALSE(evaluate_mask(index, "le", /*max_elements=*/8));  // larger than allowed
}

}  // namespace
}  // namespace fact::discover::attention

namespace fact::discover::attention {
namespace {

TEST(MaskEval, LargeMasksAreClassifiedElementByElement) {
  // [1, 1, 2048, 2048] (4M elements, above the 2^20 held): le of two index views, __and__ a
  // constant true, negated for masked_fill.
  const graph::Graph g = graph::parse_text(R"(graph M {
  %arange : i64[2048]{1} = aten.arange.default(2048, device=device("cpu"), pin_memory=false)
  %q : i64[1,1,2048,1]{2048,2048,1,1} = aten.view.default(%arange, [1, 1, 2048, 1])
  %k : i64[1,1,1,2048]{2048,2048,2048,1} = aten.view.default(%arange, [1, 1, 1, 2048])
  %le : b8[1,1,2048,2048]{4194304,4194304,2048,1} = aten.le.Tensor(%k, %q)
  %and_1 : b8[1,1,2048,2048]{4194304,4194304,2048,1} = aten.__and__.Tensor(%le, true)
  output (%and_1)
})");
  const graph::GraphIndex index(g);
  EXPECT_FALSE(evaluate_mask(index, "and_1"));  // too large to hold
  const auto kept = classify_constant_mask(index, "and_1", false, false);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->kind, MaskClass::Kind::causal);
  const auto removed = classify_constant_mask(index, "and_1", false, true);  // masked_fill(and_1, -inf) keeps j > i
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->kind, MaskClass::Kind::other);
  EXPECT_FALSE(classify_constant_mask(index, "and_1", false, false, /*max_elements=*/1 << 20));
}

}  // namespace
}  // namespace fact::discover::attention
