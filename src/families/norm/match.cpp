#include "families/norm/match.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fact::discover::norm {
namespace {

using graph::Arg;
using graph::DType;
using graph::GraphIndex;
using graph::Node;

constexpr double kFp32Epsilon = 1.1920928955078125e-07;  // torch.finfo(torch.float32).eps

bool is_assert(const Node& n) { return n.op == "aten._assert_tensor_metadata.default"; }

// The node producing the value `arg` references, or nullptr (a placeholder or a constant).
const Node* producer_of(const GraphIndex& g, const Arg& arg) {
  const std::string* r = arg.ref();
  return r ? g.producer(*r) : nullptr;
}

const std::string& out_of(const Node& n) { return n.outputs.at(0).name; }

bool is_op(const Node* n, std::string_view op) { return n && n->op == op; }

// The readers of `value` that compute something (asserts excluded).
std::vector<const Node*> readers(const GraphIndex& g, const std::string& value) {
  std::vector<const Node*> out;
  for (const Node* u : g.users(value))
    if (!is_assert(*u)) out.push_back(u);
  return out;
}

bool is_graph_output(const GraphIndex& g, const std::string& value) {
  const auto& outs = g.graph().outputs;
  return std::find(outs.begin(), outs.end(), value) != outs.end();
}

// Adds the _assert_tensor_metadata nodes that read `value` to `nodes`.
void take_asserts(const GraphIndex& g, const std::string& value, std::vector<std::string>& nodes) {
  for (const Node* u : g.users(value))
    if (is_assert(*u)) nodes.push_back(u->name);
}

// `arg` is a list of dims naming only the last of a rank-`rank` tensor.
bool is_last_dim(const Arg& arg, int64_t rank) {
  const auto* l = arg.get_if<Arg::List>();
  if (!l || l->size() != 1) return false;
  const auto* d = (*l)[0].get_if<int64_t>();
  return d && (*d == -1 || *d == rank - 1);
}

std::string dims_text(const Arg& arg) {
  std::vector<int64_t> dims;
  if (const auto* l = arg.get_if<Arg::List>())
    for (const Arg& a : *l)
      if (const auto* d = a.get_if<int64_t>()) dims.push_back(*d);
  return fmt::format("{}", dims);
}

// A reduction over the rows of `input` with keepdim: mean.dim(input, [-1], true), or its
// Rejection when it reduces another dimension. False when `n` is no such mean.
bool is_row_mean(const GraphIndex& g, const Node* n, const std::string& input) {
  if (!is_op(n, "aten.mean.dim") || n->args.size() != 3 || !n->kwargs.empty()) return false;
  if (!n->args[0].ref() || *n->args[0].ref() != input) return false;
  const auto* keep = n->args[2].get_if<bool>();
  if (!keep || !*keep) return false;
  const auto& t = g.type(input);
  if (!is_last_dim(n->args[1], t.rank()))
    reject(fmt::format("%{} reduces {} over dims {}, not the last: the norm kernels normalize along the last "
                       "dimension only", n->name, input, dims_text(n->args[1])));
  return true;
}

// c^2 as pow(c, 2) or c * c: the squared value's name, or "".
std::string squared(const Node* n) {
  if (is_op(n, "aten.pow.Tensor_Scalar") && n->args.size() == 2 && n->args[0].ref() &&
      n->args[1].number() == 2.0)
    return *n->args[0].ref();
  if (is_op(n, "aten.mul.Tensor") && n->args.size() == 2 && n->args[0].ref() && n->args[0] == n->args[1])
    return *n->args[0].ref();
  return "";
}

// sub(x, mean(x, -1, keepdim)): x, and the two nodes, or "".
std::string centered(const GraphIndex& g, const Node* sub, std::vector<std::string>& nodes) {
  if (!is_op(sub, "aten.sub.Tensor") || sub->args.size() != 2 || !sub->kwargs.empty() || !sub->args[0].ref())
    return "";
  const std::string& x = *sub->args[0].ref();
  const Node* m = producer_of(g, sub->args[1]);
  if (!is_row_mean(g, m, x)) return "";
  nodes.push_back(sub->name);
  nodes.push_back(m->name);
  return x;
}

// var(x, [-1], unbiased=False, keepdim=True) in its two overloads: true when `n` is one.
bool is_row_var(const GraphIndex& g, const Node* n, const std::string& x) {
  if (!n || (n->op != "aten.var.dim" && n->op != "aten.var.correction") || n->args.size() < 2) return false;
  if (!n->args[0].ref() || *n->args[0].ref() != x) return false;
  bool keepdim = false, unbiased = true;
  if (n->op == "aten.var.dim") {
    if (n->args.size() != 4) return false;
    const auto* u = n->args[2].get_if<bool>();
    const auto* k = n->args[3].get_if<bool>();
    unbiased = u ? *u : true;
    keepdim = k && *k;
  } else {
    const Arg* corr = n->kwarg("correction");
    const Arg* k = n->kwarg("keepdim");
    unbiased = !(corr && corr->number() == 0.0);
    keepdim = k && k->get_if<bool>() && *k->get_if<bool>();
  }
  if (!keepdim) return false;
  if (!is_last_dim(n->args[1], g.type(x).rank()))
    reject(fmt::format("%{} reduces {} over dims {}, not the last: the norm kernels normalize along the last "
                       "dimension only", n->name, x, dims_text(n->args[1])));
  if (unbiased)
    reject(fmt::format("%{} is the unbiased variance (divides by N - 1): LayerNorm divides by N", n->name));
  return true;
}

// stat + eps (add.Tensor with a number, either order): stat's producer and eps.
const Node* plus_eps(const GraphIndex& g, const Node* add, double& eps) {
  if (!is_op(add, "aten.add.Tensor") || add->args.size() != 2 || !add->kwargs.empty()) return nullptr;
  for (int i = 0; i < 2; ++i) {
    auto e = add->args[1 - i].number();
    if (add->args[i].ref() && e) {
      eps = *e;
      return producer_of(g, add->args[i]);
    }
  }
  return nullptr;
}

// The core c * rsqrt(stat + eps) or c / sqrt(stat + eps) with c and r given.
std::optional<NormParts> core(const GraphIndex& g, const Node& node, const Arg& c_arg, const Arg& r_arg, bool div) {
  const Node* r = producer_of(g, r_arg);
  if (!c_arg.ref() || !is_op(r, div ? "aten.sqrt.default" : "aten.rsqrt.default") || r->args.size() != 1) return {};
  NormParts p;
  const Node* stat = plus_eps(g, producer_of(g, r->args[0]), p.eps);
  if (!stat) return {};
  const std::string& c = *c_arg.ref();
  p.nodes = {node.name, r->name, g.producer(*r->args[0].ref())->name, stat->name};
  const Node* c_node = g.producer(c);
  std::vector<std::string> centering;
  if (is_op(stat, "aten.mean.dim") && stat->args.size() == 3 && stat->args[0].ref()) {
    const Node* sq = g.producer(*stat->args[0].ref());
    if (squared(sq) != c || !is_row_mean(g, stat, out_of(*sq))) return {};
    p.nodes.push_back(sq->name);
    const std::string x = centered(g, c_node, centering);
    p.kind = x.empty() ? "rms" : "layer";
    p.x = x.empty() ? c : x;
  } else {
    const std::string x = centered(g, c_node, centering);
    if (x.empty() || !is_row_var(g, stat, x)) return {};
    p.kind = "layer";
    p.x = x;
  }
  p.nodes.insert(p.nodes.end(), centering.begin(), centering.end());
  p.form = "written";
  p.output = out_of(node);
  return p;
}

}  // namespace

