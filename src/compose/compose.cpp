#include "compose/compose.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json_format.h"
#include "base/process.h"
#include "engine/toolchain.h"
#include "families/family.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace fact::compose {

json find_by_id(const json& list, const std::string& id) {
  for (const auto& p : list) if (p.value("id", "") == id) return p;
  return nullptr;
}

namespace {

json find_candidate(const json& pattern, const std::string& kernel) {
  for (const auto& c : pattern.value("candidates", json::array())) {
    if (c.value("kernel", "") == kernel) return c;
  }
  return nullptr;
}

}  // namespace

namespace {

// One pattern's manifest entry from its plan pattern and realized entry `r`: its winner's
// kernel, or the vendor path. A FACT winner's object is added to `objects` once.
json compose_entry(const std::string& id, const json& pat, const json& r, const families::Family& family,
                   std::vector<fs::path>& objects, std::set<std::string>& seen_objects) {
  const std::string abi(family.name());
  json m{{"id", id}, {"rule", pat.value("rule", "")}, {"abi", abi}, {"nodes", pat.at("nodes")},
         {"output", pat.at("output")}, {"operands", pat.at("operands")}, {"problem", pat.at("problem")},
         {"impl", "vendor"}, {"kernel", nullptr}, {"symbol", nullptr}, {"workspace_bytes", 0}};
  // The fastest vendor candidate's time is the "before" of the report.
  for (const auto& c : r.value("candidates", json::array())) {
    if (c.value("impl", "") != "vendor" || c.value("status", "") != "ok") continue;
    if (!m.contains("vendor_ms") || c.at("median_ms").get<double>() < m["vendor_ms"].get<double>()) {
      m["vendor_ms"] = c.at("median_ms");
    }
  }
  if (!r.at("winner").is_null()) {
    const json w = find_candidate(r, r.at("winner"));
    if (w.is_null() || w.value("status", "") != "ok") {
      throw Error("realized.json's winner for pattern " + id + " is not a verified candidate");
    }
    m["kernel"] = w.at("kernel");
    m["impl"] = w.at("impl");
    m["verified"] = true;
    m["max_rel_err"] = w.value("max_rel_err", json());  // null for a timed-only vendor bound
    m["time_ms"] = w.at("median_ms");
    if (w.at("impl") == "cutlass") {
      // What the runtime binds, checked and completed by the family (symbol, fused tail).
      family.compose_winner(id, pat, r, w, m);
      if (w.contains("workspace_bytes") && !(w.at("workspace_bytes").is_number_integer() && w.at("workspace_bytes") >= 0))
        throw Error("realized.json's winner for pattern " + id + ": workspace_bytes " + w.at("workspace_bytes").dump() +
                    " is not a byte count");
      m["workspace_bytes"] = integer_or(w, "workspace_bytes", 0);
      if (w.contains("runtime")) m["runtime"] = w.at("runtime");
      // Realize could only bound the ATen path: the runtime times the two (fact.aten_check).
      if (r.contains("aten_check")) m["aten_check"] = r.at("aten_check");
      if (seen_objects.insert(w.at("object")).second) objects.emplace_back(w.at("object").get<std::string>());
    } else if (w.contains("companion")) {
      // A vendor winner that runs a generated kernel besides the library (a GEMM's tail
      // kernel): the family records how the runtime calls it, and it is linked.
      family.compose_winner(id, pat, r, w, m);
      const json& object = w.at("companion").at("object");
      if (seen_objects.insert(object).second) objects.emplace_back(object.get<std::string>());
    }
  } else {
    m["verified"] = false;
    m["note"] = "no candidate passed verification: the pattern stays ATen";
  }
  return m;
}

// A symbolic pattern's entry (docs/05, "Buckets"): the plan's symbolic problem, its symbol,
// and per bucket {"lo", "hi", "problem", "impl", "kernel", "symbol", ...} as compose_entry
// gives them for the bucket's static problem, in increasing order. The entry's "impl" is
// "cutlass" when some bucket runs a FACT kernel.
json compose_buckets(const std::string& id, const json& pat, const json& r, const families::Family& family,
                     std::vector<fs::path>& objects, std::set<std::string>& seen_objects) {
  json m{{"id", id}, {"rule", pat.value("rule", "")}, {"abi", std::string(family.name())}, {"nodes", pat.at("nodes")},
         {"output", pat.at("output")}, {"operands", pat.at("operands")}, {"problem", pat.at("problem")},
         {"impl", "vendor"}, {"kernel", nullptr}, {"symbol", nullptr}, {"size_symbol", r.at("symbol")},
         {"workspace_bytes", 0}, {"buckets", json::array()}};
  // Every bucket replaces the same nodes: when one bucket's kernel fuses the tail, the
  // pattern spans it, and a bucket whose kernel does not runs the vendor path (its ATen ops).
  std::vector<json> entries;
  for (const auto& b : r.at("buckets")) {
    json bp = pat;
    bp["problem"] = b.at("problem");
    entries.push_back(compose_entry(id, bp, b, family, objects, seen_objects));
    if (entries.back().value("fused", false)) {
      for (const char* k : {"nodes", "output", "epilogue", "fused"}) m[k] = entries.back().at(k);
    }
  }
  const bool fused = m.value("fused", false);
  for (size_t i = 0; i < entries.size(); ++i) {
    json& e = entries[i];
    if (fused && e.value("impl", "") == "cutlass" && !e.value("fused", false)) {
      e["impl"] = "vendor";
      e["note"] = "its kernel does not fuse the tail another bucket's kernel fuses: this bucket runs the ATen ops";
    }
    for (const char* k : {"id", "rule", "abi", "nodes", "output", "operands", "epilogue", "fused"}) e.erase(k);
    json bucket{{"lo", r.at("buckets")[i].at("lo")}, {"hi", r.at("buckets")[i].at("hi")}};
    bucket.update(e);
    if (bucket.value("impl", "") == "cutlass") m["impl"] = "cutlass";
    m["buckets"].push_back(std::move(bucket));
  }
  return m;
}
}  // namespace

