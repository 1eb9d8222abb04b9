#include "families/gemm/epilogue/tail_codegen.h"

#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "engine/embedded_templates.h"
#include "engine/kernel_template.h"
#include "families/gemm/epilogue/program.h"
#include "families/gemm/space.h"

namespace fact::realize {

namespace {

const char* dtype_token(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    default: break;
  }
  throw Error("tail kernel: D of dtype " + to_string(d) + " (fp32, bf16 and fp16 only)");
}

// A double as C++ source that reads back to the same value.
std::string double_literal(double v) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_huge_val()" : "-__builtin_huge_val()";
  return fmt::format("{:a}", v);  // hexadecimal: exact
}

// program.h's text with its FACT includes (host_device.h, op_table.h) replaced by those
// headers' text, without their `#pragma once` (the source is a main file).
std::string program_header() {
  std::string text = embedded::kEpilogueProgramHeader;
  for (const auto& [include, header] : {std::pair{"#include \"engine/host_device.h\"", embedded::kHostDeviceHeader},
                                        std::pair{"#include \"families/gemm/epilogue/op_table.h\"", embedded::kEpilogueOpTableHeader}}) {
    const auto at = text.find(include);
    if (at == std::string::npos) throw Error(std::string("tail kernel: program.h no longer has ") + include);
    text.replace(at, std::string_view(include).size(), header);
  }
  for (auto p = text.find("#pragma once\n"); p != std::string::npos; p = text.find("#pragma once\n")) text.erase(p, 13);
  return text;
}

}  // namespace

std::string tail_kernel_name(const nlohmann::json& tree, const nlohmann::json& broadcast, DType dtype) {
  return fmt::format("fact_tail_{}_{}", dtype_token(dtype), epilogue_token(tree, broadcast));
}

std::string render_tail_kernel(const nlohmann::json& tree, const nlohmann::json& broadcast, DType dtype) {
  const std::string name = tail_kernel_name(tree, broadcast, dtype);
  const EpilogueProgram prog = compile_epilogue(tree);
  int kinds[4] = {0, 0, 0, 0};
  if (broadcast.is_object()) {
    for (const auto& [slot, kind] : broadcast.items()) {
      const int i = epilogue_input_slot(slot);
      if (i < 0) throw Error("tail kernel: input '" + slot + "' is not c0..c3");
      const std::string k = kind.is_string() ? kind.get<std::string>() : kind.dump();
      if (k == "n") kinds[i] = 1;
      else if (k == "m") kinds[i] = 2;
      else if (k == "mn") kinds[i] = 3;
      else throw Error("tail kernel: input " + slot + " has broadcast '" + k + "', not n, m or mn");
    }
  }
  for (int i = 0; i < prog.size; ++i) {
    if (prog.code[i].op == EpiOp::input && kinds[int(prog.code[i].value)] == 0) {
      throw Error("tail kernel: the tail reads " + epilogue_input_name(size_t(prog.code[i].value)) + ", which has no broadcast kind");
    }
  }
  std::string code = "{";
  for (int i = 0; i < prog.size; ++i) {
    code += fmt::format("{}{{static_cast<fact::realize::EpiOp>({}), {}}}", i ? ", " : "", int(prog.code[i].op),
                        double_literal(prog.code[i].value));
  }
  code += "}";
  return fill_placeholders(embedded::kTailElementwiseTemplate, {
      {"NAME", name},
      {"SYMBOL", kernel_symbol(name)},
      {"TREE", tree.dump()},
      {"ABI", embedded::kKernelAbiHeader},
      {"PROGRAM_HEADER", program_header()},
      {"ELEMENT", cuda_element_name(dtype)},
      {"KINDS", fmt::format("{}, {}, {}, {}", kinds[0], kinds[1], kinds[2], kinds[3])},
      {"PROGRAM", code},
      {"SIZE", std::to_string(prog.size)},
  });
}

}  // namespace fact::realize