bool is_cast(const GraphIndex& g, const Node& n) {
  const bool op = (n.op == "aten.to.dtype" && n.args.size() == 2 && n.kwargs.empty()) ||
                  (n.op == "aten.type_as.default" && n.args.size() == 2 && n.kwargs.empty()) ||
                  (n.op == "aten._to_copy.default" && n.args.size() == 1 && n.kwargs.size() == 1 && n.kwarg("dtype"));
  if (!op || !n.args[0].ref() || n.outputs.size() != 1 || !n.outputs[0].type) return false;
  return graph::is_floating(g.type(*n.args[0].ref()).dtype) && graph::is_floating(n.outputs[0].type->dtype) &&
         n.outputs[0].type->dtype != DType::f64 && g.type(*n.args[0].ref()).shape == n.outputs[0].type->shape;
}

std::optional<NormParts> match_norm_op(const GraphIndex& g, const Node& node) {
  const bool ln = node.op == "aten.layer_norm.default", native = node.op == "aten.native_layer_norm.default";
  const bool rms = node.op == "aten.rms_norm.default";
  if (!ln && !native && !rms) return {};
  if (node.args.size() < 2 || !node.args[0].ref()) return {};
  NormParts p;
  p.kind = rms ? "rms" : "layer";
  p.form = ln ? "layer_norm" : native ? "native_layer_norm" : "rms_norm";
  p.x = *node.args[0].ref();
  const auto* shape = node.args[1].get_if<Arg::List>();
  if (!shape || shape->size() != 1)
    reject(fmt::format("%{} normalizes over the last {} dims: the norm kernels normalize one (the last) dimension",
                       node.name, shape ? shape->size() : 0));
  const auto arg = [&](size_t i) -> const Arg* { return i < node.args.size() ? &node.args[i] : nullptr; };
  const Arg* w = arg(2);
  const Arg* b = rms ? nullptr : arg(3);
  const Arg* e = arg(rms ? 3 : 4);
  if (w && w->ref()) p.weight = *w->ref();
  if (b && b->ref()) p.bias = *b->ref();
  if (e && e->number()) p.eps = *e->number();
  else if (e && !e->is<graph::None>()) reject(fmt::format("%{}: eps is not a number", node.name));
  else p.eps = rms ? kFp32Epsilon : 1e-5;  // rms_norm's eps=None: float32's epsilon (torch._decomp)
  p.nodes = {node.name};
  p.output = node.outputs.at(0).name;
  if (native) {
    for (size_t i = 1; i < node.outputs.size(); ++i) {
      const std::string& v = node.outputs[i].name;
      if (!node.outputs[i].type) continue;
      if (is_graph_output(g, v) || !g.users(v).empty())
        reject(fmt::format("%{} (the {}) is read: the norm kernels write the normalized output only", v,
                           i == 1 ? "mean" : "reciprocal standard deviation"));
    }
  }
  return p;
}

