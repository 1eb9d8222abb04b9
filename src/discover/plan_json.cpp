// Plan JSON writer, exactly as docs/03-rules.md specifies.
#include "discover/plan.h"

#include "base/json_format.h"
#include "base/version.h"

namespace fact::discover {

nlohmann::ordered_json plan_to_json(const Plan& plan) {
  using json = nlohmann::ordered_json;
  json patterns = json::array(), rejected = json::array(), fallback = json::array();
  for (const Pattern& p : plan.patterns) {
    json epilogue = nullptr;
    if (p.epilogue) {
      const Epilogue& e = *p.epilogue;
      json inputs = json::object(), broadcast = json::object();
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        inputs[e.inputs[i].first] = e.inputs[i].second;
        broadcast[e.inputs[i].first] = e.broadcast[i];
      }
      epilogue = json{{"nodes", e.nodes}, {"output", e.output}, {"expr", e.expr}, {"tree", e.tree},
                      {"inputs", std::move(inputs)}, {"broadcast", std::move(broadcast)},
                      {"saved_bytes", e.saved_bytes}, {"gain_us", p.epilogue_gain_us}};
    }
    json operands = json::object();
    for (const auto& [k, v] : p.operands) operands[k] = v;
    const Estimate& e = p.estimate;
    patterns.push_back(json{
        {"id", p.id}, {"rule", p.rule}, {"priority", p.priority}, {"nodes", p.nodes},
        {"output", p.output}, {"operands", std::move(operands)}, {"problem", p.problem},
        {"estimate", json{{"flops", e.flops}, {"bytes", e.bytes},
                          {"bound", e.bound == Bound::compute ? "compute" : "memory"},
                          {"time_us", e.time_us}, {"gain_us", e.gain_us}, {"reason", e.reason}}},
        {"vetted_example", p.vetted_example ? json(*p.vetted_example) : json(nullptr)},
        {"epilogue", std::move(epilogue)}});
    if (!p.epilogue_stop.empty()) patterns.back()["epilogue_stop"] = p.epilogue_stop;
    if (!p.merge_stop.empty()) patterns.back()["merge_stop"] = p.merge_stop;
  }
  for (const RejectedNode& r : plan.rejected)
    rejected.push_back(json{{"node", r.node}, {"op", r.op}, {"rule", r.rule}, {"reason", r.reason}});
  for (const FallbackNode& f : plan.fallback) {
    fallback.push_back(json{{"node", f.node}, {"op", f.op}, {"reason", f.reason}});
    if (f.same_as) fallback.back()["same_as"] = *f.same_as;
  }
  json out{{"format", "fact.plan"},
           {"version", plan.symbols.empty() ? kPlanFormatVersion : kSymbolicPlanFormatVersion},
           {"graph", plan.graph},
           {"precision", precision_name(plan.precision)}};
  if (!plan.symbols.empty()) out["symbols"] = graph::symbols_to_json(plan.symbols);
  out["patterns"] = std::move(patterns);
  out["rejected"] = std::move(rejected);
  out["fallback"] = std::move(fallback);
  if (!plan.narrowed.empty()) {
    json narrowed = json::array();
    for (const NarrowedValue& v : plan.narrowed)
      narrowed.push_back(json{{"value", v.value}, {"dtype", v.dtype}, {"reason", v.reason}});
    out["narrowed"] = std::move(narrowed);
  }
  return out;
}

std::string plan_to_json_string(const Plan& plan) { return pretty_json(plan_to_json(plan)); }

}  // namespace fact::discover
