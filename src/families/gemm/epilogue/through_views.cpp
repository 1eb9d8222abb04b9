// find_epilogue_through_views (through_views.h).
#include "families/gemm/epilogue/through_views.h"

namespace fact::discover {

EpilogueSearch find_epilogue_through_views(const graph::GraphIndex& g, const std::string& acc) {
  EpilogueSearch direct = find_epilogue(g, acc);
  if (direct.epilogue) return direct;
  const graph::TensorType& a = g.type(acc);
  const std::vector<const graph::Node*> users = g.users(acc);
  if (users.size() != 1 || a.rank() != 2 || !a.is_contiguous()) return direct;
  for (const auto& o : g.graph().outputs)
    if (o == acc) return direct;
  const graph::Node& v = *users[0];
  const bool view = v.op == "aten.view.default" || v.op == "aten.reshape.default" || v.op == "aten._unsafe_view.default";
  if (!view || v.outputs.size() != 1 || !v.outputs[0].type || v.args.empty() || !v.args[0].ref() ||
      *v.args[0].ref() != acc)
    return direct;
  const graph::TensorType& t = *v.outputs[0].type;
  if (t.dtype != a.dtype || !t.is_contiguous() || t.rank() < 2 || t.shape.back() != a.shape.back() ||
      t.numel() != a.numel())
    return direct;
  EpilogueSearch after = find_epilogue(g, v.outputs[0].name);
  if (!after.epilogue) return direct;
  after.epilogue->nodes.insert(after.epilogue->nodes.begin(), v.name);
  return after;
}

}  // namespace fact::discover
