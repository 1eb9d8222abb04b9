// The planner: every rule over every node -> estimate -> overlap resolution -> priorities.
#include <algorithm>
#include <map>
#include <set>

#include "discover/canonical/canonical.h"
#include "discover/canonical/passes.h"
#include "discover/plan.h"
#include "discover/narrow.h"

namespace fact::discover {
namespace {

// The reason of a view op no pattern takes (canonical::is_view_op): ATen runs it by setting
// sizes and strides on the same storage.
constexpr std::string_view kFreeView = "a view: sizes and strides change, no element is copied (ATen runs it at no cost)";

// Bytes the ATen path moves for `nodes` (node names: a node with no output or a tuple of
// them is named apart from its values): each node reads its tensor arguments (each
// distinct value once) and writes its outputs.
int64_t unfused_bytes(const graph::GraphIndex& g, const std::vector<std::string>& nodes) {
  std::map<std::string_view, const graph::Node*> by_name;
  for (const auto& n : g.graph().nodes) by_name.emplace(n.name, &n);
  int64_t bytes = 0;
  for (const auto& name : nodes) {
    auto it = by_name.find(name);
    if (it == by_name.end() || it->second->outputs.empty()) continue;  // an assertion reads nothing it keeps
    const graph::Node* n = it->second;
    std::set<std::string> read;
    auto add = [&](const std::string& v) {
      if (read.insert(v).second) bytes += tensor_bytes(g.type(v));
    };
    for (const auto& a : n->args) graph::for_each_ref(a, add);
    for (const auto& [k, a] : n->kwargs) graph::for_each_ref(a, add);
    for (const auto& v : n->outputs)
      if (v.type) bytes += tensor_bytes(*v.type);
  }
  return bytes;
}

// A rule's answer for `node`: its match function's result, or the Rejection its helpers threw
// (reject(), rule.h) — caught here once for every rule.
MatchResult run_match(const Rule& rule, const MatchContext& ctx, const graph::Node& node) {
  try {
    return rule.match(ctx, node);
  } catch (const Rejection& r) {
    return r;
  }
}

struct Candidate {
  const Rule* rule;
  size_t position;  // of the node the rule matched from
  Match match;
  Estimate estimate;
};

// A planned pattern's smaller matches (Match::smaller) with their estimates, and the gains
// that compare them with a tail: of the pattern and of each smaller match, over the
// canonical graph's nodes only (as a tail's saved bytes are counted).
struct Smaller {
  double canonical_gain_us = 0;
  std::vector<std::pair<Match, Estimate>> matches;
  std::vector<double> canonical_gains_us;
};

// Step 2b's swap. The tail `tail` (gaining `tail_gain_us`) of a GEMM pattern is stopped by a
// node of pattern `q`: when one of q's smaller matches leaves every node of the tail out, and
// it and the tail together gain more than q, q becomes that match, the nodes it leaves out
// are no longer covered, and the result is true.
bool yield_to_tail(Pattern& q, const Smaller& smaller, const Epilogue& tail, double tail_gain_us,
                   std::map<std::string, std::string>& covered_by) {
  for (size_t i = 0; i < smaller.matches.size(); ++i) {
    const auto& [m, e] = smaller.matches[i];
    const std::set<std::string> kept(m.nodes.begin(), m.nodes.end());
    const bool clear = std::none_of(tail.nodes.begin(), tail.nodes.end(), [&](const auto& n) { return kept.contains(n); });
    if (!clear || smaller.canonical_gains_us[i] + tail_gain_us <= smaller.canonical_gain_us) continue;
    for (const auto& n : q.nodes)
      if (!kept.contains(n)) covered_by.erase(n);
    q.nodes = m.nodes;
    q.output = m.output;
    q.extra_outputs = m.extra_outputs;
    q.operands = m.operands;
    q.problem = m.problem;
    q.estimate = e;
    return true;
  }
  return false;
}

}  // namespace

Plan make_plan(const graph::Graph& exported, const RuleRegistry& rules, Precision precision) {
  // 0. Every rule sees the canonical graph (discover/canonical/canonical.h).
  const CanonicalGraph canonical = canonicalize(exported);
  const graph::Graph& graph = canonical.graph;
  const graph::GraphIndex index(graph), exported_index(exported);
  const MatchContext ctx{index, precision};

  // 1. Every rule over every node.
  std::vector<Candidate> candidates;
  std::vector<RejectedNode> rejections;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const graph::Node& node = graph.nodes[i];
    for (const Rule& rule : rules.rules()) {
      MatchResult r = run_match(rule, ctx, node);
      if (auto* m = std::get_if<Match>(&r)) {
        Estimate e =
            estimate(m->work, unfused_bytes(exported_index, exported_nodes(exported_index, canonical, m->nodes, m->output)));
        candidates.push_back({&rule, i, std::move(*m), std::move(e)});
      } else if (auto* rej = std::get_if<Rejection>(&r)) {
        rejections.push_back({node.name, node.op, std::string(rule.name), rej->reason});
      }
    }
  }

