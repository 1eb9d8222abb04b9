// Stage 3, composition (docs/05-composition.md): plan + realized.json in, artifact out.
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace fact::compose {

struct ComposeOptions {
  std::filesystem::path plan, realized, graph, output;
  std::string nvcc;  // linker driver override
};

/// Writes output/{manifest.json, libfact_kernels.so, graph.json, report.md}. Patterns whose
/// winner is the vendor path (or that have no winner) stay ATen. Every manifest pattern names
/// its kernel ABI ("abi": kernel_abi of its problem). Throws fact::Error when realized.json
/// has no GPU results (nothing was verified: nothing may be composed), when it does not match
/// the plan, when a pattern's rule and problem kind disagree, when an attention pattern with
/// a FACT winner lacks what the runtime binds (sizes, grouped heads, mask kind and operand,
/// q/k/v operands, strides.o, output layout) or its object, or when linking fails.
void run_compose(const ComposeOptions& options);

/// The entry of `list` (plan, realized.json or manifest patterns) whose "id" is `id`, or
/// null.
nlohmann::json find_by_id(const nlohmann::json& list, const std::string& id);

/// The kernel C ABI a problem's kernels export: "attention" (FactAttentionArgs,
/// src/families/attention/abi.h) for problems of kind "attention", else "gemm" (FactGemmArgs,
/// src/families/gemm/abi.h). The manifest's "abi" of each pattern.
std::string kernel_abi(const nlohmann::json& problem);

/// The report (markdown) for a plan and its realization; `manifest` gives the choices.
std::string render_report(const nlohmann::json& plan, const nlohmann::json& realized,
                          const nlohmann::json& manifest);

}  // namespace fact::compose
