#include "families/norm/codegen.h"

#include "engine/embedded_templates.h"
#include "engine/kernel_template.h"

namespace fact::realize {

namespace {
const char* boolean(bool b) { return b ? "true" : "false"; }
}  // namespace

std::string render_norm(const std::string& template_text, const NormKernel& k, const NormConfig& c) {
  return fill_placeholders(template_text, {
      {"NAME", norm_kernel_name(k, c)},
      {"ABI", embedded::kNormAbiHeader},
      {"ELEMENT", cuda_element_name(k.element)},
      {"OUT_ELEMENT", cuda_element_name(k.out)},
      {"PARAM_ELEMENT", cuda_element_name(k.param.value_or(DType::f32))},
      {"NORM", k.norm == NormKind::layer ? "0" : "1"},
      {"COLS", std::to_string(k.cols)},
      {"HAS_RESIDUAL", boolean(k.residual)},
      {"HAS_WEIGHT", boolean(k.weight)},
      {"HAS_BIAS", boolean(k.bias)},
      {"ROWS_PER_CTA", std::to_string(c.rows_per_cta)},
      {"THREADS_PER_ROW", std::to_string(c.threads_per_row)},
      {"VEC", std::to_string(c.vec)},
  });
}

std::string render_norm_kernel(const NormKernel& k, const NormConfig& c) {
  return render_norm(embedded::kNormTemplate, k, c);
}

}  // namespace fact::realize
