// Renders a fused-attention kernel's translation unit from its template
// (src/families/attention/templates/: the attention_sm80*.cu.in or the attention_sm90*.cu.in parts,
// each concatenated into one text by the build; both embedded in factc).
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

/// The .cu source of an sm90 configuration (`config.sm90` set): `template_text` (the
/// attention_sm90 template) with {{NAME}}, {{ABI}}, {{ELEMENT}} (__nv_bfloat16 | __half),
/// {{HEAD_DIM}}, {{MASK}} (0-4), {{BLOCK_M}}, {{BLOCK_N}}, {{MIN_BLOCKS}} and the schedule's
/// {{STAGES}}, {{CONSUMER_WG}}, {{OVERLAP}}, {{PINGPONG}}, {{PERSISTENT}}, {{EPILOGUE}},
/// {{L2HINT}}, {{LAZY_RESCALE}}, {{CHAIN}}, {{CLUSTER}}, {{PRODUCER_REGS}} (flags 0 | 1) filled
/// in. It builds with the toolchain's flags like every kernel (-std=c++17 -O3 for sm_90a,
/// CUTLASS's include directory for CuTe's wgmma structs). Throws fact::Error for an sm80
/// configuration or a placeholder left unfilled.
std::string render_attention_sm90(const std::string& template_text, const AttentionFamily& family,
                                  const AttentionConfig& config);

/// The source of any configuration, from the embedded template of its member (sm90 when
/// `config.sm90` is set, else sm80).
std::string render_attention_kernel(const AttentionFamily& family, const AttentionConfig& config);

}  // namespace fact::realize
