// Renders a CUTLASS kernel's translation unit from the family template.
#pragma once
#include <map>
#include <string>

#include "families/gemm/space.h"

namespace fact::realize {

/// Replaces every `{{KEY}}` of `text` by values[KEY]. Throws fact::Error naming the first
/// placeholder (`{{` upper-case letters and `_` `}}`) left unfilled.
std::string fill_placeholders(std::string text, const std::map<std::string, std::string>& values);

/// The CUDA type of an element of `d` in FACT's own templates (cuda_fp16.h, cuda_bf16.h):
/// float | __half | __nv_bfloat16.
const char* cuda_element_name(DType d);

/// The complete .cu source of one kernel: the sm90 GEMM template with the family's types
/// and the configuration substituted, and the C ABI (kernel_abi.h) pasted in, so the text
/// alone determines the object (it is hashed into the cache key).
/// Throws fact::Error if a template placeholder is left unfilled.
std::string render_gemm_sm90(const GemmFamilyKey& family, const GemmConfig& config);

}  // namespace fact::realize
