// Canonical plan text (golden tests, `factc discover --text`). One line per item:
//
//   plan Model precision=tf32
//   pattern p0 gemm nodes=[mm] output=%mm operands={a=%x, b=%w} problem={kind=gemm, m=64, ...}
//       estimate={flops=..., bytes=..., bound=compute, time_us=0.042, gain_us=0.002}   (one line)
//     epilogue p0 nodes=[sub, mul, relu] output=%relu expr=relu(mul(sub(acc, 2.0), 1.5)) inputs={} ...
//     epilogue-stop p0: %relu is also read by %x, outside the epilogue
//     merge-stop p3: reads %x as p1 does, but with layout_b row (p1: col)
//   rejected mm_1 aten.mm.default gemm: operand a dtype int64: ...
//   fallback relu aten.relu.default: no rule matches
//   narrowed %linear bfloat16: read only as bf16 operands (p0.q, p0.k, p0.v): written in bf16
#include <fmt/format.h>

#include "discover/plan.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

// A problem field: strings bare, null as none, floats in the graph text's double form.
std::string format_field(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "none";
  if (v.is_number_float()) return graph::format_double(v.get<double>());
  if (v.is_object()) {
    std::string s = "{";
    bool first = true;
    for (const auto& [k, e] : v.items()) s += (std::exchange(first, false) ? "" : ", ") + k + "=" + format_field(e);
    return s + "}";
  }
  if (v.is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + format_field(v[i]);
    return s + "]";
  }
  return v.dump();
}

}  // namespace

std::string plan_to_text(const Plan& plan) {
  std::string out = fmt::format("plan {} precision={}\n", plan.graph, precision_name(plan.precision));
  for (const graph::Symbol& s : plan.symbols) {
    std::string seen, buckets;
    for (size_t i = 0; i < s.seen.size(); ++i) seen += (i ? ", " : "") + std::to_string(s.seen[i]);
    for (size_t i = 0; i < s.buckets.size(); ++i) buckets += (i ? ", " : "") + std::to_string(s.buckets[i]);
    out += fmt::format("symbol {} range=[{}, {}] seen=[{}]{}{}\n", s.name, s.min, s.max ? std::to_string(*s.max) : "inf",
                       seen, s.buckets.empty() ? "" : " buckets=[" + buckets + "]",
                       s.bound ? " bound=" + std::to_string(*s.bound) : "");
  }
  for (const Pattern& p : plan.patterns) {
    std::string nodes, operands;
    for (size_t i = 0; i < p.nodes.size(); ++i) nodes += (i ? ", " : "") + p.nodes[i];
    for (size_t i = 0; i < p.operands.size(); ++i)
      operands += (i ? ", " : "") + p.operands[i].first + "=%" + p.operands[i].second;
    const Estimate& e = p.estimate;
    out += fmt::format(
        "pattern {} {} nodes=[{}] output=%{} operands={{{}}} problem={} estimate={{flops={}, "
        "bytes={}, bound={}, time_us={:.3f}, gain_us={:.3f}}}{}\n",
        p.id, p.rule, nodes, p.output, operands, format_field(p.problem), e.flops, e.bytes,
        e.bound == Bound::compute ? "compute" : "memory", e.time_us, e.gain_us,
        p.vetted_example ? " vetted=" + *p.vetted_example : "");
    if (p.epilogue) {
      const Epilogue& e = *p.epilogue;
      std::string nodes_e, inputs;
      for (size_t i = 0; i < e.nodes.size(); ++i) nodes_e += (i ? ", " : "") + e.nodes[i];
      for (size_t i = 0; i < e.inputs.size(); ++i)
        inputs += fmt::format("{}{}=%{}({})", i ? ", " : "", e.inputs[i].first, e.inputs[i].second, e.broadcast[i]);
      out += fmt::format("  epilogue {} nodes=[{}] output=%{} expr={} inputs={{{}}} saved_bytes={} gain_us={:.3f}\n",
                         p.id, nodes_e, e.output, e.expr, inputs, e.saved_bytes, p.epilogue_gain_us);
    }
    if (!p.epilogue_stop.empty()) out += fmt::format("  epilogue-stop {}: {}\n", p.id, p.epilogue_stop);
    if (!p.merge_stop.empty()) out += fmt::format("  merge-stop {}: {}\n", p.id, p.merge_stop);
  }
  for (const RejectedNode& r : plan.rejected)
    out += fmt::format("rejected {} {} {}: {}\n", r.node, r.op, r.rule, r.reason);
  for (const FallbackNode& f : plan.fallback)
    out += fmt::format("fallback {} {}: {}\n", f.node, f.op, f.reason);
  for (const NarrowedValue& v : plan.narrowed) out += fmt::format("narrowed %{} {}: {}\n", v.value, v.dtype, v.reason);
  return out;
}

}  // namespace fact::discover
