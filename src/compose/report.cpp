#include <algorithm>

#include <fmt/format.h>

#include "base/json_format.h"
#include "compose/compose.h"
#include "families/family.h"

using nlohmann::json;

namespace fact::compose {

namespace {
std::string num(const json& v, const char* f = "{:.4f}") {
  return v.is_number() ? fmt::format(fmt::runtime(f), v.get<double>()) : "-";
}
// A manifest pattern's family: the one its "abi" names, else its problem's kind; null for
// an entry no family owns.
const families::Family* family_of(const json& m) {
  const families::Family* f = families::find_family(m.value("abi", ""));
  return f ? f : families::family_of_problem(m.value("problem", json()));
}
// The family's text of a static problem; a symbolic one (sizes "4*B") lists its scalar
// fields, since a family's text reads integer sizes.
std::string problem_text(const json& m) {
  const families::Family* f = family_of(m);
  const json& p = m.at("problem");
  try {
    return f ? f->problem_text(p) : p.dump();
  } catch (const json::exception&) {
    std::string s;
    for (const auto& [k, v] : p.items())
      if (k != "kind" && (v.is_number_integer() || v.is_string()))
        s += (s.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    return s;
  }
}
// The speedup cell of a manifest entry (or bucket) timed against its vendor path.
std::string speedup(const json& m) {
  return m.contains("time_ms") && m.contains("vendor_ms")
             ? fmt::format("{:.2f}x", m.at("vendor_ms").get<double>() / m.at("time_ms").get<double>()) : "-";
}
std::string kernel_cell(const json& m) {
  return m.value("kernel", json()).is_null() ? "ATen" : m.at("kernel").get<std::string>();
}

// Which configuration serves which range, for every pattern with buckets (docs/04,
// "Buckets"): one row per bucket, and the line a size above every bucket follows.
std::string bucket_section(const json& manifest) {
  std::string s;
  for (const auto& m : manifest.at("patterns")) {
    if (!m.contains("buckets")) continue;
    const std::string sym = m.value("size_symbol", "?");
    if (s.empty()) s = "\n## Buckets\n\n";
    s += fmt::format("### {} ({})\n\n| {} | problem (at the upper size) | chosen | impl | vendor ms | chosen ms | speedup |\n"
                     "|---|---|---|---|---|---|---|\n", m.value("id", ""), problem_text(m), sym);
    for (const auto& b : m.at("buckets")) {
      json at = m;
      at["problem"] = b.at("problem");
      s += fmt::format("| {}..{} | {} | `{}` | {} | {} | {} | {} |\n", integer_or(b, "lo", 0), integer_or(b, "hi", 0), problem_text(at),
                       kernel_cell(b), b.value("impl", ""), num(b.value("vendor_ms", json())), num(b.value("time_ms", json())),
                       speedup(b));
    }
    const json& last = m.at("buckets").back();
    s += fmt::format("\n{} > {} runs the {}..{} bucket's configuration when its kernel accepts the size, else the "
                     "ATen ops (said once per pattern).\n\n", sym, integer_or(last, "hi", 0), integer_or(last, "lo", 0), integer_or(last, "hi", 0));
  }
  return s;
}
// The report's compile and tune seconds of a realized pattern: a kernel shared with an
// earlier pattern is charged there, a problem tuned for an earlier pattern is its tuning.
std::string compile_text(const json& r) {
  std::string s = num(r.value("compile_s", json()), "{:.1f}");
  std::string with;
  for (const auto& id : r.value("shares_kernels_with", json::array())) with += (with.empty() ? "" : ", ") + id.get<std::string>();
  return with.empty() ? s : s + " (kernels of " + with + ")";
}
std::string tune_text(const json& r) {
  return r.contains("tuned_with") ? "tuned with " + r.at("tuned_with").get<std::string>()
                                  : num(r.value("tune_s", json()), "{:.1f}");
}
}  // namespace

Outcome outcome_of(const json& r) {
  Outcome o;
  if (!r.contains("candidates")) return o;
  // The pointers are into r itself (value() would iterate over a copy, gone after the loop).
  for (const auto& c : r.at("candidates")) {
    const bool ok = c.value("status", "") == "ok";
    o.cutlass += c.value("impl", "") == "cutlass";
    const json*& best = c.value("impl", "") == "cutlass" ? o.best_cutlass : o.best_vendor;
    if (ok && (!best || c.at("median_ms").get<double>() < best->at("median_ms").get<double>())) best = &c;
    if (!ok && c.value("impl", "") == "cutlass" && o.first_reason.empty()) o.first_reason = c.value("reason", "");
  }
  return o;
}


std::string render_report(const json& plan, const json& realized, const json& manifest) {
  std::string s = "# FACT report\n\n";
  s += fmt::format("- GPU: {} (cc {}), CUDA driver API {}, runtime {}\n", realized.value("gpu", "?"),
                   realized.value("cc", "?"), realized.value("driver", "?"), realized.value("cuda_runtime", "?"));
  s += fmt::format("- Precision policy: `{}`; nvcc {}; CUTLASS {}\n\n", realized.value("policy", "?"),
                   realized.value("nvcc", "?"), realized.value("cutlass", "?"));
  s += "## Patterns\n\n| id | nodes | rule | problem | chosen | impl | vendor ms | chosen ms | speedup | max rel err | compile s | tune s |\n";
  s += "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : manifest.at("patterns")) {
    const json r = find_by_id(realized.at("patterns"), m.value("id", ""));
    std::string nodes;
    for (const auto& n : m.at("nodes")) nodes += (nodes.empty() ? "" : ", ") + n.get<std::string>();
    const std::string chosen = m.contains("buckets") ? fmt::format("{} buckets of {} (below)", m.at("buckets").size(),
                                                                   m.value("size_symbol", "?"))
                                                     : "`" + kernel_cell(m) + "`";
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", m.value("id", ""), nodes,
                     m.value("rule", ""), problem_text(m), chosen, m.value("impl", ""),
                     num(m.value("vendor_ms", json())), num(m.value("time_ms", json())), speedup(m),
                     num(m.value("max_rel_err", json()), "{:.2e}"), compile_text(r), tune_text(r));
  }
  s += bucket_section(manifest);
  // Each family's note under the table, when one of its patterns is in it.
  std::vector<bool> mine(families::families().size(), false);
  for (const auto& m : manifest.at("patterns")) {
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = mine[i] || family_of(m) == families::families()[i];
  }
  for (size_t i = 0; i < mine.size(); ++i)
    if (mine[i]) s += families::families()[i]->table_note();
  s += "\n## Candidates\n\n";
  std::vector<json> entries;  // a bucketed pattern's candidates are its buckets'
  for (const auto& r : realized.at("patterns")) {
    if (!r.contains("buckets")) entries.push_back(r);
    for (const auto& b : r.value("buckets", json::array())) {
      json e = b;
      e["id"] = fmt::format("{} [{} {}..{}]", r.value("id", ""), r.value("symbol", ""), integer_or(b, "lo", 0), integer_or(b, "hi", 0));
      entries.push_back(std::move(e));
    }
  }
  for (const auto& r : entries) {
    s += fmt::format("### {}\n\n", r.value("id", ""));
    if (r.contains("cutlass_unavailable")) s += "CUTLASS candidates: none (" + r.at("cutlass_unavailable").get<std::string>() + ")\n\n";
    s += "| kernel | impl | status | median ms | min ms | max ms | max rel err | reason |\n|---|---|---|---|---|---|---|---|\n";
    for (const auto& c : r.value("candidates", json::array())) {
      s += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", c.value("kernel", ""), c.value("impl", ""),
                       c.value("status", ""), num(c.value("median_ms", json())), num(c.value("min_ms", json())),
                       num(c.value("max_ms", json())), num(c.value("max_rel_err", json()), "{:.2e}"), c.value("reason", ""));
    }
    s += "\n";
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    try {
      s += families::families()[i]->report_section(plan, realized, manifest, mine[i]);
    } catch (const json::exception& e) {
      // A family's section reads static sizes; a symbolic problem it cannot read is said.
      s += fmt::format("\n(the {} section could not be rendered: {})\n", families::families()[i]->name(), e.what());
    }
  }
  s += "\n## Left to ATen\n\n";
  bool any = false;
  for (const auto& f : plan.value("rejected", json::array())) {
    s += fmt::format("- `{}` ({}): rejected by rule {}: {}\n", f.value("node", ""), f.value("op", ""), f.value("rule", ""), f.value("reason", ""));
    any = true;
  }
  for (const auto& f : plan.value("fallback", json::array())) {
    s += fmt::format("- `{}` ({}): {}\n", f.value("node", ""), f.value("op", ""), f.value("reason", ""));
    any = true;
  }
  for (const families::Family* f : families::families()) {
    const std::string lines = f->left_to_aten(plan, manifest);
    s += lines;
    any = any || !lines.empty();
  }
  for (const auto& m : manifest.at("patterns")) {
    if (m.value("impl", "") == "vendor") {
      const families::Family* f = family_of(m);
      const std::string what = f ? f->vendor_text(m) : std::string("its ATen op");
      s += fmt::format("- pattern {} runs {}: {}\n", m.value("id", ""), what,
                       m.at("kernel").is_null() ? "no verified candidate" : "the vendor path was fastest");
      any = true;
    }
  }
  if (!any) s += "Nothing: every node is inside a FACT pattern.\n";
  return s;
}

}  // namespace fact::compose
