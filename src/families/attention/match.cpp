// The forms of attention the `attention` rule recognizes (attention_match.h).
#include "families/attention/match.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "graph/text.h"

namespace fact::discover::attention {

using graph::Arg;
using graph::GraphIndex;
using graph::Node;
using graph::TensorType;

bool is_graph_output(const GraphIndex& g, std::string_view value) {
  for (const auto& o : g.graph().outputs)
    if (o == value) return true;
  return false;
}

const Node* only_user(const GraphIndex& g, const std::string& value) {
  if (is_graph_output(g, value)) return nullptr;
  const std::vector<const Node*> users = g.users(value);
  return users.size() == 1 ? users[0] : nullptr;
}

std::string dims(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

int64_t normalized_dim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

namespace {

const std::string& out(const Node& n) { return n.outputs.at(0).name; }

std::string names(const std::vector<const Node*>& nodes) {
  std::vector<std::string> s;
  for (const Node* n : nodes) s.push_back("%" + n->name);
  return fmt::format("{}", fmt::join(s, ", "));
}

}  // namespace

bool is_product(const Node* n) {
  return n && (n->op == "aten.matmul.default" || n->op == "aten.bmm.default") && n->args.size() == 2 &&
         n->outputs.size() == 1 && n->outputs[0].type;
}

// Who else reads `value` (for reasons): its users other than `consumer`, or the graph output.
std::string other_readers(const GraphIndex& g, const std::string& value, const Node* consumer) {
  std::vector<const Node*> others;
  for (const Node* u : g.users(value))
    if (u != consumer) others.push_back(u);
  std::string s = names(others);
  if (is_graph_output(g, value)) s += s.empty() ? "the graph's outputs" : " and the graph's outputs";
  return s;
}

std::optional<ScaleOp> scale_op(const Node& n) {
  const bool mul = n.op == "aten.mul.Tensor" || n.op == "aten.mul.Scalar";
  const bool div = n.op == "aten.div.Tensor" || n.op == "aten.div.Scalar";
  if ((!mul && !div) || n.args.size() != 2 || !n.kwargs.empty()) return std::nullopt;
  const std::string *a = n.args[0].ref(), *b = n.args[1].ref();
  if (a && !b) {
    std::optional<double> c = n.args[1].number();
    if (!c) return std::nullopt;
    return ScaleOp{*a, mul ? *c : 1.0 / *c};
  }
  if (mul && b && !a) {
    std::optional<double> c = n.args[0].number();
    if (!c) return std::nullopt;
    return ScaleOp{*b, *c};
  }
  return std::nullopt;
}

bool tensor_scale(const Node& n) {
  return (n.op == "aten.mul.Tensor" || n.op == "aten.div.Tensor") && n.args.size() == 2 && n.args[0].ref() &&
         n.args[1].ref();
}

double checked_factor(const Node& n, double factor) {
  if (!std::isfinite(factor) || factor <= 0)
    reject(fmt::format("%{} scales by {}: the attention rule takes a positive, finite scale", n.name, factor));
  return factor;
}

bool float_cast(const GraphIndex& g, const Node& n) {
  const bool cast = n.op == "aten.to.dtype" || n.op == "aten._to_copy.default";
  const Arg* device = n.kwarg("device");
  if (!cast || (device && !device->is<graph::None>()) || n.args.empty() || !n.args[0].ref() ||
      n.outputs.size() != 1 || !n.outputs[0].type)
    return false;
  const TensorType &in = g.type(*n.args[0].ref()), &o = *n.outputs[0].type;
  return graph::is_floating(in.dtype) && graph::is_floating(o.dtype) && in.shape == o.shape;
}

namespace {

// Peels single-use scales by a number off `value` (read by `consumer`), e.g. q * d**-0.5.
void peel_scales(const GraphIndex& g, Parts& p, std::string& value, const Node*& consumer) {
  for (const Node* n = g.producer(value); n && only_user(g, value) == consumer; n = g.producer(value)) {
    std::optional<ScaleOp> s = scale_op(*n);
    if (!s) return;
    p.scale *= checked_factor(*n, s->factor);
    p.nodes.push_back(n->name);
    consumer = n;
    value = s->input;
  }
}

// n is a transpose of the last two dims of its rank-`rank` input (transpose.int / permute).
bool swaps_last_two(const Node& n, int64_t rank) {
  if (n.op == "aten.transpose.int" && n.args.size() == 3) {
    const int64_t *a = n.args[1].get_if<int64_t>(), *b = n.args[2].get_if<int64_t>();
    if (!a || !b) return false;
    const int64_t x = normalized_dim(*a, rank), y = normalized_dim(*b, rank);
    return std::min(x, y) == rank - 2 && std::max(x, y) == rank - 1;
  }
  if (n.op == "aten.permute.default" && n.args.size() == 2) {
    const auto* l = n.args[1].get_if<Arg::List>();
    if (!l || static_cast<int64_t>(l->size()) != rank) return false;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t* d = (*l)[i].get_if<int64_t>();
      const int64_t want = i < rank - 2 ? i : i == rank - 2 ? rank - 1 : rank - 2;
      if (!d || normalized_dim(*d, rank) != want) return false;
    }
    return true;
  }
  return false;
}

// ---- hand-written attention ---------------------------------------------------------

// Some user chain of `v` (through dropout, scales, casts) reaches a product reading it first.
bool feeds_product(const GraphIndex& g, const std::string& v, int depth = 4) {
  for (const Node* u : g.users(v)) {
    if (is_product(u) && u->args[0].ref() && *u->args[0].ref() == v) return true;
    const bool passes = u->op == "aten.dropout.default" || scale_op(*u) || float_cast(g, *u) ||
                        u->op == "aten.clone.default" || u->op == "aten.contiguous.default";
    if (passes && depth > 0 && u->outputs.size() == 1 && u->outputs[0].type &&
        feeds_product(g, out(*u), depth - 1))
      return true;
  }
  return false;
}

void check_softmax(const GraphIndex& g, const Node& sm) {
  const TensorType& in = g.type(*sm.args[0].ref());
  const int64_t* dim = sm.args.size() > 1 ? sm.args[1].get_if<int64_t>() : nullptr;
  if (!dim) reject(fmt::format("%{} has no integer dim", sm.name));
  if (normalized_dim(*dim, in.rank()) != in.rank() - 1)
    reject(fmt::format("%{} normalizes dim {} of the scores {}: attention's softmax is over the keys, "
                       "the last dim", sm.name, *dim, dims(in.shape)));
  if (sm.op == "aten._softmax.default") {
    const bool* h2f = sm.args.size() > 2 ? sm.args[2].get_if<bool>() : nullptr;
    if (!h2f || *h2f) reject(fmt::format("%{} is a half-to-float softmax", sm.name));
  }
  if (sm.outputs[0].type->dtype != in.dtype)
    reject(fmt::format("%{} computes {} probabilities from {} scores: the kernel keeps one dtype", sm.name,
                       graph::torch_name(sm.outputs[0].type->dtype), graph::torch_name(in.dtype)));
}

}  // namespace

std::optional<Parts> match_written(const GraphIndex& g, const Node& sm) {
  if (sm.op != "aten.softmax.int" && sm.op != "aten._softmax.default") return std::nullopt;
  if (sm.args.empty() || !sm.args[0].ref() || sm.outputs.size() != 1 || !sm.outputs[0].type) return std::nullopt;
  const std::string s_in = *sm.args[0].ref();
  const Node* qk = scores_product(g, s_in);  // throws when a product hides behind an op the walk does not take
  if (!qk) return std::nullopt;
  if (!feeds_product(g, out(sm))) {
    const std::vector<const Node*> users = g.users(out(sm));
    if (users.empty()) return std::nullopt;  // scores of a product normalized and returned: not attention
    reject(fmt::format("%{} normalizes the product %{}, but its probabilities reach no product with v through "
                       "dropout, scales and casts: %{} ({}) reads them", sm.name, qk->name, users[0]->name,
                       users[0]->op));
  }

  Parts p;
  p.form = "matmul";
  check_softmax(g, sm);
  p.nodes.push_back(sm.name);

  // Forward: [dropout that does nothing] then the product with v.
  std::string cur = out(sm);
  const Node* pv = nullptr;
  while (!pv) {
    const std::vector<const Node*> users = g.users(cur);
    if (is_graph_output(g, cur) || users.size() != 1)
      reject(fmt::format("%{} (the attention probabilities) is read by {}: the kernel never materializes "
                         "them, so only the product with v may read them",
                         cur, other_readers(g, cur, nullptr)));
    const Node* u = users[0];
    if (u->op == "aten.dropout.default" && u->outputs.size() == 1) {
      const std::optional<double> prob = u->args.size() > 1 ? u->args[1].number() : std::nullopt;
      const bool* train = u->args.size() > 2 ? u->args[2].get_if<bool>() : nullptr;
      if (!prob || !train) reject(fmt::format("%{}: dropout without a constant p and train flag", u->name));
      if (*prob != 0.0 && *train)
        reject(fmt::format("%{} is dropout with p={} in training mode (train=True): the attention rule matches "
                           "attention without dropout (p = 0, or eval mode)", u->name, *prob));
      p.nodes.push_back(u->name);
      cur = out(*u);
      continue;
    }
    if (float_cast(g, *u)) {  // the upcast spelling's downcast: the kernel rounds P as it multiplies
      p.nodes.push_back(u->name);
      cur = out(*u);
      continue;
    }
    if (is_product(u) && u->args[0].ref() && *u->args[0].ref() == cur) {
      pv = u;
      break;
    }
    if (scale_op(*u))
      reject(fmt::format("%{} scales the probabilities after the softmax: the kernel applies its scale to "
                         "q.k before the softmax", u->name));
    reject(fmt::format("%{} ({}) reads the probabilities before the product with v: only dropout with p = 0 "
                       "or train=False and casts may come between the softmax and @ v", u->name, u->op));
  }
  if (!pv->args[1].ref()) reject(fmt::format("%{}: v is not a tensor", pv->name));
  p.v = *pv->args[1].ref();
  p.core = out(*pv);
  p.nodes.push_back(pv->name);

  // Backward: scales, masks, casts and views down to q @ k^T (scores.cpp).
  walk_scores(g, p, sm, qk);

  // q @ k^T: q and k^T may carry scales; k^T is a transpose of k (kept when read elsewhere).
  p.nodes.push_back(qk->name);
  const int64_t rank = qk->outputs[0].type->rank();
  if (!qk->args[0].ref() || !qk->args[1].ref()) reject(fmt::format("%{}: an operand is not a tensor", qk->name));
  p.q = *qk->args[0].ref();
  const Node* q_consumer = qk;
  peel_scales(g, p, p.q, q_consumer);
  std::string kt = *qk->args[1].ref();
  const Node* k_consumer = qk;
  peel_scales(g, p, kt, k_consumer);
  const Node* t = g.producer(kt);
  if (!t || !swaps_last_two(*t, rank) || !t->args[0].ref())
    reject(fmt::format("the score product %{} reads %{} as k^T, which is not a transpose of the last two dims "
                       "of a key: expected q @ k.transpose(-2, -1)", qk->name, kt));
  p.k = *t->args[0].ref();
  if (only_user(g, kt) == k_consumer) {
    p.nodes.push_back(t->name);
    k_consumer = t;
    peel_scales(g, p, p.k, k_consumer);
  } else {
    k_consumer = nullptr;  // the transpose stays: so does everything it reads
  }
  swallow_repeats(g, p, k_consumer, pv);
  return p;
}

std::optional<Parts> match_sdpa(const GraphIndex& g, const Node& n) {
  if (n.op != "aten.scaled_dot_product_attention.default") return std::nullopt;
  if (n.outputs.size() != 1 || !n.outputs[0].type) reject(fmt::format("%{} has no single tensor output", n.name));
  Parts p;
  p.form = "sdpa";
  p.core = out(n);
  p.nodes.push_back(n.name);
  const char* names[] = {"query", "key", "value"};
  std::string* refs[] = {&p.q, &p.k, &p.v};
  for (size_t i = 0; i < 3; ++i) {
    const Arg* a = n.arg_or_kwarg(i, names[i]);
    if (!a || !a->ref()) reject(fmt::format("%{}: {} is not a tensor", n.name, names[i]));
    *refs[i] = *a->ref();
  }
  const TensorType& q = g.type(p.q);
  if (const Arg* d = n.arg_or_kwarg(4, "dropout_p"); d && !d->is<graph::None>()) {
    const std::optional<double> prob = d->number();
    if (!prob || *prob != 0.0)
      reject(fmt::format("%{} has dropout_p={}: SDPA's dropout is active whatever the module's mode; the "
                         "attention rule matches attention without dropout", n.name, graph::format_arg(*d)));
  }
  const Arg* causal = n.arg_or_kwarg(5, "is_causal");
  const bool is_causal = causal && causal->get_if<bool>() && *causal->get_if<bool>();
  const Arg* scale = n.arg_or_kwarg(6, "scale");
  if (scale && !scale->is<graph::None>()) {
    const std::optional<double> c = scale->number();
    if (!c || !std::isfinite(*c)) reject(fmt::format("%{} has scale={}: not a finite number", n.name, graph::format_arg(*scale)));
    p.scale = *c;
  } else {
    p.scale = q.rank() ? 1.0 / std::sqrt(static_cast<double>(q.shape.back())) : 1.0;  // PyTorch's default
  }
  const Arg* mask = n.arg_or_kwarg(3, "attn_mask");
  const bool bool_mask = mask && mask->ref() && g.type(*mask->ref()).dtype == graph::DType::b8;
  const graph::TensorType& kt = g.type(p.k);
  if (mask && mask->ref() && !is_causal && (bool_mask || g.type(*mask->ref()).dtype == q.dtype) && q.rank() >= 2 &&
      take_constant_mask(g, p, *mask->ref(), n, {q.shape[q.rank() - 2], kt.shape[kt.rank() - 2]}, !bool_mask,
                         false)) {
    // a constant mask of the export: all kept (no mask) or causal, read by no kernel
  } else if (mask && !mask->is<graph::None>()) {
    if (!mask->ref()) reject(fmt::format("%{}: attn_mask is not a tensor", n.name));
    if (is_causal) reject(fmt::format("%{} has both attn_mask and is_causal=True", n.name));
    const graph::DType md = g.type(*mask->ref()).dtype;
    const Node* negation = g.producer(*mask->ref());
    const std::string* negated = negation && !negation->args.empty() ? negation->args[0].ref() : nullptr;
    if (md == graph::DType::b8 && negated && only_user(g, *mask->ref()) == &n &&
        (negation->op == "aten.logical_not.default" || negation->op == "aten.bitwise_not.default") &&
        g.type(*negated).dtype == graph::DType::b8) {
      p.mask = MaskKind::drop;  // attn_mask=~removed: the kernel reads `removed` itself
      p.mask_value = *negated;
      p.nodes.push_back(negation->name);
    } else if (md == graph::DType::b8 || md == q.dtype) {
      p.mask = md == graph::DType::b8 ? MaskKind::keep : MaskKind::additive;
      p.mask_value = *mask->ref();
    } else {
      reject(fmt::format("attn_mask %{} of %{} has dtype {}: SDPA's mask is bool (keep) or the query's dtype {} "
                         "(additive)", *mask->ref(), n.name, graph::torch_name(md), graph::torch_name(q.dtype)));
    }
  } else if (is_causal) {
    p.mask = MaskKind::causal;
  }
  const Arg* gqa = n.arg_or_kwarg(7, "enable_gqa");
  p.grouped_allowed = gqa && gqa->get_if<bool>() && *gqa->get_if<bool>();
  swallow_repeats(g, p, &n, &n);
  return p;
}

}  // namespace fact::discover::attention