std::optional<NormParts> match_written_norm(const GraphIndex& g, const Node& node) {
  if (node.args.size() != 2 || !node.kwargs.empty() || node.outputs.size() != 1) return {};
  if (node.op == "aten.div.Tensor") return core(g, node, node.args[0], node.args[1], true);
  if (node.op != "aten.mul.Tensor") return {};
  if (auto p = core(g, node, node.args[0], node.args[1], false)) return p;
  return core(g, node, node.args[1], node.args[0], false);
}

namespace {

// The operand of a binary `n` other than `value`, when it is a 1-D [cols] tensor.
std::string row_vector_operand(const GraphIndex& g, const Node& n, const std::string& value, int64_t cols) {
  if (n.args.size() != 2 || !n.kwargs.empty()) return "";
  for (int i = 0; i < 2; ++i) {
    const std::string* me = n.args[i].ref();
    const std::string* other = n.args[1 - i].ref();
    if (!me || *me != value || !other) continue;
    const auto& t = g.type(*other);
    if (t.rank() == 1 && t.shape[0] == cols) return *other;
  }
  return "";
}

void extend_output(const GraphIndex& g, NormParts& p) {
  const int64_t cols = g.type(p.x).shape.back();
  std::string cur = p.output;
  for (;;) {
    const auto users = readers(g, cur);
    if (is_graph_output(g, cur) || users.size() != 1) break;
    const Node& u = *users[0];
    if (u.outputs.size() != 1 || !u.outputs[0].type) break;
    if (is_cast(g, u) && u.args[0].ref() && *u.args[0].ref() == cur) {
    } else if (u.op == "aten.mul.Tensor" && p.weight.empty() && p.bias.empty() &&
               !(p.weight = row_vector_operand(g, u, cur, cols)).empty()) {
    } else if (u.op == "aten.add.Tensor" && p.bias.empty() && !(p.bias = row_vector_operand(g, u, cur, cols)).empty()) {
    } else {
      break;
    }
    take_asserts(g, cur, p.nodes);
    p.nodes.push_back(u.name);
    cur = out_of(u);
  }
  p.output = cur;
}

// Whether every reader of `value` is in `inside` and it is no graph output.
bool read_inside_only(const GraphIndex& g, const std::string& value, const std::set<std::string>& inside) {
  if (is_graph_output(g, value)) return false;
  for (const Node* u : g.users(value))
    if (!is_assert(*u) && !inside.contains(u->name)) return false;
  return true;
}

// add & norm: x's producer through casts that keep the dtype is add(a, b) of two tensors
// of x's type. Takes the add (and those casts) when at most one of their values is read
// after the pattern: that one is the sum output.
bool take_residual_add(const GraphIndex& g, NormParts& p) {
  std::vector<const Node*> chain;  // x's producer first
  std::string v = p.x;
  const Node* add = nullptr;
  for (const Node* n = g.producer(v); n; n = g.producer(v)) {
    if (is_cast(g, *n) && g.type(*n->args[0].ref()).dtype == g.type(v).dtype) {
      chain.push_back(n);
      v = *n->args[0].ref();
      continue;
    }
    if (n->op == "aten.add.Tensor" && n->args.size() == 2 && n->kwargs.empty() && n->args[0].ref() &&
        n->args[1].ref() && g.type(*n->args[0].ref()) .shape == g.type(v).shape &&
        g.type(*n->args[1].ref()).shape == g.type(v).shape && g.type(*n->args[0].ref()).dtype == g.type(v).dtype &&
        g.type(*n->args[1].ref()).dtype == g.type(v).dtype)
      add = n;
    break;
  }
  if (!add) return false;
  chain.push_back(add);
  std::set<std::string> inside(p.nodes.begin(), p.nodes.end());
  for (const Node* n : chain) inside.insert(n->name);
  std::vector<std::string> read_after;
  for (const Node* n : chain)
    if (!read_inside_only(g, out_of(*n), inside)) read_after.push_back(out_of(*n));
  if (read_after.size() > 1) return false;
  // The kernel runs where the norm's output is made: the sum's readers must come after it.
  if (!read_after.empty()) {
    const size_t end = g.position(*g.producer(p.output));
    for (const Node* u : g.users(read_after[0]))
      if (!inside.contains(u->name) && !is_assert(*u) && g.position(*u) < end) return false;
  }
  for (const Node* n : chain) {
    p.nodes.push_back(n->name);
    take_asserts(g, out_of(*n), p.nodes);
  }
  p.x = *add->args[0].ref();
  p.residual = *add->args[1].ref();
  if (!read_after.empty()) p.sum_output = read_after[0];
  return true;
}

// Input casts that widen or keep the dtype (x.float()), while their values are read inside.
void take_input_casts(const GraphIndex& g, NormParts& p) {
  for (const Node* n = g.producer(p.x); n && is_cast(g, *n); n = g.producer(p.x)) {
    const DType from = g.type(*n->args[0].ref()).dtype, to = g.type(p.x).dtype;
    if (from != to && to != DType::f32) break;
    const std::set<std::string> inside(p.nodes.begin(), p.nodes.end());
    if (!read_inside_only(g, p.x, inside)) break;
    take_asserts(g, p.x, p.nodes);
    p.nodes.push_back(n->name);
    p.x = *n->args[0].ref();
  }
}

}  // namespace

void extend_norm(const GraphIndex& g, NormParts& p, bool with_residual) {
  extend_output(g, p);
  if (with_residual && take_residual_add(g, p)) return;
  take_input_casts(g, p);
  if (with_residual) take_residual_add(g, p);
}

}  // namespace fact::discover::norm
