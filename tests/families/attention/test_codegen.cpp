// Rendering the attention template: every placeholder filled with the configuration's
// values, the ABI pasted in, an unknown placeholder an error; different configurations are
// different sources (so different cache keys).
#include <gtest/gtest.h>

#include "base/error.h"
#include "families/attention/codegen.h"
#include "engine/embedded_templates.h"

using namespace fact::realize;

namespace {
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(AttentionCodegen, FillsEveryPlaceholder) {
  const AttentionFamily f{"tf32", DType::f32, 96, MaskKind::causal};
  const std::string src = render_attention_sm80(f, {64, 32, 2});
  EXPECT_FALSE(has(src, "{{")) << "unfilled placeholder";
  EXPECT_TRUE(has(src, "// Kernel: fact_attn_sm80_tf32_f32_d96_causal_64x32_mb2"));
  EXPECT_TRUE(has(src, "typedef struct FactAttentionArgs"));  // {{ABI}}
  EXPECT_TRUE(has(src, "using Element = float;"));
  EXPECT_TRUE(has(src, "constexpr MathKind kMath = kMath_tf32;"));
  EXPECT_TRUE(has(src, "constexpr int kHeadDim = 96;"));
  EXPECT_TRUE(has(src, "constexpr int kMask = 1;"));
  EXPECT_TRUE(has(src, "constexpr int kBlockM = 64;"));
  EXPECT_TRUE(has(src, "constexpr int kBlockN = 32;"));
  EXPECT_TRUE(has(src, "constexpr int kMinBlocks = 2;"));
  for (const char* fn : {"_can_implement(", "_workspace_bytes(", "_run(", "_name(void)"}) {
    EXPECT_TRUE(has(src, std::string("fact_attn_sm80_tf32_f32_d96_causal_64x32_mb2") + fn)) << fn;
  }
}

TEST(AttentionCodegen, ElementMathAndMaskPerFamily) {
  const std::string bf16_from_f32 = render_attention_sm80({"bf16", DType::f32, 128, MaskKind::none}, {128, 64, 1});
  EXPECT_TRUE(has(bf16_from_f32, "using Element = float;"));
  EXPECT_TRUE(has(bf16_from_f32, "constexpr MathKind kMath = kMath_bf16;"));
  EXPECT_TRUE(has(bf16_from_f32, "constexpr int kMask = 0;"));
  const std::string bf16 = render_attention_sm80({"bf16", DType::bf16, 64, MaskKind::additive}, {64, 64, 1});
  EXPECT_TRUE(has(bf16, "using Element = __nv_bfloat16;"));
  EXPECT_TRUE(has(bf16, "constexpr int kMask = 2;"));
  const std::string f16 = render_attention_sm80({"f16", DType::f16, 64, MaskKind::drop}, {64, 64, 1});
  EXPECT_TRUE(has(f16, "using Element = __half;"));
  EXPECT_TRUE(has(f16, "constexpr MathKind kMath = kMath_f16;"));
  EXPECT_TRUE(has(f16, "constexpr int kMask = 4;"));
  EXPECT_TRUE(has(render_attention_sm80({"f16", DType::f16, 64, MaskKind::keep}, {64, 64, 1}), "constexpr int kMask = 3;"));
  // One source per configuration.
  EXPECT_NE(render_attention_sm80({"f16", DType::f16, 64, MaskKind::drop}, {64, 64, 2}), f16);
}

TEST(AttentionCodegen, UnfilledPlaceholderIsAnError) {
  const std::string tpl = std::string(embedded::kAttentionSm80Template) + "\n// {{TILE_K}}\n";
  try {
    render_attention(tpl, {"tf32", DType::f32, 64, MaskKind::none}, {64, 64, 1});
    FAIL() << "expected fact::Error";
  } catch (const fact::Error& e) {
    EXPECT_TRUE(has(e.what(), "{{TILE_K}}")) << e.what();
  }
}
