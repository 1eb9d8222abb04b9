// Renders a rope kernel's translation unit from its template
// (src/families/rope/templates/rope.cu.in, embedded in factc).
#pragma once
#include <string>

#include "families/rope/space.h"

namespace fact::realize {

/// The complete .cu source of one rope kernel: `template_text` with {{NAME}} (the kernel
/// name, also the symbol prefix), {{ABI}} (the text of rope/abi.h), {{ELEMENT}} (float |
/// __nv_bfloat16 | __half), {{FORM}} (0 half-split, 1 pairs), {{HEAD_DIM}}, {{THREADS}} and
/// {{VEC}} filled in, so the text alone determines the object (it is hashed into the cache
/// key). Throws fact::Error when a placeholder is left unfilled.
std::string render_rope(const std::string& template_text, const RopeKernel& kernel, const RopeConfig& config);

/// render_rope of the embedded rope template.
std::string render_rope_kernel(const RopeKernel& kernel, const RopeConfig& config);

}  // namespace fact::realize
