#include "families/rope/codegen.h"

#include "engine/embedded_templates.h"
#include "engine/kernel_template.h"

namespace fact::realize {

std::string render_rope(const std::string& template_text, const RopeKernel& k, const RopeConfig& c) {
  return fill_placeholders(template_text, {
      {"NAME", rope_kernel_name(k, c)},
      {"ABI", embedded::kRopeAbiHeader},
      {"ELEMENT", cuda_element_name(k.element)},
      {"ELEMENT_OUT", cuda_element_name(k.out_element.value_or(k.element))},
      {"FORM", k.form == RopeForm::half ? "0" : "1"},
      {"HEAD_DIM", std::to_string(k.head_dim)},
      {"THREADS", std::to_string(c.threads)},
      {"VEC", std::to_string(c.vec)},
  });
}

std::string render_rope_kernel(const RopeKernel& k, const RopeConfig& c) {
  return render_rope(embedded::kRopeTemplate, k, c);
}

}  // namespace fact::realize
