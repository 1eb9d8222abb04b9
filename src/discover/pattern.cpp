#include "discover/pattern.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace fact::discover {

PatternExpr PatternExpr::commutative() const {
  PatternExpr p = *this;
  p.is_commutative = true;
  return p;
}

PatternExpr PatternExpr::where(std::function<bool(const graph::Node&)> pred) const {
  PatternExpr p = *this;
  p.predicate = std::move(pred);
  return p;
}

PatternExpr PatternExpr::allowing(const std::string& key) const {
  PatternExpr p = *this;
  p.allowed_kwargs.push_back(key);
  return p;
}

PatternExpr op(std::vector<std::string> ops, std::vector<PatternExpr> operands) {
  PatternExpr p;
  p.kind = PatternExpr::Kind::op;
  p.ops = std::move(ops);
  p.operands = std::move(operands);
  return p;
}

PatternExpr capture(std::string name) {
  PatternExpr p;
  p.kind = PatternExpr::Kind::capture;
  p.name = std::move(name);
  return p;
}

PatternExpr number(double value, double rel_tol) {
  PatternExpr p;
  p.kind = PatternExpr::Kind::number;
  p.value = value;
  p.rel_tol = rel_tol;
  return p;
}

PatternExpr number_capture(std::string name) {
  PatternExpr p;
  p.kind = PatternExpr::Kind::number;
  p.name = std::move(name);
  p.rel_tol = -1;  // any value
  return p;
}

PatternExpr none_arg() {
  PatternExpr p;
  p.kind = PatternExpr::Kind::none;
  return p;
}

PatternExpr any_of(std::vector<PatternExpr> choices) {
  PatternExpr p;
  p.kind = PatternExpr::Kind::any_of;
  p.operands = std::move(choices);
  return p;
}

namespace {

using graph::Arg;
using graph::Node;

// A partial match while the tree is walked.
struct Partial {
  PatternMatch m;
  std::set<const Node*> seen;
};

// `in` with `name` bound to `v` in one of its maps (values or numbers): unchanged when it
// is already bound to `v`, no extension when it is bound to something else.
template <class V>
std::vector<Partial> bound(const Partial& in, std::map<std::string, V> PatternMatch::*map, const std::string& name,
                          const V& v) {
  auto it = (in.m.*map).find(name);
  if (it != (in.m.*map).end()) return it->second == v ? std::vector<Partial>{in} : std::vector<Partial>{};
  Partial out = in;
  (out.m.*map)[name] = v;
  return {out};
}

class Matcher {
 public:
  explicit Matcher(const graph::GraphIndex& g) : g_(g) {}

  // Every extension of `in` under which `p` matches argument `a`.
  std::vector<Partial> arg(const PatternExpr& p, const Arg& a, const Partial& in) const {
    switch (p.kind) {
      case PatternExpr::Kind::capture: {
        const std::string* v = a.ref();
        if (!v) return {};
        return bound(in, &PatternMatch::values, p.name, *v);
      }
      case PatternExpr::Kind::number: {
        auto v = a.number();
        if (!v) return {};
        if (p.rel_tol >= 0 && std::abs(*v - p.value) > p.rel_tol * std::abs(p.value)) return {};
        if (p.name.empty()) return {in};
        return bound(in, &PatternMatch::numbers, p.name, *v);
      }
      case PatternExpr::Kind::none:
        return a.is<graph::None>() ? std::vector<Partial>{in} : std::vector<Partial>{};
      case PatternExpr::Kind::any_of: {
        std::vector<Partial> out;
        for (const PatternExpr& choice : p.operands) {
          auto r = arg(choice, a, in);
          out.insert(out.end(), r.begin(), r.end());
        }
        return out;
      }
      case PatternExpr::Kind::op: {
        const std::string* v = a.ref();
        if (!v) return {};
        const Node* n = g_.producer(*v);
        if (!n || n->outputs.size() != 1) return {};
        return node(p, *n, in);
      }
    }
    return {};
  }

