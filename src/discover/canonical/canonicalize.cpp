// The canonical pipeline (canonical.h): the passes in the order they run, and why.
#include <map>

#include <fmt/format.h>

#include "discover/canonical/passes.h"
#include "graph/text.h"

namespace fact::discover {
namespace canonical {
namespace {

struct NamedPass {
  const char* name;
  void (*run)(Work&);
};

// The order, with the reason for each place:
//  1. drop_assertions first: an assertion reads a value without computing anything, and
//     every later pass asks "who else reads this value?" (a cast read by an assertion is
//     still a no-op, but a 0-d constant is only dead once its assertion is gone).
//  2. functional_inplace: relu_/add_/... whose write nothing else can see become relu/add/...;
//     before 3, because a clone read only by such an op is then a copy no one writes to, and
//     after 1, because an assertion on the mutated value is a reader that would keep it in place.
//  3. drop_aliases: alias/detach, same-type contiguous, and clones of values no in-place op
//     writes name a value twice; later passes compare a node's input with its output, so the
//     input must already be the real value.
//  4. drop_noop_casts: needs 3 (`x.detach().to(x.dtype)`); also rewrites type_as(x, y) into
//     to(x, dtype), so that y (read for its dtype only) loses a reader before 6 and 7.
//  5. drop_identity_dropout: dropout(p=0 or train=False) is the identity; after 4 because
//     HF casts before its dropout, and independent of what follows.
//  6. shape_only_readers: expand_as(x, y) reads only y's shape; after 1-5 so that y is the
//     value the rules see.
//  7. fold_scalar_constants last: a 0-d full()/scalar_tensor() becomes the number where an
//     elementwise op reads it, and is dropped when nothing reads it any more, which needs
//     every earlier reader (assertions, casts, shape reads) gone.
constexpr NamedPass kPasses[] = {
    {"drop_assertions", &drop_assertions},
    {"functional_inplace", &functional_inplace},
    {"drop_aliases", &drop_aliases},
    {"drop_noop_casts", &drop_noop_casts},
    {"drop_identity_dropout", &drop_identity_dropout},
    {"shape_only_readers", &shape_only_readers},
    {"fold_scalar_constants", &fold_scalar_constants},
};

void substitute(graph::Arg& a, const std::map<std::string, std::string>& to) {
  if (auto* r = std::get_if<graph::Ref>(&a.value)) {
    auto it = to.find(r->name);
    if (it != to.end()) r->name = it->second;
  } else if (auto* l = std::get_if<graph::Arg::List>(&a.value)) {
    for (auto& e : *l) substitute(e, to);
  }
}

}  // namespace

bool unread(const graph::GraphIndex& g, const std::string& value) {
  if (!g.users(value).empty()) return false;
  for (const auto& o : g.graph().outputs)
    if (o == value) return false;
  return true;
}

std::string_view aten_base_name(std::string_view op) {
  const size_t first = op.find('.'), last = op.rfind('.');
  if (first == std::string_view::npos || first == last || op.substr(0, first) != "aten") return "";
  return op.substr(first + 1, last - first - 1);
}

bool is_in_place(std::string_view op) {
  const std::string_view base = aten_base_name(op);
  return base.size() >= 2 && base.back() == '_' && base[base.size() - 2] != '_';
}

bool is_view_op(std::string_view op) {
  static constexpr std::string_view kViews[] = {
      "alias",  "detach", "view",   "_unsafe_view", "expand",     "expand_as", "t",       "transpose",
      "permute", "slice", "select", "unsqueeze",    "squeeze",    "split",     "split_with_sizes", "chunk",
      "unbind", "narrow", "as_strided", "diagonal",  "unfold",     "view_as",   "unflatten", "movedim"};
  return is_one_of(aten_base_name(op), kViews);
}

bool aliases_first_arg(std::string_view op) {
  // Besides the views: ops that return their input when nothing needs copying.
  static constexpr std::string_view kMayAlias[] = {
      "reshape", "flatten", "contiguous", "to", "type_as", "dropout", "feature_dropout",
      "alpha_dropout", "feature_alpha_dropout"};
  return is_view_op(op) || is_one_of(aten_base_name(op), kMayAlias);
}

std::string storage_root(const graph::GraphIndex& g, const std::string& value) {
  std::string v = value;
  for (const graph::Node* p = g.producer(v); p && (aliases_first_arg(p->op) || is_in_place(p->op)) &&
                                             !p->args.empty() && p->args[0].ref();
       p = g.producer(v))
    v = *p->args[0].ref();
  return v;
}

void apply_drops(Work& w, std::vector<DroppedNode> drops) {
  if (drops.empty()) return;
  std::map<std::string, std::string> to;  // dropped output -> the value it equals
  std::set<std::string> gone;
  for (const auto& d : drops) {
    gone.insert(d.node);
    if (!d.same_as.empty()) to[d.node] = d.same_as;
  }
  for (auto& [from, v] : to)  // a chain of drops: follow to a value that stays
    for (auto it = to.find(v); it != to.end() && it->first != from; it = to.find(v)) v = it->second;
  std::vector<graph::Node> kept;
  for (auto& n : w.graph.nodes) {
    if (gone.contains(n.name)) continue;
    for (auto& a : n.args) substitute(a, to);
    for (auto& [k, a] : n.kwargs) substitute(a, to);
    kept.push_back(std::move(n));
  }
  w.graph.nodes = std::move(kept);
  for (auto& o : w.graph.outputs)
    if (auto it = to.find(o); it != to.end()) o = it->second;
  for (auto& d : drops) {
    if (auto it = to.find(d.node); it != to.end()) d.same_as = it->second;
    w.dropped.push_back(std::move(d));
  }
}

}  // namespace canonical

CanonicalGraph canonicalize(const graph::Graph& graph) {
  CanonicalGraph c{graph, {}, {}};
  canonical::Work w{c.graph, c.dropped, c.rewritten};
  for (const auto& pass : canonical::kPasses) pass.run(w);
  // Graph order for the dropped list (passes append in their own order).
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < graph.nodes.size(); ++i) position[graph.nodes[i].name] = i;
  std::stable_sort(c.dropped.begin(), c.dropped.end(),
                   [&](const auto& a, const auto& b) { return position[a.node] < position[b.node]; });
  return c;
}

std::string canonical_to_text(const CanonicalGraph& c) {
  std::string s = graph::print_text(c.graph);
  for (const auto& d : c.dropped)
    s += fmt::format("# dropped %{} ({}): {}{}\n", d.node, d.op, d.why,
                     d.same_as.empty() ? "" : ", same as %" + d.same_as);
  for (const auto& r : c.rewritten) s += fmt::format("# rewritten %{}\n", r);
  return s;
}

}  // namespace fact::discover