Composition compose_documents(const json& plan, const json& realized, std::vector<fs::path>& objects,
                              const std::string& plan_name, const std::string& realized_name) {
  try {
    if (plan.value("format", "") != "fact.plan") throw Error(plan_name + " is not a FACT plan");
    if (realized.value("format", "") != "fact.realized") throw Error(realized_name + " is not realized.json");
    if (integer_or(realized, "version", 0) != 1 || (integer_or(plan, "version", 0) != 1 && integer_or(plan, "version", 0) != 2)) {
      throw Error("compose reads plans of version 1 and 2 and realized.json version 1");
    }
    if (plan.contains("precision") && plan.at("precision") != realized.at("policy")) {
      throw Error("realized.json was made under policy " + realized.at("policy").dump() +
                  " but the plan under " + plan.at("precision").dump());
    }
    if (realized.at("gpu").is_null()) {
      throw Error("realized.json holds no verified kernels (it was made without a GPU): run "
                  "`factc realize` on a machine with a GPU before composing");
    }
    json manifest{{"format", "fact.manifest"}, {"version", 1}, {"policy", realized.at("policy")},
                  {"graph", "graph.json"}, {"library", nullptr}, {"gpu", realized.at("gpu")},
                  {"cc", realized.value("cc", "")}, {"cutlass", realized.value("cutlass", "")},
                  {"nvcc", realized.value("nvcc", "")}};
    json patterns = json::array();
    std::set<std::string> seen_objects;
    for (const auto& pat : plan.at("patterns")) {
      const std::string id = pat.at("id");
      const json r = find_by_id(realized.at("patterns"), id);
      if (r.is_null()) throw Error("realized.json has no entry for pattern " + id + ": was it made from this plan?");
      if (r.value("problem", json()) != pat.at("problem")) {
        throw Error("realized.json's pattern " + id + " solved another problem than the plan's: was it made from this plan?");
      }
      // The family of the pattern's rule must be the one its problem's kind names.
      const families::Family* family = families::family_of_pattern(pat);
      if (!family || family != families::family_of_problem(pat.at("problem"))) {
        throw Error("plan pattern " + id + ": rule " + pat.value("rule", json()).dump() + " with a problem of kind " +
                    pat.at("problem").value("kind", json()).dump());
      }
      patterns.push_back(r.contains("buckets") ? compose_buckets(id, pat, r, *family, objects, seen_objects)
                                               : compose_entry(id, pat, r, *family, objects, seen_objects));
    }
    manifest["patterns"] = patterns;
    // Nodes the canonical form dropped outside every pattern: the generated module leaves them
    // out (docs/05-composition.md, "The generated module").
    json dropped = json::array();
    for (const auto& f : plan.value("fallback", json::array()))
      if (f.contains("same_as")) dropped.push_back(json{{"node", f.at("node")}, {"same_as", f.at("same_as")}});
    manifest["dropped"] = dropped;
    // Values stored in bf16 (docs/05-composition.md, "Narrowed values"); absent when none.
    if (plan.contains("narrowed") && !plan.at("narrowed").empty()) {
      json narrowed = json::array();
      for (const auto& v : plan.at("narrowed")) narrowed.push_back(json{{"value", v.at("value")}, {"dtype", v.at("dtype")}});
      manifest["narrowed"] = narrowed;
    }
    std::string report = render_report(plan, realized, manifest);
    return {std::move(manifest), std::move(report)};
  } catch (const json::exception& e) {
    // A hand-edited or truncated file: name the files rather than abort.
    throw Error("compose: malformed " + plan_name + " or " + realized_name + ": " + e.what());
  }
}

void run_compose(const ComposeOptions& opt) {
  const json plan = parse_json_document<json>(read_file(opt.plan), opt.plan.string());
  const json realized = parse_json_document<json>(read_file(opt.realized), opt.realized.string());
  std::vector<fs::path> objects;
  Composition c = compose_documents(plan, realized, objects, opt.plan.string(), opt.realized.string());
  json& manifest = c.manifest;
  fs::create_directories(opt.output);
  if (!objects.empty()) {
    const auto tc = realize::find_toolchain(opt.nvcc, "");
    const fs::path lib = opt.output / "libfact_kernels.so";
    const fs::path log = opt.output / "link.log";
    if (int rc = run_process(tc.link_command(objects, lib), log); rc != 0) {
      throw Error("linking " + lib.string() + " failed (exit " + std::to_string(rc) + "), see " + log.string());
    }
    fs::remove(log);
    manifest["library"] = "libfact_kernels.so";
  }
  if (fs::exists(opt.graph)) {
    fs::copy_file(opt.graph, opt.output / "graph.json", fs::copy_options::overwrite_existing);
  } else {
    throw Error("graph " + opt.graph.string() + " not found (pass --graph)");
  }
  write_file(opt.output / "manifest.json", manifest.dump(2) + "\n");
  write_file(opt.output / "report.md", c.report);
  if (objects.empty()) {
    std::printf("compose: %zu patterns, no FACT kernel won: no kernel library, every pattern runs the vendor path\n",
                manifest["patterns"].size());
  } else {
    std::printf("compose: %zu patterns, %zu CUTLASS kernels linked into %s\n", manifest["patterns"].size(),
                objects.size(), (opt.output / "libfact_kernels.so").c_str());
  }
}

}  // namespace fact::compose
