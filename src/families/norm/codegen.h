// Renders a norm kernel's translation unit from its template
// (src/families/norm/templates/norm.cu.in, embedded in factc).
#pragma once
#include <string>

#include "families/norm/space.h"

namespace fact::realize {

/// The complete .cu source of one norm kernel: `template_text` with {{NAME}} (the kernel
/// name, also the symbol prefix), {{ABI}} (the text of norm/abi.h), {{ELEMENT}},
/// {{OUT_ELEMENT}}, {{PARAM_ELEMENT}} (float | __nv_bfloat16 | __half; float without
/// weight and bias), {{NORM}} (0 LayerNorm, 1 RMSNorm), {{COLS}}, {{HAS_RESIDUAL}},
/// {{HAS_WEIGHT}}, {{HAS_BIAS}} (true | false), {{ROWS_PER_CTA}}, {{THREADS_PER_ROW}} and
/// {{VEC}} filled in, so the text alone determines the object (it is hashed into the cache
/// key). Throws fact::Error when a placeholder is left unfilled.
std::string render_norm(const std::string& template_text, const NormKernel& kernel, const NormConfig& config);

/// render_norm of the embedded norm template.
std::string render_norm_kernel(const NormKernel& kernel, const NormConfig& config);

}  // namespace fact::realize