  // Every extension of `in` under which op pattern `p` matches node `n`.
  std::vector<Partial> node(const PatternExpr& p, const Node& n, const Partial& in) const {
    if (std::find(p.ops.begin(), p.ops.end(), n.op) == p.ops.end()) return {};
    if (n.args.size() != p.operands.size()) return {};
    for (const auto& [key, value] : n.kwargs) {
      if (std::find(p.allowed_kwargs.begin(), p.allowed_kwargs.end(), key) == p.allowed_kwargs.end()) return {};
    }
    if (p.predicate && !p.predicate(n)) return {};
    std::vector<std::vector<size_t>> orders{{}};
    for (size_t i = 0; i < p.operands.size(); ++i) orders[0].push_back(i);
    if (p.is_commutative && p.operands.size() >= 2) {
      orders.push_back(orders[0]);
      std::swap(orders[1][0], orders[1][1]);
    }
    std::vector<Partial> out;
    for (const auto& order : orders) {
      std::vector<Partial> partials{in};
      for (size_t i = 0; i < p.operands.size() && !partials.empty(); ++i) {
        std::vector<Partial> next;
        for (const Partial& part : partials) {
          auto r = arg(p.operands[i], n.args[order[i]], part);
          next.insert(next.end(), r.begin(), r.end());
        }
        partials = std::move(next);
      }
      for (Partial& part : partials) {
        if (part.seen.insert(&n).second) part.m.nodes.push_back(&n);
        out.push_back(std::move(part));
      }
    }
    return out;
  }

 private:
  const graph::GraphIndex& g_;
};

}  // namespace

std::vector<PatternMatch> match_all(const graph::GraphIndex& g, const PatternExpr& pattern, const Node& root) {
  if (pattern.kind != PatternExpr::Kind::op) return {};
  Matcher matcher(g);
  std::vector<PatternMatch> out;
  for (Partial& part : matcher.node(pattern, root, Partial{})) {
    std::sort(part.m.nodes.begin(), part.m.nodes.end(),
              [&](const Node* a, const Node* b) { return g.position(*a) < g.position(*b); });
    const bool duplicate = std::any_of(out.begin(), out.end(), [&](const PatternMatch& m) {
      return m.values == part.m.values && m.numbers == part.m.numbers && m.nodes == part.m.nodes;
    });
    if (!duplicate) out.push_back(std::move(part.m));
  }
  return out;
}

std::optional<PatternMatch> match_first(const graph::GraphIndex& g, const PatternExpr& pattern, const Node& root) {
  auto all = match_all(g, pattern, root);
  if (all.empty()) return std::nullopt;
  return std::move(all.front());
}

std::string read_outside(const graph::GraphIndex& g, const std::set<std::string>& values,
                         const std::set<const Node*>& inside, std::string_view cannot, std::string_view outside) {
  const auto& outputs = g.graph().outputs;
  for (const auto& v : values) {
    if (std::find(outputs.begin(), outputs.end(), v) != outputs.end()) {
      return fmt::format("%{} is a graph output, so it cannot {}", v, cannot);
    }
    for (const Node* user : g.users(v)) {
      if (!inside.count(user)) return fmt::format("%{} is also read by %{}, {}", v, user->name, outside);
    }
  }
  return "";
}

std::string single_use_violation(const graph::GraphIndex& g, const PatternMatch& m) {
  if (m.nodes.empty()) return "";
  std::set<std::string> interior;
  for (const Node* n : m.nodes) {
    if (n == m.nodes.back()) continue;  // the root's value is the match's output
    for (const auto& v : n->outputs) interior.insert(v.name);
  }
  return read_outside(g, interior, std::set<const Node*>(m.nodes.begin(), m.nodes.end()),
                      "vanish inside the match", "outside the match");
}

}  // namespace fact::discover
