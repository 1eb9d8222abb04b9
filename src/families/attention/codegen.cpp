#include "families/attention/codegen.h"

#include "base/error.h"
#include "engine/kernel_template.h"
#include "engine/embedded_templates.h"
#include "families/attention/space_sm90.h"

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

std::string render_attention_sm90(const std::string& template_text, const AttentionFamily& f, const AttentionConfig& c) {
  if (!c.sm90) throw Error("render_attention_sm90: " + attention_kernel_name(f, c) + " is not an sm90 configuration");
  const AttentionSm90Options& o = *c.sm90;
  const auto flag = [](bool b) { return std::string(b ? "1" : "0"); };
  // ELEMENT is the GEMMs' operand type, INPUT the tensors' (fp32 inputs: rounded to bf16).
  const DType operand = attention_sm90_converts(f) ? DType::bf16 : f.element;
  return fill_placeholders(template_text, {
      {"NAME", attention_kernel_name(f, c)},
      {"ABI", embedded::kAttentionAbiHeader},
      {"ELEMENT", cuda_element_name(operand)},
      {"INPUT", cuda_element_name(f.element)},
      {"HEAD_DIM", std::to_string(f.head_dim)},
      {"MASK", std::to_string(int(f.mask))},
      {"BLOCK_M", std::to_string(c.block_m)},
      {"BLOCK_N", std::to_string(c.block_n)},
      {"STAGES", std::to_string(o.stages)},
      {"CONSUMER_WG", std::to_string(o.consumer_wg)},
      {"OVERLAP", flag(o.overlap)},
      {"PINGPONG", flag(o.pingpong)},
      {"MIN_BLOCKS", std::to_string(c.min_blocks)},
      {"PERSISTENT", flag(o.persistent)},
      {"EPILOGUE", std::to_string(o.epilogue)},
      {"L2HINT", flag(o.l2hint)},
      {"LAZY_RESCALE", flag(o.lazy_rescale)},
      {"CHAIN", flag(o.chain)},
      {"CLUSTER", std::to_string(o.cluster)},
      {"PRODUCER_REGS", std::to_string(o.producer_regs)},
      {"STAGE_ROWS", std::to_string(o.stage_rows)},
      {"STAGING_MAX", std::to_string(o.staging_max)},
      {"QREG", flag(o.qreg)},
      {"PREFETCH", std::to_string(o.prefetch)},
      {"K_AHEAD", std::to_string(o.k_ahead)},
      {"LOAD_WARP", flag(o.load_warp)},
      {"SPLIT_TAIL", flag(o.split_tail)},
      {"BALANCE_TAIL", flag(o.balance_tail)},
  });
}

std::string render_attention_kernel(const AttentionFamily& f, const AttentionConfig& c) {
  return c.sm90 ? render_attention_sm90(embedded::kAttentionSm90Template, f, c) : render_attention_sm80(f, c);
}

}  // namespace fact::realize
