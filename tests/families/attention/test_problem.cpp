// Reading an attention pattern's problem from the plan: every field, and an error naming the
// bad one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "families/attention/problem.h"

using namespace fact::realize;
using nlohmann::json;

namespace {

// minGPT's attention: q, k, v are [B, T, 3C] views split per head (B=2, T=128, H=4, D=96,
// C=384); O is written in the merged [B, T, C] layout.
json mingpt(json changes = json::object()) {
  json p{{"kind", "attention"}, {"batch", 2}, {"heads", 4}, {"kv_heads", 4}, {"seq_q", 128}, {"seq_k", 128},
         {"head_dim", 96}, {"dtype", "float32"}, {"scale", 0.1020620726}, {"mask", "causal"},
         {"strides", {{"q", {128 * 1152, 96, 1152}}, {"k", {128 * 1152, 96, 1152}}, {"v", {128 * 1152, 96, 1152}},
                      {"o", {128 * 384, 96, 384}}, {"mask", nullptr}}},
         {"output_layout", "bthd"}};
  for (auto& [k, v] : changes.items()) p[k] = v;
  return p;
}

std::string error_of(const json& j) {
  try {
    attention_problem_from_json(j);
  } catch (const fact::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(AttentionProblem, ReadsEveryField) {
  const AttentionProblem p = attention_problem_from_json(mingpt());
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.heads, 4);
  EXPECT_EQ(p.group(), 1);
  EXPECT_EQ(p.seq_q, 128);
  EXPECT_EQ(p.head_dim, 96);
  EXPECT_EQ(p.dtype, DType::f32);
  EXPECT_DOUBLE_EQ(p.scale, 0.1020620726);
  EXPECT_EQ(p.mask, MaskKind::causal);
  EXPECT_EQ(p.q.batch, 128 * 1152);
  EXPECT_EQ(p.q.head, 96);
  EXPECT_EQ(p.q.row, 1152);
  EXPECT_EQ(p.o.row, 384);
  EXPECT_EQ(p.output_layout, "bthd");
  EXPECT_EQ(p.form, "");
  EXPECT_EQ(attention_problem_from_json(mingpt({{"form", "sdpa"}})).form, "sdpa");
  // The views span the whole [B, T, 3C] buffer, less the last row's other two thirds.
  EXPECT_EQ(p.extent_q(), 128 * 1152 + 3 * 96 + 127 * 1152 + 96);
  EXPECT_EQ(p.extent_o(), 2 * 128 * 384);
  EXPECT_EQ(p.extent_mask(), 0);
  EXPECT_EQ(p.mask_bytes(), 0u);
  // Causal: the 128 x 129 / 2 pairs j <= i, two GEMMs of 2 flops each per pair and D.
  EXPECT_DOUBLE_EQ(p.flops(), 4.0 * (128.0 * 129 / 2) * 96 * 2 * 4);
}

TEST(AttentionProblem, GroupedQueryHeadsAndMaskTensors) {
  json j = mingpt({{"heads", 8}, {"kv_heads", 2}, {"mask", "keep"}, {"dtype", "bfloat16"}, {"output_layout", "bhtd"}});
  j["strides"] = {{"q", {8 * 128 * 64, 128 * 64, 64}}, {"k", {2 * 128 * 64, 128 * 64, 64}},
                  {"v", {2 * 128 * 64, 128 * 64, 64}}, {"o", {8 * 128 * 64, 128 * 64, 64}}, {"mask", {128 * 128, 0, 128}}};
  j["head_dim"] = 64;
  const AttentionProblem p = attention_problem_from_json(j);
  EXPECT_EQ(p.group(), 4);
  EXPECT_EQ(p.mask, MaskKind::keep);
  EXPECT_EQ(p.mask_strides.head, 0);  // broadcast over heads
  EXPECT_EQ(p.extent_mask(), 128 * 128 + 127 * 128 + 128);
  EXPECT_EQ(p.mask_bytes(), 1u);
  EXPECT_EQ(p.extent_k(), 2 * 128 * 64 * 2);
  j["mask"] = "additive";
  EXPECT_EQ(attention_problem_from_json(j).mask_bytes(), 2u);  // Q's dtype
}

TEST(AttentionProblem, ErrorsNameTheField) {
  auto expect = [](const json& j, const std::string& text) {
    const std::string e = error_of(j);
    EXPECT_NE(e.find(text), std::string::npos) << "got: " << e;
  };
  json no_heads = mingpt();
  no_heads.erase("heads");
  expect(no_heads, "field 'heads' is missing");
  expect(mingpt({{"seq_q", 12.5}}), "field 'seq_q' must be an integer");
  expect(mingpt({{"batch", 0}}), "field 'batch' must be positive");
  expect(mingpt({{"kv_heads", 3}}), "field 'kv_heads' = 3 does not divide heads = 4");
  expect(mingpt({{"dtype", "float64"}}), "field 'dtype' must be float32, bfloat16 or float16");
  expect(mingpt({{"mask", "sliding"}}), "field 'mask' must be none, causal, additive, keep or drop");
  expect(mingpt({{"scale", "1/sqrt(d)"}}), "field 'scale' must be a finite number");
  expect(mingpt({{"output_layout", "tbdh"}}), "field 'output_layout' must be an order of b, h, t followed by d");
  expect(mingpt({{"output_layout", "bhd"}}), "field 'output_layout' must be an order of b, h, t followed by d");
  EXPECT_EQ(error_of(mingpt({{"output_layout", "tbhd"}})), "");  // nn.MultiheadAttention
  expect(mingpt({{"kind", "gemm"}}), "field 'kind' is not 'attention'");
  expect(mingpt({{"form", 3}}), "field 'form' must be a string");
  expect(mingpt({{"mask", "additive"}}), "field 'strides.mask' is null, but mask 'additive' reads a tensor");

  json j = mingpt();
  j["strides"]["mask"] = {128, 0, 1};
  expect(j, "field 'strides.mask' must be null for mask 'causal'");
  j = mingpt();
  j["strides"]["k"] = {1, 2};
  expect(j, "field 'strides.k' must be [batch, head, row] strides");
  j = mingpt();
  j["strides"]["v"] = {-1, 96, 1152};
  expect(j, "field 'strides.v' has a negative stride");
  j = mingpt();
  j["strides"]["q"] = {128 * 1152, 96, 64};
  expect(j, "field 'strides.q' row stride 64 is smaller than head_dim 96");
  j = mingpt();
  j["strides"]["o"] = {128 * 384, 0, 384};  // every head writes the same place
  expect(j, "field 'strides.o' make elements of O share memory");
  j = mingpt();
  j["strides"].erase("o");
  expect(j, "field 'strides.o' is missing");
}

TEST(AttentionProblem, SizesPastTheKernelsRangeOrInt64AreRefused) {
  auto expect = [](const json& j, const std::string& text) {
    const std::string e = error_of(j);
    EXPECT_NE(e.find(text), std::string::npos) << "got: " << e;
  };
  expect(mingpt({{"seq_q", int64_t(1) << 31}}),
         "field 'seq_q' = 2147483648 exceeds 2^31 - 1, the 32-bit range the attention kernels index with");
  const int64_t n = 2147483647;
  json j = mingpt();
  j["strides"]["k"] = {int64_t(1) << 49, 96, 1152};
  expect(j, "field 'strides.k' has a stride past 2^48");
  // Sizes below 2^31 and strides below 2^48 whose extent passes int64: K's batches 2^48 apart.
  j = mingpt({{"batch", n}});
  j["strides"]["q"] = {0, 96, 1152};  // Q broadcast over the batch
  j["strides"]["k"] = {int64_t(1) << 48, 96, 1152};
  expect(j, "an operand's extent: overflows int64");
  j = mingpt({{"batch", n}});
  j["strides"]["o"] = {int64_t(1) << 48, int64_t(1) << 40, 384};  // O's span passes int64
  expect(j, "the span of O: overflows int64");
  j = mingpt({{"batch", 64}});
  j["strides"]["o"] = {int64_t(1) << 42, 96, 384};  // 63 batches 2^42 elements apart: 2^50 bytes
  expect(j, "plan problem (attention): O: spans 277076930248704 elements of 4 bytes, more than 2^48 bytes");
  // One query row per head of 2^31 - 1 heads, one K/V head of 2^31 - 1 keys: every operand
  // fits, but the vendor path's K repeated per query head would be 2^68 elements.
  json wide = mingpt({{"heads", n}, {"kv_heads", 1}, {"seq_q", 1}, {"seq_k", n}, {"head_dim", 64}, {"mask", "none"}});
  wide["strides"] = {{"q", {n * 64, 64, 64}}, {"k", {n * 64, 0, 64}}, {"v", {n * 64, 0, 64}}, {"o", {n * 64, 64, 64}},
                     {"mask", nullptr}};
  expect(wide, "B * H * T * D: overflows int64");
  // The largest size is read where every extent fits: one head of 2^31 - 1 keys.
  wide["heads"] = 1;
  EXPECT_EQ(error_of(wide), "");
}

TEST(AttentionProblem, SpelledExtrasAreReadAndChecked) {
  const AttentionProblem w = attention_problem_from_json(mingpt({{"window", 4096}}));
  EXPECT_EQ(w.window, 4096);
  EXPECT_EQ(attention_problem_from_json(mingpt()).window, 0);
  json keep = mingpt({{"mask", "keep"}, {"fill", -3.4028234663852886e+38}});
  keep["strides"]["mask"] = {128, 0, 1};
  EXPECT_EQ(attention_problem_from_json(keep).fill, -3.4028234663852886e+38);
  json additive = mingpt({{"mask", "additive"}, {"mask_dtype", "float32"},
                          {"extra_masks", json::array({{{"mask", "keep"}}})}, {"fill", -1e30}});
  additive["strides"]["mask"] = {128, 0, 1};
  const AttentionProblem a = attention_problem_from_json(additive);
  EXPECT_EQ(a.mask_dtype, "float32");
  EXPECT_EQ(a.extra_masks, 1);
  auto expect = [](const json& j, const std::string& text) {
    const std::string e = error_of(j);
    EXPECT_NE(e.find(text), std::string::npos) << "got: " << e;
  };
  expect(mingpt({{"window", 0}}), "field 'window' must be an integer >= 1 with mask causal");
  expect(mingpt({{"fill", -1e30}}), "field 'fill' must be a finite number with a keep or drop mask");
  expect(mingpt({{"mask_dtype", "float32"}}), "field 'mask_dtype' must be a dtype name with mask additive");
  expect(mingpt({{"extra_masks", 2}}), "field 'extra_masks' must be an array");
  expect(mingpt({{"mask_key_stride", 4}}), "field 'mask_key_stride' must be an integer >= 1 with a mask tensor");
  additive["mask_key_stride"] = 4;
  EXPECT_EQ(attention_problem_from_json(additive).mask_key_stride, 4);
}

TEST(AttentionProblem, MaskPrologueIsReadWithAnAdditiveMask) {
  json pad = mingpt({{"mask", "additive"}, {"mask_rsub", 1.0}, {"mask_scale", -3.4028234663852886e+38}});
  pad["strides"]["mask"] = {128, 0, 0};
  const AttentionProblem p = attention_problem_from_json(pad);
  ASSERT_TRUE(p.mask_prologue);
  EXPECT_EQ(p.mask_prologue->rsub, 1.0);
  EXPECT_EQ(p.mask_prologue->scale, -3.4028234663852886e+38);
  pad.erase("mask_rsub");
  pad.erase("mask_scale");
  EXPECT_FALSE(attention_problem_from_json(pad).mask_prologue);  // a plain additive mask
  auto expect = [](const json& j, const std::string& text) {
    const std::string e = error_of(j);
    EXPECT_NE(e.find(text), std::string::npos) << "got: " << e;
  };
  json one = pad;
  one["mask_scale"] = -1e4;  // without mask_rsub
  expect(one, "field 'mask_rsub' must be a finite number with mask additive, given with mask_rsub and mask_scale both, got null");
  one["mask_rsub"] = "1";
  expect(one, "field 'mask_rsub' must be a finite number");
  one["mask_rsub"] = 1.0;
  one["mask_scale"] = nullptr;
  expect(one, "field 'mask_scale' must be a finite number");
  expect(mingpt({{"mask_rsub", 1.0}, {"mask_scale", -1e4}}), "field 'mask_rsub' must be a finite number with mask additive");
}
