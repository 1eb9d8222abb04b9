#include "engine/kernel_template.h"

#include <regex>

#include "base/error.h"

namespace fact::realize {

std::string fill_placeholders(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    const std::string needle = "{{" + key + "}}";
    for (auto pos = text.find(needle); pos != std::string::npos;
         pos = text.find(needle, pos + value.size())) {
      text.replace(pos, needle.size(), value);
    }
  }
  static const std::regex placeholder(R"(\{\{[A-Z_]+\}\})");
  if (std::smatch m; std::regex_search(text, m, placeholder)) {
    throw Error("kernel template: unfilled placeholder " + m.str());
  }
  return text;
}

const char* cuda_element_name(DType d) {
  switch (d) {
    case DType::f32: return "float";
    case DType::bf16: return "__nv_bfloat16";
    case DType::f16: return "__half";
    default: break;  // no kernel computes in another dtype
  }
  return "?";
}

}  // namespace fact::realize
