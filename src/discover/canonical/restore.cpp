// restore_dropped (canonical.h): the plan, made over the canonical graph, made consistent
// with the exported graph the runtime runs (docs/03-rules.md, "Canonical form").
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "discover/canonical/canonical.h"
#include "discover/plan.h"

namespace fact::discover {
namespace {

using graph::GraphIndex;
using graph::Node;

struct Restore {
  const GraphIndex& g;
  const CanonicalGraph& c;
  std::map<std::string, const DroppedNode*> dropped;  // node -> why
  std::set<std::string> candidates;                   // dropped or rewritten nodes
  std::map<std::string, size_t> position;

  Restore(const GraphIndex& exported, const CanonicalGraph& canonical) : g(exported), c(canonical) {
    for (size_t i = 0; i < g.graph().nodes.size(); ++i) position[g.graph().nodes[i].name] = i;
    for (const auto& d : c.dropped) {
      dropped[d.node] = &d;
      candidates.insert(d.node);
    }
    candidates.insert(c.rewritten.begin(), c.rewritten.end());
  }

  const Node& node(const std::string& name) const { return g.graph().nodes[position.at(name)]; }

  // True when `n` reads a value the members compute that is none of `outputs` (the values
  // the kernel writes, which any node may read).
  bool reads_inner(const Node& n, const std::set<std::string>& members, const std::set<std::string>& outputs) const {
    bool inner = false;
    auto visit = [&](const std::string& v) {
      const Node* p = g.producer(v);
      inner = inner || (p && members.contains(p->name) && !outputs.contains(v));
    };
    for (const auto& a : n.args) graph::for_each_ref(a, visit);
    for (const auto& [k, a] : n.kwargs) graph::for_each_ref(a, visit);
    return inner;
  }

  bool read_only_by(const Node& n, const std::set<std::string>& members) const {
    if (n.outputs.empty()) return false;
    for (const auto& v : n.outputs) {
      for (const auto& o : g.graph().outputs)
        if (o == v.name) return false;
      const auto users = g.users(v.name);
      if (users.empty()) return false;
      for (const Node* u : users)
        if (!members.contains(u->name)) return false;
    }
    return true;
  }

  bool read_by_a_member(const Node& n, const std::set<std::string>& members) const {
    for (const auto& v : n.outputs)
      for (const Node* u : g.users(v.name))
        if (members.contains(u->name)) return true;
    return false;
  }

  // True when `n` was dropped as equal to a value the kernel writes (`outputs`): an alias of
  // it, such as `h.float()` of an fp32 sum that both the norm and a later residual add read.
  bool aliases_output(const std::string& name, const std::set<std::string>& outputs) const {
    const auto it = dropped.find(name);
    return it != dropped.end() && !it->second->same_as.empty() && outputs.contains(it->second->same_as);
  }

  // Adds to `list` (and `members`) every dropped or rewritten node that reads one of the
  // members' inner values, every dropped node only the members read, and every dropped alias
  // of a written value that a member reads, until none is left. An alias's outputs join
  // `outputs`: it equals a value the kernel writes, so nodes outside may read it (the runtime
  // runs it as its ATen op after the kernel).
  void close(std::vector<std::string>& list, std::set<std::string>& members, std::set<std::string>& outputs) const {
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& name : candidates) {
        if (members.contains(name)) continue;
        const Node& n = node(name);
        const bool alias = aliases_output(name, outputs) && read_by_a_member(n, members);
        if (!alias && !reads_inner(n, members, outputs) && !(dropped.contains(name) && read_only_by(n, members)))
          continue;
        members.insert(name);
        list.push_back(name);
        if (alias)
          for (const auto& v : n.outputs) outputs.insert(v.name);
        changed = true;
      }
    }
  }

  // The first node outside `members` that reads one of their inner values, as a reason; "" if none.
  std::string leak(const std::set<std::string>& members, const std::set<std::string>& output) const {
    for (const auto& n : g.graph().nodes)
      if (!members.contains(n.name) && reads_inner(n, members, output))
        return fmt::format("%{} ({}) reads a value inside the pattern, which the canonical form did not show "
                           "the rule", n.name, n.op);
    return "";
  }

