// The planner: every rule over every node -> estimate -> overlap resolution -> priorities.
#include <algorithm>
#include <map>
#include <set>

#include "discover/canonical/canonical.h"
#include "discover/plan.h"
#include "families/gemm/epilogue/through_views.h"

namespace fact::discover {
namespace {

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
    for (const auto& n : p.nodes) covered_by[n] = p.id;
    plan.patterns.push_back(std::move(p));
  }

  // 2b. Epilogues: the elementwise tail after each GEMM pattern, in priority order; a
  //     node belongs to at most one tail.
  std::map<std::string, std::string> in_tail_of;  // node -> pattern id
  for (Pattern& p : plan.patterns) {
    if (!rules.find(p.rule)->takes_tail) continue;
    EpilogueSearch found = find_epilogue_through_views(index, p.output);
    p.epilogue_stop = found.stop;
    if (!found.epilogue) continue;
    auto taken = std::find_if(found.epilogue->nodes.begin(), found.epilogue->nodes.end(),
                              [&](const auto& n) { return in_tail_of.contains(n) || covered_by.contains(n); });
    if (taken != found.epilogue->nodes.end()) {
      p.epilogue_stop = "%" + *taken + " already belongs to " +
                        (in_tail_of.contains(*taken) ? in_tail_of[*taken] + "'s epilogue" : covered_by[*taken]);
      continue;
    }
    p.epilogue = std::move(found.epilogue);
    p.epilogue_gain_us = double(p.epilogue->saved_bytes) / kH200.hbm_bytes_per_s * 1e6;
    for (const auto& n : p.epilogue->nodes) in_tail_of[n] = p.id;
  }

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
    plan.fallback.push_back(
        {node.name, node.op, lost != lost_to.end() ? lost->second : "no rule matches"});
  }
  // 4. The nodes the canonical form dropped: into the pattern they sit inside, or fallback.
  restore_dropped(exported, canonical, plan);
  return plan;
}

}  // namespace fact::discover
