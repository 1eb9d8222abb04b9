// Narrowed values: see narrow.h.
#include "discover/narrow.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "discover/canonical/passes.h"

namespace fact::discover {

namespace {

constexpr const char* kNarrowDtype = "bfloat16";

// One narrowing group of one pattern: its operand roles ("" = the output).
struct Group {
  size_t pattern;
  std::vector<std::string> roles;
  bool enabled = true;
};

// A value and its free views (views ATen runs outside every pattern).
struct ValueClass {
  std::string root;
  std::vector<std::string> members;  // root first, then views in discovery order
  std::set<size_t> groups;           // groups that read or write a member
  std::vector<std::string> readers;  // "p4.a", for the reason
  bool alive = true;
};

class Narrowing {
 public:
  Narrowing(const graph::GraphIndex& g, const RuleRegistry& rules, Plan& plan) : g_(g), plan_(plan) {
    for (size_t i = 0; i < plan.patterns.size(); ++i) {
      const Pattern& p = plan.patterns[i];
      for (const auto& n : p.nodes) owner_[n] = i;
      if (p.epilogue)
        for (const auto& n : p.epilogue->nodes) in_tail_.insert(n);
      const Rule* rule = rules.find(p.rule);
      if (!rule || !rule->narrow_groups || !rule->narrow) continue;
      rule_of_[i] = rule;
      for (auto& roles : rule->narrow_groups(p, plan.precision)) {
        for (const auto& r : roles) group_of_[{i, r}] = groups_.size();
        groups_.push_back({i, roles});
      }
    }
    for (const auto& o : g.graph().outputs) outputs_.insert(o);
  }

  void run() {
    make_classes();
    settle();
    apply();
  }

 private:
  // The value a pattern's group member stands for: an operand, or the output the kernel
  // writes (its fused tail's, when it has one).
  std::string value_of(size_t pattern, const std::string& role) const {
    const Pattern& p = plan_.patterns[pattern];
    if (role.empty()) return p.epilogue ? p.epilogue->output : p.output;
    for (const auto& [r, v] : p.operands)
      if (r == role) return v;
    return "";
  }

  bool is_f32(const std::string& v) const { return g_.contains(v) && g_.type(v).dtype == DType::f32; }

  // Grows the class rooted at `c.root` (a parameter or a pattern's narrowable output) by
  // its free views and records the groups that read it; false when it cannot be narrowed:
  // a member that is not fp32 or is a graph output, a reader that computes in fp32 (an ATen
  // op, a fused tail, view.dtype reinterpreting the bytes), a pattern reading it other than
  // as an operand of one of its groups, or no reader at all.
  bool grow(ValueClass& c) {
    for (size_t i = 0; i < c.members.size(); ++i) {
      const std::string v = c.members[i];
      if (!is_f32(v) || outputs_.contains(v)) return false;
      for (const graph::Node* u : g_.users(v)) {
        auto own = owner_.find(u->name);
        if (own == owner_.end()) {
          if (in_tail_.contains(u->name) || !canonical::is_view_op(u->op) || u->op == "aten.view.dtype") return false;
          for (const auto& o : u->outputs)
            if (o.type && std::find(c.members.begin(), c.members.end(), o.name) == c.members.end())
              c.members.push_back(o.name);
          continue;
        }
        const Pattern& p = plan_.patterns[own->second];
        bool read_as_operand = false;
        for (const auto& [role, value] : p.operands) {
          if (value != v) continue;
          auto gr = group_of_.find({own->second, role});
          if (gr == group_of_.end()) return false;
          c.groups.insert(gr->second);
          const std::string reader = p.id + "." + role;
          if (std::find(c.readers.begin(), c.readers.end(), reader) == c.readers.end()) c.readers.push_back(reader);
          read_as_operand = true;
        }
        if (!read_as_operand) return false;
      }
    }
    return !c.readers.empty();
  }

  void make_classes() {
    auto add = [&](const std::string& root, std::optional<size_t> producer_group) {
      ValueClass c{root, {root}, {}, {}, true};
      if (producer_group) c.groups.insert(*producer_group);
      if (!grow(c)) return;
      for (const auto& m : c.members) class_of_[m] = classes_.size();
      classes_.push_back(std::move(c));
    };
    for (const auto& ph : g_.graph().params)
      if (ph.kind == graph::PlaceholderKind::parameter) add(ph.name, std::nullopt);
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (const auto& r : groups_[gi].roles)
        if (r.empty()) add(value_of(groups_[gi].pattern, r), gi);
  }

  // Groups whose every member has a live class, classes whose every group is enabled.
  void settle() {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& gr : groups_) {
        if (!gr.enabled) continue;
        for (const auto& r : gr.roles) {
          auto c = class_of_.find(value_of(gr.pattern, r));
          if (c == class_of_.end() || !classes_[c->second].alive) {
            gr.enabled = false;
            changed = true;
            break;
          }
        }
      }
      for (auto& c : classes_) {
        if (!c.alive) continue;
        for (size_t gi : c.groups)
          if (!groups_[gi].enabled) {
            c.alive = false;
            changed = true;
            break;
          }
      }
    }
  }

  void apply() {
    for (const auto& gr : groups_)
      if (gr.enabled) rule_of_.at(gr.pattern)->narrow(plan_.patterns[gr.pattern], gr.roles);
    std::vector<std::pair<size_t, NarrowedValue>> out;  // (graph position, value)
    for (const auto& c : classes_) {
      if (!c.alive) continue;
      const graph::Placeholder* ph = g_.placeholder(c.root);
      std::string readers;
      for (const auto& r : c.readers) readers += (readers.empty() ? "" : ", ") + r;
      for (const auto& m : c.members) {
        const graph::Node* n = g_.producer(m);
        std::string why = m != c.root ? "a view of %" + c.root
                          : ph        ? "a parameter read only as bf16 operands (" + readers + "): converted when the module is built"
                                      : "read only as bf16 operands (" + readers + "): written in bf16";
        out.push_back({n ? g_.position(*n) + 1 : 0, {m, kNarrowDtype, std::move(why)}});
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [pos, v] : out) plan_.narrowed.push_back(std::move(v));
  }

  const graph::GraphIndex& g_;
  Plan& plan_;
  std::map<std::string, size_t> owner_;  // node -> pattern index
  std::set<std::string> in_tail_, outputs_;
  std::map<size_t, const Rule*> rule_of_;
  std::vector<Group> groups_;
  std::map<std::pair<size_t, std::string>, size_t> group_of_;
  std::vector<ValueClass> classes_;
  std::map<std::string, size_t> class_of_;
};

}  // namespace

void narrow_values(const graph::GraphIndex& graph, const RuleRegistry& rules, Plan& plan) {
  if (plan.precision != Precision::bf16) return;
  Narrowing(graph, rules, plan).run();
}

}  // namespace fact::discover
