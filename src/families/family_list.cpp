// The kernel families FACT ships, in order. Adding a family: write src/families/<name>/
// (its Family subclass in family.cpp, with a factory declared below) and add one line to the
// list. The list rejects a duplicate name; the rule registry rejects a duplicate rule.
#include <set>

#include <fmt/format.h>

#include "base/error.h"
#include "compose/compose.h"
#include "discover/registry.h"
#include "families/family.h"

namespace fact::families {

const Family& gemm();       // src/families/gemm/family.cpp: CUTLASS sm90 GEMMs with fused epilogue trees
const Family& attention();  // src/families/attention/family.cpp: FACT's fused attention kernels
const Family& norm();       // src/families/norm/family.cpp: LayerNorm / RMSNorm rows, with the residual add
const Family& rope();       // src/families/rope/family.cpp: rotary position embeddings of q or k

const std::vector<const Family*>& families() {
  static const std::vector<const Family*> list = [] {
    std::vector<const Family*> l{&gemm(), &attention(), &norm(), &rope()};
    std::set<std::string_view> names;
    for (const Family* f : l) {
      if (!names.insert(f->name()).second) throw Error("kernel family " + std::string(f->name()) + " listed twice");
    }
    return l;
  }();
  return list;
}

const Family* find_family(std::string_view name) {
  for (const Family* f : families())
    if (f->name() == name) return f;
  return nullptr;
}

const Family* family_of_problem(const nlohmann::json& problem) {
  if (!problem.is_object() || !problem.contains("kind") || !problem.at("kind").is_string()) return nullptr;
  return find_family(problem.at("kind").get<std::string>());
}

const Family* family_of_pattern(const nlohmann::json& pattern) {
  if (!pattern.is_object()) return nullptr;
  if (pattern.contains("rule") && pattern.at("rule").is_string()) {
    if (const discover::Rule* r = discover::builtin_rules().find(pattern.at("rule").get<std::string>())) {
      return find_family(r->kernel_family);
    }
  }
  return family_of_problem(pattern.value("problem", nlohmann::json()));
}

const CandidateOutcome* PatternRealization::winner(const std::vector<CandidateOutcome>& outcomes) const {
  const CandidateOutcome* best = nullptr;
  for (const auto& o : outcomes)
    if (o.status == "ok" && (!best || o.median_ms < best->median_ms)) best = &o;
  return best;
}

const CandidateOutcome* fastest_kernel_else_bound(const std::vector<CandidateOutcome>& outcomes) {
  const CandidateOutcome* best = nullptr;
  const CandidateOutcome* bound = nullptr;
  for (const auto& o : outcomes) {
    if (o.impl == "vendor") {
      if (o.status == "ok") bound = &o;
    } else if (o.status == "ok" && (!best || o.median_ms < best->median_ms)) {
      best = &o;
    }
  }
  return best ? best : bound;
}

void compose_tailless_winner(std::string_view family, const std::string& id, const nlohmann::json& r,
                             const nlohmann::json& w, nlohmann::json& m) {
  if (r.value("fused", false)) {
    throw Error("realized.json fused a tail into " + std::string(family) + " pattern " + id + ": " +
                std::string(family) + " kernels have none");
  }
  if (!w.contains("object")) throw Error("realized.json's winner for pattern " + id + " has no object file to link");
  m["symbol"] = w.contains("symbol") ? w.at("symbol") : w.at("kernel");
}

std::string copy_bound_report_section(std::string_view family, std::string_view title, const nlohmann::json& realized,
                                      const nlohmann::json& manifest, std::string (*text)(const nlohmann::json&)) {
  std::string s = fmt::format("\n## {}\n\n", title);
  for (const auto& m : manifest.at("patterns")) {
    if (m.value("abi", "") != family) continue;
    const nlohmann::json r = compose::find_by_id(realized.at("patterns"), m.value("id", ""));
    std::string status;
    if (m.value("impl", "") == "cutlass") {
      status = fmt::format("`{}` replaces its {} nodes", m.value("kernel", std::string()), m.at("nodes").size());
      if (m.contains("time_ms")) status += fmt::format(": {:.4f} ms", m.at("time_ms").get<double>());
    } else if (r.is_object() && r.contains("cutlass_unavailable")) {
      status = "left to ATen: " + r.at("cutlass_unavailable").get<std::string>();
    } else {
      status = "left to ATen: no verified FACT kernel";
    }
    s += fmt::format("- {}: {} — {}\n", m.value("id", ""), text(m.at("problem")), status);
  }
  return s;
}

std::string copy_bound_table_note(std::string_view family) {
  return fmt::format("\nFor {} patterns, vendor ms is one copy of the bytes the fused kernel moves: a lower bound of "
                     "the ATen nodes it replaces, so the speedup shown is a lower bound too.\n", family);
}

}  // namespace fact::families
