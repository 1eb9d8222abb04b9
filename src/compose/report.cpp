#include <fmt/format.h>

#include "compose/compose.h"

using nlohmann::json;

namespace fact::compose {

namespace {
std::string num(const json& v, const char* f = "{:.4f}") {
  return v.is_number() ? fmt::format(fmt::runtime(f), v.get<double>()) : "-";
}
std::string problem_text(const json& p) {
  return fmt::format("M={} N={} K={} L={} {} A:{} B:{}{}", p.value("m", 0), p.value("n", 0), p.value("k", 0),
                     p.value("l", 1), p.value("dtype_a", "?"), p.value("layout_a", "?"), p.value("layout_b", "?"),
                     p.contains("bias") && !p.at("bias").is_null() ? " +bias[" + p.at("bias").get<std::string>() + "]" : "");
}
}  // namespace

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
    const bool timed = m.contains("time_ms") && m.contains("vendor_ms");
    s += fmt::format("| {} | {} | {} | {} | `{}` | {} | {} | {} | {} | {} | {} | {} |\n", m.value("id", ""), nodes,
                     m.value("rule", ""), problem_text(m.at("problem")),
                     m.at("kernel").is_null() ? "ATen" : m.at("kernel").get<std::string>(), m.value("impl", ""),
                     num(m.value("vendor_ms", json())), num(m.value("time_ms", json())),
                     timed ? fmt::format("{:.2f}x", m.at("vendor_ms").get<double>() / m.at("time_ms").get<double>()) : "-",
                     num(m.value("max_rel_err", json()), "{:.2e}"), num(r.value("compile_s", json()), "{:.1f}"),
                     num(r.value("tune_s", json()), "{:.1f}"));
  }
  s += "\n## Candidates\n\n";
  for (const auto& r : realized.at("patterns")) {
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
  s += "## Fused tails\n\n";
  bool tails = false;
  for (const auto& pat : plan.at("patterns")) {
    const json& e = pat.value("epilogue", json());
    if (!e.is_object()) continue;
    tails = true;
    const json r = find_by_id(realized.at("patterns"), pat.value("id", ""));
    const json m = find_by_id(manifest.at("patterns"), pat.value("id", ""));
    std::string ops;
    for (const auto& n : e.at("nodes")) ops += (ops.empty() ? "" : ", ") + n.get<std::string>();
    std::string status;
    if (m.value("fused", false)) {
      status = "fused into `" + m.value("kernel", std::string()) + "`";
    } else if (r.is_object() && r.contains("epilogue") && !r.at("epilogue").value("fusable", true)) {
      status = "left to ATen: " + r.at("epilogue").value("reason", std::string());
    } else if (r.is_object() && r.contains("cutlass_unavailable")) {
      status = "left to ATen: no CUTLASS kernel for this problem (" + r.at("cutlass_unavailable").get<std::string>() + ")";
    } else {
      // Why the fused kernels lost: all quarantined, or the vendor path was faster.
      const json* best_fused = nullptr;
      const json* best_vendor = nullptr;
      std::string first_reason;
      for (const auto& c : r.value("candidates", json::array())) {
        const bool ok = c.value("status", "") == "ok";
        const json*& best = c.value("impl", "") == "cutlass" ? best_fused : best_vendor;
        if (ok && (!best || c.at("median_ms").get<double>() < best->at("median_ms").get<double>())) best = &c;
        if (!ok && c.value("impl", "") == "cutlass" && first_reason.empty()) first_reason = c.value("reason", "");
      }
      if (!best_fused) {
        status = "left to ATen: every fused kernel was quarantined" + (first_reason.empty() ? std::string() : " (" + first_reason + ")");
      } else if (best_vendor) {
        status = fmt::format("left to ATen: `{}` (the vendor GEMM, then the tail as ATen ops, one pass over D per node) took {:.4f} ms, the best fused kernel {:.4f} ms",
                             best_vendor->value("kernel", ""), best_vendor->at("median_ms").get<double>(),
                             best_fused->at("median_ms").get<double>());
      } else {
        status = "left to ATen: not realized on a GPU";
      }
    }
    s += fmt::format("- {}: `{}` (nodes {}) — {}\n", pat.value("id", ""), e.value("expr", ""), ops, status);
    if (r.is_object() && r.contains("verification")) {
      const json& v = r.at("verification");
      std::string skipped;
      for (const auto& d : v.value("draws", json::array())) {
        if (!d.value("informative", true)) skipped += (skipped.empty() ? "" : "; ") + d.value("draw", std::string()) + ": " + d.value("reason", std::string());
      }
      if (!skipped.empty()) s += "  - draws that could not tell right from wrong, skipped: " + skipped + "\n";
      if (!v.value("unexercised", std::string()).empty()) s += "  - branches never exercised: " + v.at("unexercised").get<std::string>() + "\n";
    }
  }
  if (!tails) s += "None: no GEMM here is followed by an elementwise tail.\n";
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
  for (const auto& pat : plan.at("patterns")) {
    const json& e = pat.value("epilogue", json());
    if (!e.is_object()) continue;
    const json m = find_by_id(manifest.at("patterns"), pat.value("id", ""));
    if (m.is_object() && m.value("fused", false)) continue;
    for (const auto& n : e.at("nodes")) {
      s += fmt::format("- `{}`: in {}'s tail, not fused (see Fused tails)\n", n.get<std::string>(), pat.value("id", ""));
      any = true;
    }
  }
  for (const auto& m : manifest.at("patterns")) {
    if (m.value("impl", "") == "vendor") {
      s += fmt::format("- pattern {} runs its ATen op (cuBLAS): {}\n", m.value("id", ""),
                       m.at("kernel").is_null() ? "no verified candidate" : "the vendor path was fastest");
      any = true;
    }
  }
  if (!any) s += "Nothing: every node is inside a FACT pattern.\n";
  return s;
}

}  // namespace fact::compose
