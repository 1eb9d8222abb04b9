// Pass drop_identity_dropout: dropout that keeps every element unchanged. PyTorch:
// `F.dropout(x, p, training=False)` (an nn.Dropout in eval mode) and `F.dropout(x, 0.0, True)`
// export as aten.dropout.default(x, p, train); both are x.
#include <string_view>

#include "discover/canonical/passes.h"

namespace fact::discover::canonical {
namespace {

bool is_dropout(std::string_view op) {
  return op == "aten.dropout.default" || op == "aten.feature_dropout.default" ||
         op == "aten.alpha_dropout.default" || op == "aten.feature_alpha_dropout.default";
}

}  // namespace

void drop_identity_dropout(Work& w) {
  std::vector<DroppedNode> drops;
  {
    const graph::GraphIndex g(w.graph);
    for (const auto& n : w.graph.nodes) {
      if (!is_dropout(n.op) || n.args.size() != 3 || !n.args[0].ref() || n.outputs.size() != 1 ||
          !n.outputs[0].type || g.type(*n.args[0].ref()) != *n.outputs[0].type)
        continue;
      const std::optional<double> p = n.args[1].number();
      const bool* train = n.args[2].get_if<bool>();
      if (!p || !train) continue;
      if (*p == 0.0) drops.push_back({n.name, n.op, *n.args[0].ref(), "dropout with p = 0"});
      else if (!*train) drops.push_back({n.name, n.op, *n.args[0].ref(), "dropout with train=False"});
    }
  }
  apply_drops(w, std::move(drops));
}

}  // namespace fact::discover::canonical
