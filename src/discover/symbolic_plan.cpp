// Discovery over a symbolic graph: plan specializations, keep what holds at all of them.
#include "discover/symbolic_plan.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "base/error.h"

namespace fact::discover {
namespace {

using json = nlohmann::ordered_json;

std::string describe(const graph::SymbolValues& v) {
  std::string out;
  for (const auto& [s, x] : v) out += (out.empty() ? "" : ",") + s + "=" + std::to_string(x);
  return out;
}

struct Sample {
  graph::SymbolValues values;
  Plan plan;
};

// The pattern of `plan` with p's rule, nodes, output and operands, or nullptr.
const Pattern* same_pattern(const Plan& plan, const Pattern& p) {
  for (const Pattern& q : plan.patterns)
    if (q.rule == p.rule && q.nodes == p.nodes && q.output == p.output && q.operands == p.operands) return &q;
  return nullptr;
}

bool same_epilogue(const Pattern& a, const Pattern& b) {
  if (a.epilogue.has_value() != b.epilogue.has_value()) return false;
  if (!a.epilogue) return true;
  const Epilogue &x = *a.epilogue, &y = *b.epilogue;
  return x.nodes == y.nodes && x.output == y.output && x.expr == y.expr && x.inputs == y.inputs &&
         x.broadcast == y.broadcast;
}

// Why the rule did not take p's nodes in `plan`: its rejection of one of them, else who did.
std::string why_missing(const Plan& plan, const Pattern& p) {
  for (const RejectedNode& r : plan.rejected)
    if (r.rule == p.rule && std::find(p.nodes.begin(), p.nodes.end(), r.node) != p.nodes.end()) return r.reason;
  for (const Pattern& q : plan.patterns)
    for (const auto& n : q.nodes)
      if (std::find(p.nodes.begin(), p.nodes.end(), n) != p.nodes.end())
        return "%" + n + " belongs to a " + q.rule + " pattern over other nodes";
  return "rule " + p.rule + " does not match";
}

// The power of symbol `s` in a size whose value is v_a at s = a and v_b at s = b (the
// other symbols equal); nullopt when no power 0..4 explains both.
std::optional<int> fit_power(int64_t v_a, int64_t a, int64_t v_b, int64_t b) {
  for (int p = 0; p <= 4; ++p) {
    // v_a * b^p == v_b * a^p, in long double (sizes stay far below its exact range).
    if (std::pow(static_cast<long double>(b), p) * v_a == std::pow(static_cast<long double>(a), p) * v_b) return p;
  }
  return std::nullopt;
}

// One problem field over the samples: the same JSON everywhere (kept), or integers that
// one monomial gives at every sample (its text). Objects and arrays are fitted per element.
// Throws fact::Error saying which field and samples disagree.
json fit_field(const std::vector<const json*>& values, const std::vector<Sample>& samples,
               const graph::SymbolicGraph& g, const std::string& path) {
  const json& base = *values[0];
  if (std::all_of(values.begin(), values.end(), [&](const json* v) { return *v == base; })) return base;
  if (base.is_object() || base.is_array()) {
    json out = base;
    for (auto it = out.begin(); it != out.end(); ++it) {
      std::vector<const json*> parts;
      for (const json* v : values) {
        const json* e = base.is_object() ? (v->is_object() && v->contains(it.key()) ? &v->at(it.key()) : nullptr)
                                         : (v->is_array() && v->size() == base.size() ? &(*v)[it - out.begin()] : nullptr);
        if (!e) throw Error(fmt::format("{}: its shape differs between the samples", path));
        parts.push_back(e);
      }
      *it = fit_field(parts, samples, g, path + "." + (base.is_object() ? it.key() : std::to_string(it - out.begin())));
    }
    return out;
  }
  for (size_t i = 0; i < values.size(); ++i)
    if (!values[i]->is_number_integer())
      throw Error(fmt::format("{} is {} at {} but {} at {}", path, base.dump(), describe(samples[0].values),
                              values[i]->dump(), describe(samples[i].values)));
  // Fit each symbol's power from the first sample that moves it alone.
  graph::Monomial m;
  const graph::SymbolValues& hint = samples[0].values;
  long double rest = values[0]->get<int64_t>();
  for (const graph::Symbol& s : g.symbols) {
    for (size_t i = 1; i < samples.size(); ++i) {
      if (samples[i].values.at(s.name) == hint.at(s.name)) continue;
      auto p = fit_power(values[0]->get<int64_t>(), hint.at(s.name), values[i]->get<int64_t>(), samples[i].values.at(s.name));
      if (!p) throw Error(fmt::format("{} is not a product of symbols: {} at {} but {} at {}", path, base.dump(),
                                      describe(hint), values[i]->dump(), describe(samples[i].values)));
      if (*p) m.powers[s.name] = *p;
      rest /= std::pow(static_cast<long double>(hint.at(s.name)), *p);
      break;
    }
  }
  if (rest < 1 || rest != std::floor(rest)) throw Error(fmt::format("{} = {} at {} has no integer coefficient", path, base.dump(), describe(hint)));
  m.coeff = static_cast<int64_t>(rest);
  for (size_t i = 0; i < values.size(); ++i)
    if (graph::evaluate(m, samples[i].values) != values[i]->get<int64_t>())
      throw Error(fmt::format("{} is not {} at {} ({})", path, graph::format_monomial(m), describe(samples[i].values),
                              values[i]->dump()));
  return graph::format_monomial(m);
}

}  // namespace

std::vector<graph::SymbolValues> sample_points(const graph::SymbolicGraph& g) {
  std::vector<graph::SymbolValues> out{g.hints()};
  for (const graph::Symbol& s : g.symbols) {
    const int64_t upper = s.max ? *s.max : graph::bucket_bound(s);
    const int64_t odd = s.min % 2 ? s.min : std::min(s.min + 1, upper);
    for (int64_t v : {s.min, odd, upper}) {
      graph::SymbolValues p = g.hints();
      p[s.name] = v;
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
    }
  }
  return out;
}

Plan make_symbolic_plan(const graph::SymbolicGraph& g, const RuleRegistry& rules, Precision precision) {
  std::vector<Sample> samples;
  for (auto& values : sample_points(g)) {
    Plan plan = make_plan(graph::specialize(g, values), rules, precision);
    samples.push_back({std::move(values), std::move(plan)});
  }
  const Plan& base = samples[0].plan;
  Plan out;
  out.graph = base.graph;
  out.precision = precision;
  out.symbols = g.symbols;
  out.rejected = base.rejected;
  std::vector<FallbackNode> dropped;
  for (const Pattern& p : base.patterns) {
    std::string reason;
    std::vector<const json*> problems{&p.problem};
    for (size_t i = 1; i < samples.size() && reason.empty(); ++i) {
      const Pattern* q = same_pattern(samples[i].plan, p);
      if (!q) reason = "at " + describe(samples[i].values) + ": " + why_missing(samples[i].plan, p);
      else if (!same_epilogue(p, *q)) reason = "at " + describe(samples[i].values) + ": another epilogue";
      else problems.push_back(&q->problem);
    }
    Pattern kept = p;
    if (reason.empty()) {
      try {
        kept.problem = fit_field(problems, samples, g, "problem");
      } catch (const Error& e) {
        reason = e.what();
      }
    }
    if (!reason.empty()) {
      // The pattern's nodes (and its epilogue's) stay ATen, with why.
      std::vector<std::string> nodes = p.nodes;
      if (p.epilogue) nodes.insert(nodes.end(), p.epilogue->nodes.begin(), p.epilogue->nodes.end());
      for (const auto& n : nodes)
        dropped.push_back({n, "", "rule " + p.rule + " matches at " + describe(samples[0].values) +
                                      " but not for every size: " + reason});
      continue;
    }
    kept.priority = static_cast<int>(out.patterns.size());
    kept.id = "p" + std::to_string(kept.priority);
    out.patterns.push_back(std::move(kept));
  }
  // Fallback in graph order: the base plan's, and the dropped patterns' nodes.
  const graph::Graph at_hint = graph::specialize(g, samples[0].values);
  for (const graph::Node& n : at_hint.nodes) {
    for (const FallbackNode& f : base.fallback)
      if (f.node == n.name) out.fallback.push_back(f);
    for (FallbackNode f : dropped)
      if (f.node == n.name) out.fallback.push_back({f.node, n.op, f.reason});
  }
  return out;
}

}  // namespace fact::discover
