// The kernel families FACT ships, in order. Adding a family: write src/families/<name>/
// (its Family subclass in family.cpp, with a factory declared below) and add one line to the
// list. The list rejects a duplicate name; the rule registry rejects a duplicate rule.
#include <set>

#include "base/error.h"
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

}  // namespace fact::families
