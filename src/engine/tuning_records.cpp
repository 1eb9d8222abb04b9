#include "engine/tuning_records.h"

#include <set>
#include <string_view>


using nlohmann::json;

namespace fact::realize {

registry::RecordKey tuning_key(const json& problem, const GpuInfo& gpu, const Toolchain& tc,
                               Precision policy) {
  // nlohmann::json keeps object keys sorted: dump() is canonical.
  return {json(problem).dump(), gpu.name, std::to_string(gpu.cc_major) + "." + std::to_string(gpu.cc_minor),
          gpu.driver, gpu.runtime, tc.nvcc_version_text, tc.cutlass_version, tc.flags_text(),
          std::string(precision_name(policy))};
}

void set_build_fields(json& c, const BuildResult& b) {
  c["key"] = b.key;
  c["cached"] = b.cached;  // compiled by an earlier run
  if (b.ok) {
    c["object"] = b.object.string();
    c["library"] = b.library.string();
    c["symbol"] = b.symbol.empty() ? kernel_symbol(b.name) : b.symbol;
  } else {
    c.erase("object");
    c.erase("library");
    c.erase("symbol");
  }
}

void set_candidate_build_fields(json& c, const std::map<std::string, BuildResult>& built) {
  auto it = built.find(candidate_kernel(c.value("kernel", "")));
  if (it == built.end()) {
    c.erase("object");
    c.erase("library");
    return;
  }
  set_build_fields(c, it->second);
}

bool replay_record(const registry::TuningRecord& record,
                   const std::map<std::string, BuildResult>& built,
                   const std::vector<std::string>& kernels, json& out) {
  // A kernel this run built that the record never timed (a larger --tune-budget, a
  // widened space) could win: tune again.
  std::set<std::string> tuned;
  for (const auto& c : record.candidates) {
    // A companion kernel the record's candidates ran (a vendor GEMM's tail kernel).
    if (c.contains("companion") && c.at("companion").is_object()) tuned.insert(c.at("companion").value("kernel", ""));
    if (c.value("impl", "") != "cutlass") continue;
    const std::string kernel = candidate_kernel(c.value("kernel", ""));
    // A candidate quarantined at build time (no verification figures) that builds now
    // was never timed.
    auto b = built.find(kernel);
    const bool failed_to_build = c.value("status", "") != "ok" && !c.contains("tolerance");
    if (failed_to_build && b != built.end() && b->second.ok) continue;
    tuned.insert(kernel);
  }
  for (const auto& k : kernels) {
    if (!tuned.count(k)) return false;
  }
  if (record.winner_impl == "cutlass") {
    auto it = built.find(candidate_kernel(record.winner));
    if (it == built.end() || !it->second.ok) return false;
    // The winner verified was this very build (same source, toolchain and flags): another
    // build of the same name (a changed template) has not been verified.
    for (const auto& c : record.candidates) {
      if (c.value("kernel", "") == record.winner && c.value("key", "") != it->second.key) return false;
    }
  }
  json cands = record.candidates.is_array() ? record.candidates : json::array();
  for (auto& c : cands) {
    if (c.value("impl", "") == "cutlass") set_candidate_build_fields(c, built);
    // A companion kernel (a vendor GEMM's tail kernel) is part of what was verified: the
    // winner's must be this run's build of the same source.
    if (c.contains("companion") && c.at("companion").is_object()) {
      json& k = c["companion"];
      auto it = built.find(k.value("kernel", ""));
      if (c.value("kernel", "") == record.winner && (it == built.end() || !it->second.ok || k.value("key", "") != it->second.key)) {
        return false;
      }
      if (it != built.end()) set_build_fields(k, it->second);
    }
  }
  out["candidates"] = cands;
  out["winner"] = record.winner;
  out["winner_impl"] = record.winner_impl;
  out["tune_s"] = 0.0;
  out["registry"] = "hit (tuned " + record.created + ")";
  return true;
}

registry::TuningRecord make_record(const registry::RecordKey& key, const json& out) {
  registry::TuningRecord r;
  r.key = key;
  r.winner = out.at("winner").get<std::string>();
  r.winner_impl = out.at("winner_impl").get<std::string>();
  r.candidates = out.at("candidates");
  for (const auto& c : r.candidates) {
    if (c.value("kernel", "") == r.winner) r.median_ms = c.value("median_ms", 0.0);
  }
  return r;
}

}  // namespace fact::realize