  void sort(std::vector<std::string>& nodes) const {
    std::sort(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) { return position.at(a) < position.at(b); });
  }
};

}  // namespace

std::vector<std::string> exported_nodes(const GraphIndex& exported, const CanonicalGraph& c,
                                        const std::vector<std::string>& nodes, const std::string& output) {
  if (c.dropped.empty() && c.rewritten.empty()) return nodes;
  const Restore r(exported, c);
  std::vector<std::string> list = nodes;
  std::set<std::string> members(nodes.begin(), nodes.end());
  std::set<std::string> outputs{output};
  r.close(list, members, outputs);
  r.sort(list);
  return list;
}

void restore_dropped(const graph::Graph& original, const CanonicalGraph& c, Plan& plan) {
  if (c.dropped.empty() && c.rewritten.empty()) return;
  const GraphIndex g(original);
  const Restore r(g, c);
  std::set<std::string> joined;  // dropped nodes now in a pattern
  std::vector<Pattern> kept;
  for (Pattern& p : plan.patterns) {
    std::set<std::string> members(p.nodes.begin(), p.nodes.end());
    std::set<std::string> outputs(p.extra_outputs.begin(), p.extra_outputs.end());
    outputs.insert(p.output);
    r.close(p.nodes, members, outputs);
    std::string why = r.leak(members, outputs);
    for (const auto& [role, value] : p.operands)  // the kernel reads its operands: none computed inside
      if (const Node* n = g.contains(value) ? g.producer(value) : nullptr; why.empty() && n && members.contains(n->name))
        why = fmt::format("its operand {} = %{} is computed by %{}, which the canonical form dropped", role, value, n->name);
    if (p.epilogue && why.empty()) {
      members.insert(p.epilogue->nodes.begin(), p.epilogue->nodes.end());
      outputs.insert(p.epilogue->output);
      outputs.erase(p.output);  // the tail's output is the kernel's now
      r.close(p.epilogue->nodes, members, outputs);
      why = r.leak(members, outputs);
      r.sort(p.epilogue->nodes);
    }
    r.sort(p.nodes);
    if (why.empty()) {
      kept.push_back(std::move(p));
      continue;
    }
    joined.insert(members.begin(), members.end());  // listed here, once: a rewritten member
    std::erase_if(plan.fallback, [&](const auto& f) { return members.contains(f.node); });  // was listed already
    for (const auto& n : members)
      plan.fallback.push_back({n, r.node(n).op, "rule " + p.rule + " matched, but " + why});
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    kept[i].priority = static_cast<int>(i);
    kept[i].id = fmt::format("p{}", i);
  }
  plan.patterns = std::move(kept);
  std::set<std::string> in_pattern;
  for (const auto& p : plan.patterns) {
    in_pattern.insert(p.nodes.begin(), p.nodes.end());
    if (p.epilogue) in_pattern.insert(p.epilogue->nodes.begin(), p.epilogue->nodes.end());
  }
  joined.insert(in_pattern.begin(), in_pattern.end());
  // A rewritten node that joined a pattern is no longer fallback or rejected.
  std::erase_if(plan.fallback, [&](const auto& f) { return c.rewritten.contains(f.node) && in_pattern.contains(f.node); });
  std::erase_if(plan.rejected, [&](const auto& f) { return c.rewritten.contains(f.node) && in_pattern.contains(f.node); });
  for (auto& f : plan.fallback)  // a rewritten node is listed with the op the graph has
    if (c.rewritten.contains(f.node)) f.op = r.node(f.node).op;
  for (auto& rej : plan.rejected)
    if (c.rewritten.contains(rej.node)) rej.op = r.node(rej.node).op;
  for (const auto& d : c.dropped)
    if (!joined.contains(d.node))
      plan.fallback.push_back({d.node, d.op, "the canonical form drops it: " + d.why +
                                                 (d.same_as.empty() ? "" : ", same as %" + d.same_as),
                               d.same_as});
  std::stable_sort(plan.fallback.begin(), plan.fallback.end(),
                   [&](const auto& a, const auto& b) { return r.position.at(a.node) < r.position.at(b.node); });
}

}  // namespace fact::discover
