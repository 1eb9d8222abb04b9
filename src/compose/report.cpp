#include <algorithm>

#include <fmt/format.h>

#include "compose/compose.h"

using nlohmann::json;

namespace fact::compose {

namespace {
std::string num(const json& v, const char* f = "{:.4f}") {
  return v.is_number() ? fmt::format(fmt::runtime(f), v.get<double>()) : "-";
}
std::string attention_text(const json& p) {
  const long long h = p.value("heads", 0LL), kv = std::max(1LL, p.value("kv_heads", 1LL));
  const std::string heads = h == kv ? fmt::format("H={} (MHA)", h) : fmt::format("H={} Hkv={} (GQA {}:1)", h, kv, h / kv);
  return fmt::format("attention B={} {} Tq={} Tk={} D={} {} mask:{} out:{}", p.value("batch", 0LL), heads,
                     p.value("seq_q", 0LL), p.value("seq_k", 0LL), p.value("head_dim", 0LL), p.value("dtype", "?"),
                     p.value("mask", "?"), p.value("output_layout", "?"));
}
std::string problem_text(const json& p) {
  if (kernel_abi(p) == "attention") return attention_text(p);
  return fmt::format("M={} N={} K={} L={} {} A:{} B:{}{}", p.value("m", 0), p.value("n", 0), p.value("k", 0),
                     p.value("l", 1), p.value("dtype_a", "?"), p.value("layout_a", "?"), p.value("layout_b", "?"),
                     p.contains("bias") && !p.at("bias").is_null() ? " +bias[" + p.at("bias").get<std::string>() + "]" : "");
}
// The fastest verified FACT kernel and vendor candidate of a realized pattern, and why the
// first FACT kernel was quarantined: what the report says when a pattern stays ATen.
struct Outcome {
  const json* best_cutlass = nullptr;
  const json* best_vendor = nullptr;
  std::string first_reason;
  int cutlass = 0;  // FACT kernels among the candidates
};
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
  bool attention = false;
  for (const auto& m : manifest.at("patterns")) attention |= m.value("abi", "") == "attention";
  if (attention) {
    s += "\nFor attention patterns, vendor ms is cuBLAS's two GEMMs alone (QK^T and PV; the scale, mask, softmax "
         "and copies the ATen nodes also run are not counted): a lower bound of the time the kernel replaces, so "
         "the speedup shown is a lower bound too.\n";
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
      const Outcome o = outcome_of(r);
      const json* best_fused = o.best_cutlass;
      const json* best_vendor = o.best_vendor;
      const std::string& first_reason = o.first_reason;
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
    if (m.value("fused", false) && r.is_object() && r.contains("epilogue")) {
      for (const auto& n : r.at("epilogue").value("ranges", json::array())) s += "  - by range, in the kernel: " + n.get<std::string>() + "\n";
    }
    if (r.is_object() && r.contains("verification")) {
      const json& v = r.at("verification");
      std::string skipped;
      for (const auto& d : v.value("draws", json::array())) {
        if (!d.value("informative", true)) skipped += (skipped.empty() ? "" : "; ") + d.value("draw", std::string()) + ": " + d.value("reason", std::string());
      }
      if (!skipped.empty()) s += "  - draws that could not tell right from wrong, skipped: " + skipped + "\n";
      if (!v.value("unexercised", std::string()).empty()) s += "  - branches never exercised: " + v.at("unexercised").get<std::string>() + "\n";
      if (!v.value("unreachable", std::string()).empty()) s += "  - branches no input can take (by range): " + v.at("unreachable").get<std::string>() + "\n";
    }
  }
  if (!tails) s += "None: no GEMM here is followed by an elementwise tail.\n";
  if (attention) {
    s += "\n## Attention\n\n";
    for (const auto& m : manifest.at("patterns")) {
      if (m.value("abi", "") != "attention") continue;
      const json& p = m.at("problem");
      const json r = find_by_id(realized.at("patterns"), m.value("id", ""));
      const long long h = p.value("heads", 0LL), kv = std::max(1LL, p.value("kv_heads", 1LL));
      std::string status;
      if (m.value("impl", "") == "cutlass") {
        status = fmt::format("`{}` replaces its {} nodes", m.value("kernel", std::string()), m.at("nodes").size());
        if (m.contains("time_ms")) status += fmt::format(": {:.4f} ms", m.at("time_ms").get<double>());
        if (m.contains("vendor_ms")) status += fmt::format(", the ATen nodes at least {:.4f} ms (cuBLAS's GEMMs alone)", m.at("vendor_ms").get<double>());
      } else if (r.is_object() && r.contains("cutlass_unavailable")) {
        status = "left to ATen: no FACT kernel for this problem (" + r.at("cutlass_unavailable").get<std::string>() + ")";
      } else {
        const Outcome o = r.is_object() ? outcome_of(r) : Outcome{};
        if (o.cutlass == 0) {
          status = "left to ATen: no FACT kernel was a candidate";
        } else if (!o.best_cutlass) {
          status = "left to ATen: every FACT kernel was quarantined" + (o.first_reason.empty() ? std::string() : " (" + o.first_reason + ")");
        } else if (o.best_vendor) {
          status = fmt::format("left to ATen: cuBLAS's GEMMs alone (`{}`, a lower bound of the ATen nodes) took {:.4f} ms, the best FACT kernel {:.4f} ms",
                               o.best_vendor->value("kernel", ""), o.best_vendor->at("median_ms").get<double>(),
                               o.best_cutlass->at("median_ms").get<double>());
        } else {
          status = "left to ATen: no verified candidate";
        }
      }
      s += fmt::format("- {}: mask {}, {} heads{}, head dim {}, Tq x Tk {}x{}, {}, output {} — {}\n", m.value("id", ""),
                       p.value("mask", "?"), h, h == kv ? std::string(" (MHA)") : fmt::format(" over {} K/V heads (GQA ratio {})", kv, h / kv),
                       p.value("head_dim", 0LL), p.value("seq_q", 0LL), p.value("seq_k", 0LL), p.value("dtype", "?"),
                       p.value("output_layout", "?"), status);
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
      const std::string what = m.value("abi", "") == "attention"
                                   ? fmt::format("its {} ATen nodes (the matmuls on cuBLAS)", m.at("nodes").size())
                                   : std::string("its ATen op (cuBLAS)");
      s += fmt::format("- pattern {} runs {}: {}\n", m.value("id", ""), what,
                       m.at("kernel").is_null() ? "no verified candidate" : "the vendor path was fastest");
      any = true;
    }
  }
  if (!any) s += "Nothing: every node is inside a FACT pattern.\n";
  return s;
}

}  // namespace fact::compose
