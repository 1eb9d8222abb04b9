// Pass drop_aliases: a node whose output is its input under another name. PyTorch:
// `x.detach()`, `torch.ops.aten.alias(x)`, `x.contiguous()` / `x.view(x.shape)` of the same
// layout (each returns x's storage), and `x.clone()` of the same layout when no in-place op
// left in the graph (functional_inplace took the others) writes into x's storage or the
// clone's: then the copy and x hold the same elements for as long as either is read.
#include <string_view>

#include "discover/canonical/passes.h"

namespace fact::discover::canonical {
namespace {

// Ops whose output equals their first argument's value whenever the two types are equal.
constexpr std::string_view kAliases[] = {
    "aten.alias.default",     "aten.detach.default",       "aten.lift_fresh_copy.default",
    "aten.clone.default",     "aten.contiguous.default",   "aten.view.default",
    "aten.reshape.default",   "aten._unsafe_view.default", "aten.expand.default",
};

// Ops that copy: their output is a new storage holding their first argument's elements.
constexpr std::string_view kCopies[] = {"aten.clone.default", "aten.lift_fresh_copy.default"};

}  // namespace

void drop_aliases(Work& w) {
  std::vector<DroppedNode> drops;
  {
    const graph::GraphIndex g(w.graph);
    std::set<std::string> written;  // storage roots an in-place op writes into
    for (const auto& n : w.graph.nodes)
      if (is_in_place(n.op) && !n.args.empty() && n.args[0].ref()) written.insert(storage_root(g, *n.args[0].ref()));
    for (const auto& n : w.graph.nodes) {
      if (!is_one_of(n.op, kAliases) || n.args.empty() || !n.args[0].ref() || n.outputs.size() != 1 || !n.outputs[0].type)
        continue;
      const std::string& in = *n.args[0].ref();
      if (g.type(in) != *n.outputs[0].type) continue;
      if (is_one_of(n.op, kCopies) && (written.contains(storage_root(g, in)) || written.contains(n.name))) continue;
      drops.push_back({n.name, n.op, in, "an alias (its output is its input, same type)"});
    }
  }
  apply_drops(w, std::move(drops));
}

}  // namespace fact::discover::canonical
