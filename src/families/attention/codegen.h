// Renders a fused-attention kernel's translation unit from its template
// (src/families/attention/templates/attention_sm80.cu.in, embedded in factc).
#pragma once
#include <string>

#include "families/attention/space.h"

namespace fact::realize {

/// The complete .cu source of one attention kernel: `template_text` with {{NAME}} (the kernel
/// name, also the symbol prefix), {{ABI}} (the text of attention_abi.h), {{ELEMENT}} (float |
/// __nv_bfloat16 | __half), {{MATH}} (tf32 | bf16 | f16), {{HEAD_DIM}}, {{MASK}} (0 none,
/// 1 causal, 2 additive, 3 keep, 4 drop), {{BLOCK_M}}, {{BLOCK_N}} and {{MIN_BLOCKS}} filled
/// in, so the text alone determines the object (it is hashed into the cache key).
/// Throws fact::Error when a placeholder is left unfilled.
std::string render_attention(const std::string& template_text, const AttentionFamily& family,
                             const AttentionConfig& config);

/// render_attention of the embedded attention_sm80 template.
std::string render_attention_sm80(const AttentionFamily& family, const AttentionConfig& config);

}  // namespace fact::realize