  // 2. Overlaps: larger gain first; ties go to the earlier node, then the earlier rule.
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    if (a.estimate.gain_us != b.estimate.gain_us) return a.estimate.gain_us > b.estimate.gain_us;
    return a.position < b.position;
  });
  Plan plan;
  plan.graph = graph.name;
  plan.precision = precision;
  std::map<std::string, std::string> covered_by;  // node -> pattern id
  std::map<std::string, std::string> lost_to;     // node -> reason it is in no pattern
  std::map<std::string, Smaller> smaller_of;      // pattern id -> its smaller matches
  for (auto& c : candidates) {
    auto taken = std::find_if(c.match.nodes.begin(), c.match.nodes.end(),
                              [&](const auto& n) { return covered_by.contains(n); });
    if (taken != c.match.nodes.end()) {
      for (const auto& n : c.match.nodes)
        if (!covered_by.contains(n))
          lost_to.emplace(n, "rule " + std::string(c.rule->name) + " matched, but its match overlaps " +
                                 covered_by[*taken] + " (larger gain)");
      continue;
    }
    Pattern p;
    p.priority = static_cast<int>(plan.patterns.size());
    p.id = "p" + std::to_string(p.priority);
    p.rule = c.rule->name;
    p.nodes = c.match.nodes;
    p.output = c.match.output;
    p.extra_outputs = c.match.extra_outputs;
    p.operands = std::move(c.match.operands);
    p.problem = std::move(c.match.problem);
    p.estimate = std::move(c.estimate);
    if (!c.match.smaller.empty()) {
      Smaller& s = smaller_of[p.id];
      s.canonical_gain_us = estimate(c.match.work, unfused_bytes(index, c.match.nodes)).gain_us;
      for (auto& m : c.match.smaller) {
        s.canonical_gains_us.push_back(estimate(m.work, unfused_bytes(index, m.nodes)).gain_us);
        Estimate e = estimate(m.work, unfused_bytes(exported_index, exported_nodes(exported_index, canonical, m.nodes, m.output)));
        s.matches.emplace_back(std::move(m), std::move(e));
      }
    }
    for (const auto& n : p.nodes) covered_by[n] = p.id;
    plan.patterns.push_back(std::move(p));
  }

  // 2b. Epilogues: the elementwise tail after each GEMM pattern, in priority order; a
  //     node belongs to at most one tail. A tail that reaches into another pattern takes
  //     the nodes that pattern can leave out (the residual add of an add & norm), when the
  //     two gain more that way (yield_to_tail).
  std::map<std::string, std::string> in_tail_of;  // node -> pattern id
  std::map<std::string, Pattern*> by_id;
  for (Pattern& p : plan.patterns) by_id[p.id] = &p;
  for (Pattern& p : plan.patterns) {
    const Rule* rule = rules.find(p.rule);
    if (!rule->find_tail) continue;
    EpilogueSearch found = rule->find_tail(index, p.output);
    p.epilogue_stop = found.stop;
    if (!found.epilogue) continue;
    auto is_taken = [&](const auto& n) { return in_tail_of.contains(n) || covered_by.contains(n); };
    auto taken = std::find_if(found.epilogue->nodes.begin(), found.epilogue->nodes.end(), is_taken);
    if (taken != found.epilogue->nodes.end() && !in_tail_of.contains(*taken) &&
        yield_to_tail(*by_id.at(covered_by[*taken]), smaller_of[covered_by[*taken]], *found.epilogue,
                      double(found.epilogue->saved_bytes) / kH200.hbm_bytes_per_s * 1e6, covered_by))
      taken = std::find_if(found.epilogue->nodes.begin(), found.epilogue->nodes.end(), is_taken);
    if (taken != found.epilogue->nodes.end()) {
      p.epilogue_stop = "%" + *taken + " already belongs to " +
                        (in_tail_of.contains(*taken) ? in_tail_of[*taken] + "'s epilogue" : covered_by[*taken]);
      continue;
    }
    p.epilogue = std::move(found.epilogue);
    p.epilogue_gain_us = double(p.epilogue->saved_bytes) / kH200.hbm_bytes_per_s * 1e6;
    for (const auto& n : p.epilogue->nodes) in_tail_of[n] = p.id;
  }

  // 2c. Merges: patterns one kernel can run together (Rule::merge), after the epilogues,
  //     because a pattern with a tail of its own is not merged.
  for (const Rule& rule : rules.rules())
    if (rule.merge) rule.merge(index, plan);
  for (Pattern& p : plan.patterns)
    for (const auto& n : p.nodes) covered_by[n] = p.id;

  // 3. Every node outside the patterns and their tails: rejected (with each rule's reason)
  //    or fallback. A tail's nodes belong to its pattern: realization fuses them or says why
  //    not, and the report lists them either way.
  std::set<std::string> rejected;
  for (auto& r : rejections)
    if (!covered_by.contains(r.node)) {
      rejected.insert(r.node);
      plan.rejected.push_back(std::move(r));
    }
  for (const auto& node : graph.nodes) {
    if (covered_by.contains(node.name) || in_tail_of.contains(node.name) || rejected.contains(node.name)) continue;
    auto lost = lost_to.find(node.name);
    plan.fallback.push_back({node.name, node.op,
                             lost != lost_to.end()          ? lost->second
                             : canonical::is_view_op(node.op) ? std::string(kFreeView)
                                                              : "no rule matches"});
  }
  // 4. The nodes the canonical form dropped: into the pattern they sit inside, or fallback.
  restore_dropped(exported, canonical, plan);
  // 5. Values every reader rounds to bf16 anyway are stored in bf16 (discover/narrow.h),
  //    over the final patterns (restore_dropped may give a pattern up).
  narrow_values(index, rules, plan);
  return plan;
}

}  // namespace fact::discover
