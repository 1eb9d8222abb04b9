// Pass drop_noop_casts: a cast to the dtype (and layout) the tensor already has is the
// tensor. PyTorch: `x.to(x.dtype)`, `x.float()` of a float32 x, `x.type_as(y)` with y of x's
// dtype, `softmax(x, -1, dtype=torch.float32)` of a float32 x (exported as a softmax and a
// to). A type_as that does change the dtype is rewritten to `to(x, dtype)`: it reads y only
// for its dtype, and y must not count as read.
#include <string_view>

#include "discover/canonical/passes.h"

namespace fact::discover::canonical {
namespace {

bool is_cast(std::string_view op) {
  return op == "aten.to.dtype" || op == "aten.to.dtype_layout" || op == "aten._to_copy.default" ||
         op == "aten.type_as.default" || op == "aten.to.other";
}

// A device argument: the graph does not record where values live, so such a cast may move one.
bool names_device(const graph::Node& n) {
  const graph::Arg* d = n.kwarg("device");
  return d && !d->is<graph::None>();
}

}  // namespace

void drop_noop_casts(Work& w) {
  std::vector<DroppedNode> drops;
  {
    const graph::GraphIndex g(w.graph);
    for (auto& n : w.graph.nodes) {
      if (!is_cast(n.op) || n.args.empty() || !n.args[0].ref() || n.outputs.size() != 1 || !n.outputs[0].type ||
          names_device(n))
        continue;
      const std::string in = *n.args[0].ref();
      const graph::TensorType& out = *n.outputs[0].type;
      if (g.type(in) == out) {
        drops.push_back({n.name, n.op, in, "a cast to its own dtype"});
      } else if (n.op == "aten.type_as.default" || n.op == "aten.to.other") {
        n.op = "aten.to.dtype";
        n.args = {graph::Ref{in}, graph::ScalarType{out.dtype}};
        n.kwargs.clear();
        w.rewritten.insert(n.name);
      }
    }
  }
  apply_drops(w, std::move(drops));
}

}  // namespace fact::discover::canonical
