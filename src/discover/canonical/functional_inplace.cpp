// Pass functional_inplace: an in-place elementwise op that nothing else can observe is its
// functional form. PyTorch: `nn.ReLU(inplace=True)`, `y.relu_()`, `h.add_(r)`, `x.mul_(0.5)`
// export as aten.relu_.default(%y), aten.add_.Tensor(%h, %r), ...: the op writes its result into
// its first argument's storage and returns that tensor. When the storage is fresh (made by a
// compute node, reached through aliases only: storage_root) and no node but this one reads it
// or any alias of it on the way, and it is no graph output, nothing can see the write, and the
// node is aten.relu.default(%y) with the same output. An op that does not qualify stays in
// place, and the rules do not take it (their op tables name functional ops only).
#include <string>
#include <string_view>

#include "discover/canonical/passes.h"

namespace fact::discover::canonical {
namespace {

// In-place elementwise ops (base name without its trailing '_'): the result has the first
// argument's shape and dtype, and element i of it depends on element i of the inputs only.
constexpr std::string_view kElementwise[] = {
    "relu",  "add",     "sub",   "mul",        "div",        "clamp",   "clamp_min",  "clamp_max", "sigmoid",
    "tanh",  "silu",    "gelu",  "hardtanh",   "leaky_relu", "elu",     "hardswish",  "hardsigmoid",
    "mish",  "neg",     "exp",   "abs",        "sqrt",       "rsqrt",   "pow",        "erf",     "log",
    "reciprocal", "threshold", "masked_fill", "sin", "cos", "floor", "ceil", "trunc", "square",
};

// "aten.relu_.default" -> "aten.relu.default"; pow_'s overloads are named after their
// other argument (pow_.Scalar is pow.Tensor_Scalar's in-place form). "" when `op` is not one
// of kElementwise's in-place forms.
std::string functional_name(std::string_view op) {
  if (!is_in_place(op)) return "";
  const std::string_view base = aten_base_name(op), overload = op.substr(op.rfind('.') + 1);
  const std::string_view fn = base.substr(0, base.size() - 1);
  if (!is_one_of(fn, kElementwise)) return "";
  if (fn == "pow") return overload == "Scalar" ? "aten.pow.Tensor_Scalar" : overload == "Tensor" ? "aten.pow.Tensor_Tensor" : "";
  return "aten." + std::string(fn) + "." + std::string(overload);
}

bool is_output(const graph::Graph& g, const std::string& value) {
  for (const auto& o : g.outputs)
    if (o == value) return true;
  return false;
}

// True when `writer` is the only reader of `value` and of every alias on its way to its storage
// (each alias read by the next one only), none of them is a graph output, and the storage is
// a compute node's output (an input or parameter is the caller's).
bool unobserved(const graph::GraphIndex& g, const graph::Node& writer, const std::string& value) {
  std::string v = value;
  const graph::Node* reader = &writer;
  for (;;) {
    if (is_output(g.graph(), v)) return false;
    const auto users = g.users(v);
    if (users.size() != 1 || users[0] != reader) return false;
    const graph::Node* p = g.producer(v);
    if (!p) return false;
    if (!aliases_first_arg(p->op) && !is_in_place(p->op)) return true;
    if (p->args.empty() || !p->args[0].ref()) return false;
    reader = p;
    v = *p->args[0].ref();
  }
}

}  // namespace

void functional_inplace(Work& w) {
  const graph::GraphIndex g(w.graph);
  for (auto& n : w.graph.nodes) {
    const std::string fn = functional_name(n.op);
    if (fn.empty() || n.args.empty() || !n.args[0].ref() || n.outputs.size() != 1 || !n.outputs[0].type) continue;
    const std::string& mutated = *n.args[0].ref();
    const graph::TensorType& t = g.type(mutated);
    if (*n.outputs[0].type != t) continue;
    bool same_dtype = true;  // the functional op would promote another dtype; the in-place one keeps t's
    for (size_t i = 1; i < n.args.size(); ++i)
      if (const std::string* r = n.args[i].ref(); r && g.type(*r).dtype != t.dtype) same_dtype = false;
    if (!same_dtype || !unobserved(g, n, mutated)) continue;
    n.op = fn;
    w.rewritten.insert(n.name);
  }
}

}  // namespace fact::discover::canonical
