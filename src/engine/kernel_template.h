// Kernel templates (src/families/<name>/templates/*.cu.in, embedded in factc): `{{KEY}}`
// placeholders filled by a family's code generator.
#pragma once
#include <map>
#include <string>

#include "base/dtype.h"

namespace fact::realize {

/// Replaces every `{{KEY}}` of `text` by values[KEY]. Throws fact::Error naming the first
/// placeholder (`{{` upper-case letters and `_` `}}`) left unfilled.
std::string fill_placeholders(std::string text, const std::map<std::string, std::string>& values);

/// The CUDA type of an element of `d` in FACT's own templates (cuda_fp16.h, cuda_bf16.h):
/// float | __half | __nv_bfloat16; "?" for a dtype no kernel computes in.
const char* cuda_element_name(DType d);

}  // namespace fact::realize
