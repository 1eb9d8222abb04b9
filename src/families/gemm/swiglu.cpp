// SwiGLU as one GEMM (swiglu.h): the problem, its families and space, names and codegen.
#include "families/gemm/swiglu.h"

#include <fmt/format.h>

#include "base/checked_int.h"
#include "base/error.h"
#include "engine/embedded_templates.h"
#include "engine/kernel_template.h"
#include "families/gemm/codegen.h"

namespace fact::realize {

bool is_swiglu_problem(const nlohmann::json& problem) {
  return problem.is_object() && problem.contains("swiglu") && problem.at("swiglu").is_object();
}

SwigluProblem swiglu_problem_from_json(const nlohmann::json& j) {
  if (!is_swiglu_problem(j)) throw Error("plan problem: no 'swiglu' object");
  const nlohmann::json& s = j.at("swiglu");
  SwigluProblem p;
  // The GEMM writes M x 2H as the space ranks it and the vendor runs it; D's ldd is H's.
  nlohmann::json gemm = j;
  gemm["ldd"] = j.value("n", nlohmann::json(0));
  gemm.erase("swiglu");
  p.gemm = gemm_problem_from_json(gemm);
  GemmProblem& g = p.gemm;
  auto refuse = [&](const std::string& why) { throw Error("plan problem: SwiGLU " + why); };
  // An integer field of `o`, 0 when absent; anything but an integer is refused by name.
  auto integer = [&](const nlohmann::json& o, const char* name) {
    if (!o.contains(name)) return int64_t{0};
    if (!o.at(name).is_number_integer()) refuse(fmt::format("field '{}' must be an integer, got {}", name, o.at(name).dump()));
    return o.at(name).get<int64_t>();
  };
  p.hidden = integer(s, "hidden");
  p.ldd = integer(j, "ldd");
  const int64_t interleave = integer(s, "interleave");
  if (interleave != kSwigluInterleave)
    refuse(fmt::format("interleave {} (the kernels pair gate and up in blocks of {})", interleave, kSwigluInterleave));
  if (p.hidden <= 0 || p.hidden % kSwigluInterleave) refuse(fmt::format("hidden {} is not a positive multiple of 8", p.hidden));
  if (g.n % 2 != 0 || g.n / 2 != p.hidden) refuse(fmt::format("n {} is not 2 * hidden {}", g.n, p.hidden));
  if (g.bias_n) refuse("with a bias (the gate and up projections have none here)");
  if (g.l != 1) refuse(fmt::format("batched (l = {})", g.l));
  if (g.alpha != 1.0 || g.beta != 0.0) refuse(fmt::format("with alpha {} and beta {} (1 and 0 only)", g.alpha, g.beta));
  if (g.layout_a != Layout::Row || g.layout_b != Layout::Col || g.ldb != g.k)
    refuse("operands: A must be row-major and B the [2H, K] interleaved weight (column-major, ldb = K)");
  if (p.ldd < p.hidden) refuse(fmt::format("ldd {} < hidden {}", p.ldd, p.hidden));
  // The output's extent, (M - 1) * ldd + hidden, which realization sizes a buffer by.
  check_below_span(p.ldd, "plan problem: SwiGLU ldd");
  check_span_bytes(checked_add(checked_mul(g.m - 1, p.ldd, "plan problem: SwiGLU output extent"), p.hidden,
                               "plan problem: SwiGLU output extent"),
                   int64_t(dtype_bytes(g.dtype_d)), "plan problem: SwiGLU output");
  return p;
}

std::vector<GemmFamilyKey> swiglu_families(const SwigluProblem& p, Precision policy, std::string& why) {
  std::vector<GemmFamilyKey> out;
  std::string gemm_why;
  for (const GemmFamilyKey& f : gemm_families(p.gemm, policy, gemm_why)) {
    const bool as_given = !f.stage_a && !f.stage_b && f.split == 1 && !f.align1_d && !gemm_transposes_problem(f);
    if (as_given && f.layout_a == Layout::Row && f.layout_b == Layout::Col && gemm_operand_element(f) == f.element)
      out.push_back(f);
  }
  if (out.empty()) {
    why = gemm_why.empty() ? fmt::format("no SwiGLU kernel reads {} operands as given under the {} policy (they would "
                                         "need staging or 3xTF32)",
                                         to_string(p.gemm.dtype_a), precision_name(policy))
                           : gemm_why;
  }
  return out;
}

std::vector<GemmKernelChoice> swiglu_kernel_choices(const std::vector<GemmFamilyKey>& families,
                                                    const SwigluProblem& p, int sm_count, int budget) {
  std::vector<GemmKernelChoice> out;
  for (const GemmKernelChoice& c : gemm_kernel_choices(families, p.gemm, sm_count, 0)) {
    if (c.config.scheduler != TileScheduler::Persistent) continue;
    if (c.config.tile_n % (2 * kSwigluInterleave)) continue;
    out.push_back(c);
    if (budget > 0 && int(out.size()) == budget) break;
  }
  return out;
}

std::string swiglu_kernel_name(const GemmFamilyKey& f, const GemmConfig& c) {
  return fmt::format("cutlass3x_sm90a_{}_rcr_{}x{}x{}_{}x{}x1_{}_persistent_swiglu{}", f.mma, c.tile_m, c.tile_n,
                     c.tile_k, c.cluster_m, c.cluster_n, c.schedule == Schedule::Cooperative ? "coop" : "pingpong",
                     kSwigluInterleave);
}

std::string render_swiglu_sm90(const GemmFamilyKey& f, const GemmConfig& c) {
  if (f.layout_a != Layout::Row || f.layout_b != Layout::Col || f.stage_a || f.stage_b || f.split != 1 || f.bias_n ||
      !f.epilogue_tree.is_null() || c.scheduler != TileScheduler::Persistent) {
    throw Error("SwiGLU kernel " + swiglu_kernel_name(f, c) +
                ": only A row-major, B column-major, unstaged, without bias or tail, persistent");
  }
  const char* element = f.element == DType::f32 ? "float" : f.element == DType::bf16 ? "cutlass::bfloat16_t"
                        : f.element == DType::f16 ? "cutlass::half_t" : nullptr;
  if (!element) throw Error("SwiGLU kernel: element type " + to_string(f.element) + " is not realized");
  const std::string name = swiglu_kernel_name(f, c);
  std::map<std::string, std::string> values = config_placeholders(c);
  values.insert({{"NAME", name}, {"SYMBOL", kernel_symbol(name)}, {"ABI", embedded::kKernelAbiHeader},
                 {"ELEMENT", element}});
  return fill_placeholders(embedded::kSwigluSm90Template, values);
}

}  // namespace fact::realize
