#include "families/attention/codegen.h"

#include "families/gemm/codegen.h"
#include "engine/embedded_templates.h"

namespace fact::realize {

std::string render_attention(const std::string& template_text, const AttentionFamily& f, const AttentionConfig& c) {
  return fill_placeholders(template_text, {
      {"NAME", attention_kernel_name(f, c)},
      {"ABI", embedded::kAttentionAbiHeader},
      {"ELEMENT", cuda_element_name(f.element)},
      {"MATH", f.math},
      {"HEAD_DIM", std::to_string(f.head_dim)},
      {"MASK", std::to_string(int(f.mask))},
      {"BLOCK_M", std::to_string(c.block_m)},
      {"BLOCK_N", std::to_string(c.block_n)},
      {"MIN_BLOCKS", std::to_string(c.min_blocks)},
  });
}

std::string render_attention_sm80(const AttentionFamily& f, const AttentionConfig& c) {
  return render_attention(embedded::kAttentionSm80Template, f, c);
}

}  // namespace fact::realize
