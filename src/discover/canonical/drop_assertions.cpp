// Pass drop_assertions: export's checks of what it traced (torch._check,
// tensor.to(dtype) lowered as _assert_tensor_metadata + to) compute nothing the graph uses;
// they are dropped so that they do not count as readers of the values they look at.
// PyTorch: `torch.ops.aten._assert_tensor_metadata(x, dtype=...)` and friends return None.
#include <string_view>

#include "discover/canonical/passes.h"

namespace fact::discover::canonical {
namespace {

constexpr std::string_view kAssertions[] = {
    "aten._assert_tensor_metadata.default", "aten._assert_scalar.default",
    "aten._assert_async.default",           "aten._assert_async.msg",
    "aten._functional_assert_async.msg",    "aten.sym_constrain_range.default",
    "aten.sym_constrain_range_for_size.default",
};

}  // namespace

void drop_assertions(Work& w) {
  std::vector<DroppedNode> drops;
  {
    const graph::GraphIndex g(w.graph);
    for (const auto& n : w.graph.nodes) {
      if (!is_one_of(n.op, kAssertions)) continue;
      bool read = false;
      for (const auto& v : n.outputs) read = read || !unread(g, v.name);
      if (!read) drops.push_back({n.name, n.op, "", "an assertion (it computes no value the graph reads)"});
    }
  }
  apply_drops(w, std::move(drops));
}

}  // namespace fact::discover::canonical
