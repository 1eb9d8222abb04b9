// Stage 3, composition (docs/05-composition.md): plan + realized.json in, artifact out.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fact::compose {

struct ComposeOptions {
  std::filesystem::path plan, realized, graph, output;
  std::string nvcc;  // linker driver override
};

/// Writes output/{manifest.json, libfact_kernels.so, graph.json, report.md}. Patterns whose
/// winner is the vendor path (or that have no winner) stay ATen. Every manifest pattern names
/// its kernel ABI ("abi": the name of its family, families/family.h). Throws fact::Error
/// when realized.json has no GPU results (nothing was verified: nothing may be composed),
/// when it does not match the plan, when a pattern's rule and problem kind name different
/// families, when a FACT winner lacks what the runtime binds (Family::compose_winner: for
/// attention the problem as realization reads it, the q/k/v operands, the mask operand, an
/// object), or when linking fails.
void run_compose(const ComposeOptions& options);

/// What run_compose writes, before linking: the manifest (without "library", which linking
/// adds) and the report (render_report).
struct Composition {
  nlohmann::json manifest;
  std::string report;
};

/// The manifest and report run_compose writes, from a parsed plan and realized.json; touches
/// no file. The object files of the FACT winners to link are
/// appended to `objects`, each once. `plan_name` and `realized_name` name the documents in
/// errors. Throws fact::Error for everything run_compose rejects, and for a document that
/// lacks a member or holds a value of the wrong type ("compose: malformed <plan> or
/// <realized>: ...").
Composition compose_documents(const nlohmann::json& plan, const nlohmann::json& realized,
                              std::vector<std::filesystem::path>& objects, const std::string& plan_name,
                              const std::string& realized_name);

/// The entry of `list` (plan, realized.json or manifest patterns) whose "id" is `id`, or
/// null.
nlohmann::json find_by_id(const nlohmann::json& list, const std::string& id);

/// The fastest verified FACT kernel and vendor candidate of a realized pattern, and why the
/// first FACT kernel was quarantined: what the report says when a pattern stays ATen.
/// The pointers point into the realized pattern outcome_of was given.
struct Outcome {
  const nlohmann::json* best_cutlass = nullptr;
  const nlohmann::json* best_vendor = nullptr;
  std::string first_reason;
  int cutlass = 0;  // FACT kernels among the candidates
};
Outcome outcome_of(const nlohmann::json& realized_pattern);

/// The report (markdown) for a plan and its realization; `manifest` gives the choices.
std::string render_report(const nlohmann::json& plan, const nlohmann::json& realized,
                          const nlohmann::json& manifest);

}  // namespace fact::compose
