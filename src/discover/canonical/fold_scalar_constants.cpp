// Pass fold_scalar_constants: a 0-d constant tensor read by an elementwise op is the number
// it holds, so the op is rewritten to read the number (and masked_fill.Tensor becomes
// masked_fill.Scalar); a constant nothing reads any more is dropped. PyTorch:
// `scores / torch.full((), 8.0)`, `torch.where(m, s, torch.tensor(torch.finfo(s.dtype).min))`,
// `s.masked_fill(m, torch.full((), -inf))`, `torch.scalar_tensor(c)`. The number is the one
// the op computes with: a fill beyond float16's (bfloat16's) range in an op of that dtype is
// the infinity it rounds to.
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "discover/canonical/passes.h"

namespace fact::discover::canonical {
namespace {

// The number a 0-d full() or scalar_tensor() holds.
std::optional<graph::Arg> constant_of(const graph::Node& n) {
  if (n.outputs.size() != 1 || !n.outputs[0].type || n.outputs[0].type->rank() != 0) return std::nullopt;
  const graph::Arg* v = nullptr;
  if (n.op == "aten.full.default" && n.args.size() == 2) {
    const auto* shape = n.args[0].get_if<graph::Arg::List>();
    if (shape && shape->empty()) v = &n.args[1];
  } else if (n.op == "aten.scalar_tensor.default" && n.args.size() == 1) {
    v = &n.args[0];
  }
  if (!v || !v->number()) return std::nullopt;
  return *v;
}

// Which positional arguments of an op may be a number instead of a 0-d tensor.
bool takes_number(const graph::Node& n, size_t i) {
  const std::string& op = n.op;
  if (op == "aten.add.Tensor" || op == "aten.sub.Tensor" || op == "aten.mul.Tensor" || op == "aten.div.Tensor")
    return i < 2;
  if (op == "aten.where.self") return i == 1 || i == 2;
  if (op == "aten.masked_fill.Tensor") return i == 2;
  return false;
}

// `c` as an op producing `dtype` computes with it: beyond the dtype's finite range, infinity.
graph::Arg as_computed(const graph::Arg& c, graph::DType dtype) {
  const double v = *c.number();
  const double limit = dtype == graph::DType::f16    ? 65520.0
                       : dtype == graph::DType::bf16 ? 3.3961775292304e38
                                                     : std::numeric_limits<double>::infinity();
  if (std::isfinite(v) && std::fabs(v) >= limit) return graph::Arg(std::copysign(INFINITY, v));
  return c;
}

}  // namespace

void fold_scalar_constants(Work& w) {
  std::map<std::string, graph::Arg> constants;  // value -> its number
  for (const auto& n : w.graph.nodes)
    if (auto c = constant_of(n)) constants.emplace(n.outputs[0].name, *c);
  if (constants.empty()) return;
  for (auto& n : w.graph.nodes) {
    bool folded = false;
    for (size_t i = 0; i < n.args.size(); ++i) {
      const std::string* r = n.args[i].ref();
      auto it = r ? constants.find(*r) : constants.end();
      if (it == constants.end() || !takes_number(n, i) || n.outputs.empty() || !n.outputs[0].type) continue;
      n.args[i] = as_computed(it->second, n.outputs[0].type->dtype);
      folded = true;
    }
    if (!folded) continue;
    if (n.op == "aten.masked_fill.Tensor") n.op = "aten.masked_fill.Scalar";
    w.rewritten.insert(n.name);
  }
  std::vector<DroppedNode> drops;
  {
    const graph::GraphIndex g(w.graph);
    for (const auto& n : w.graph.nodes)
      if (!n.outputs.empty() && constants.contains(n.outputs[0].name) && unread(g, n.outputs[0].name))
        drops.push_back({n.name, n.op, "", "a 0-d constant folded into the ops that read it"});
  }
  apply_drops(w, std::move(drops));
}

}  // namespace fact::discover::canonical
