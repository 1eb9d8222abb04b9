// Pass shape_only_readers: an op that reads a tensor for its shape only is rewritten to name
// the shape, so the tensor loses a reader. PyTorch: `m.expand_as(scores)` is
// `m.expand(scores.shape)`: the scores are not read (a rule that needs them read once, like
// attention's, still takes them).
#include "discover/canonical/passes.h"

namespace fact::discover::canonical {

void shape_only_readers(Work& w) {
  for (auto& n : w.graph.nodes) {
    if (n.op != "aten.expand_as.default" || n.args.size() != 2 || !n.args[0].ref() || !n.args[1].ref() ||
        n.outputs.size() != 1 || !n.outputs[0].type)
      continue;
    graph::Arg::List shape;
    for (int64_t d : n.outputs[0].type->shape) shape.emplace_back(d);
    n.op = "aten.expand.default";
    n.args[1] = graph::Arg(std::move(shape));
    w.rewritten.insert(n.name);
  }
}

}  // namespace fact::discover::canonical
