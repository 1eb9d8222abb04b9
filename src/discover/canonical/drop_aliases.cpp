// Pass drop_aliases: a node whose output is its input under another name. PyTorch:
// `x.detach()`, `torch.ops.aten.alias(x)`, `x.clone()` / `x.contiguous()` / `x.view(x.shape)`
// of the same layout (the functional graph never writes in place, so a copy is the value).
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

}  // namespace

void drop_aliases(Work& w) {
  std::vector<DroppedNode> drops;
  {
    const graph::GraphIndex g(w.graph);
    for (const auto& n : w.graph.nodes) {
      if (!is_one_of(n.op, kAliases) || n.args.empty() || !n.args[0].ref() || n.outputs.size() != 1 || !n.outputs[0].type)
        continue;
      const std::string& in = *n.args[0].ref();
      if (g.type(in) != *n.outputs[0].type) continue;
      drops.push_back({n.name, n.op, in, "an alias (its output is its input, same type)"});
    }
  }
  apply_drops(w, std::move(drops));
}

}  // namespace fact::discover::canonical
