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

bool is_product(const Node* n) {
  return n && (n->op == "aten.matmul.default" || n->op == "aten.bmm.default") && n->args.size() == 2 &&
         n->outputs.size() == 1 && n->outputs[0].type;
}

std::string names(const std::vector<const Node*>& nodes) {
  std::vector<std::string> s;
  for (const Node* n : nodes) s.push_back("%" + n->name);
  return fmt::format("{}", fmt::join(s, ", "));
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

// x * c, c * x or x / c for a number c: the tensor read and the factor applied to it.
struct ScaleOp {
  std::string input;
  double factor;
};
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

// A scale by a tensor (x * t, x / t): the rule cannot know its value.
bool tensor_scale(const Node& n) {
  return (n.op == "aten.mul.Tensor" || n.op == "aten.div.Tensor") && n.args.size() == 2 && n.args[0].ref() &&
         n.args[1].ref();
}

double checked_factor(const Node& n, double factor) {
  if (!std::isfinite(factor) || factor <= 0)
    reject(fmt::format("%{} scales by {}: the attention rule takes a positive, finite scale", n.name, factor));
  return factor;
}

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

// Back from the softmax input through scales and masks to the score product (rank >= 3).
const Node* scores_product(const GraphIndex& g, const std::string& v, int depth = 12) {
  const Node* n = g.producer(v);
  if (!n || depth == 0) return nullptr;
  if (is_product(n)) return n->outputs[0].type->rank() >= 3 ? n : nullptr;
  const std::string* a0 = n->args.empty() ? nullptr : n->args[0].ref();
  if (std::optional<ScaleOp> s = scale_op(*n)) return scores_product(g, s->input, depth - 1);
  const bool cast = n->op == "aten.to.dtype" || n->op == "aten._to_copy.default" || n->op == "aten.type_as.default";
  if ((n->op == "aten.masked_fill.Scalar" || n->op == "aten.masked_fill.Tensor" || tensor_scale(*n) || cast) && a0)
    return scores_product(g, *a0, depth - 1);
  if (n->op == "aten.add.Tensor" && n->args.size() >= 2) {
    if (a0)
      if (const Node* m = scores_product(g, *a0, depth - 1)) return m;
    if (const std::string* a1 = n->args[1].ref()) return scores_product(g, *a1, depth - 1);
  }
  return nullptr;
}

// Some user chain of `v` (through dropout, scales, casts) reaches a product reading it first.
bool feeds_product(const GraphIndex& g, const std::string& v, int depth = 4) {
  for (const Node* u : g.users(v)) {
    if (is_product(u) && u->args[0].ref() && *u->args[0].ref() == v) return true;
    const bool passes = u->op == "aten.dropout.default" || scale_op(*u) || u->op == "aten.to.dtype" ||
                        u->op == "aten._to_copy.default" || u->op == "aten.type_as.default" ||
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

// masked_fill(scores, m, -inf): causal when m is provably the strict upper triangle, else a
// drop mask (or keep, for logical_not(keep)); a mask made from a buffer must be proven.
void fill_mask(const GraphIndex& g, Parts& p, const Node& fill, const std::string& m) {
  const TensorType& scores = *fill.outputs[0].type;
  const TensorType& mt = g.type(m);
  const int64_t r = scores.rank(), mr = mt.rank();
  const bool exact = mr >= 2 && mt.shape[mr - 2] == scores.shape[r - 2] && mt.shape[mr - 1] == scores.shape[r - 1];
  const MaskProof proof = prove_mask(g, m);
  if (proof.pattern == MaskProof::Pattern::strict_upper && exact) {
    p.mask = MaskKind::causal;
    if (proof.from_buffer) p.causal_buffer = proof.source;
    std::string v = m;
    const Node* consumer = &fill;
    for (const Node* n : proof.chain) {  // the proof's nodes, while nothing else reads them
      if (only_user(g, v) != consumer) break;
      p.nodes.push_back(n->name);
      consumer = n;
      if (n->args.empty() || !n->args[0].ref()) break;
      v = *n->args[0].ref();
    }
    return;
  }
  if (proof.from_buffer) {
    const graph::Placeholder* src = g.placeholder(proof.source);
    std::string why = proof.pattern == MaskProof::Pattern::lower
                          ? "it removes the keys j <= i (the lower triangle itself)"
                      : proof.pattern == MaskProof::Pattern::strict_upper
                          ? fmt::format("it is a triangle of {} over scores {}", dims(mt.shape), dims(scores.shape))
                          : proof.why;
    reject(fmt::format("mask %{} of %{} is computed from {} %{} and is not provably causal: {}; the attention "
                       "rule says causal only when it can prove the mask is torch.tril(ones) (a buffer the "
                       "graph records with value=\"tril\")",
                       m, fill.name, src ? graph::kind_name(src->kind) : "buffer", proof.source, why));
  }
  if (mt.dtype != graph::DType::b8)
    reject(fmt::format("mask %{} of %{} has dtype {}, not bool", m, fill.name, graph::torch_name(mt.dtype)));
  const Node* n = g.producer(m);
  const std::string* in = n && !n->args.empty() ? n->args[0].ref() : nullptr;
  if (in && (n->op == "aten.logical_not.default" || n->op == "aten.bitwise_not.default") &&
      g.type(*in).dtype == graph::DType::b8 && only_user(g, m) == &fill) {
    p.mask = MaskKind::keep;  // masked_fill(~keep, -inf): the kernel reads keep itself
    p.mask_value = *in;
    p.nodes.push_back(n->name);
    return;
  }
  p.mask = MaskKind::drop;
  p.mask_value = m;
}

}  // namespace

std::optional<Parts> match_written(const GraphIndex& g, const Node& sm) {
  if (sm.op != "aten.softmax.int" && sm.op != "aten._softmax.default") return std::nullopt;
  if (sm.args.empty() || !sm.args[0].ref() || sm.outputs.size() != 1 || !sm.outputs[0].type) return std::nullopt;
  const std::string s_in = *sm.args[0].ref();
  const Node* qk = scores_product(g, s_in);
  if (!qk || !feeds_product(g, out(sm))) return std::nullopt;

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
    if (is_product(u) && u->args[0].ref() && *u->args[0].ref() == cur) {
      pv = u;
      break;
    }
    if (scale_op(*u))
      reject(fmt::format("%{} scales the probabilities after the softmax: the kernel applies its scale to "
                         "q.k before the softmax", u->name));
    reject(fmt::format("%{} ({}) reads the probabilities before the product with v: only dropout with p = 0 "
                       "or train=False may come between the softmax and @ v", u->name, u->op));
  }
  if (!pv->args[1].ref()) reject(fmt::format("%{}: v is not a tensor", pv->name));
  p.v = *pv->args[1].ref();
  p.core = out(*pv);
  p.nodes.push_back(pv->name);

  // Backward: scales and masks down to q @ k^T.
  std::string s = s_in;
  const Node* consumer = &sm;
  std::string later_scale;  // a scale met on the way back: applied after what comes next
  for (;;) {
    if (only_user(g, s) != consumer)
      reject(fmt::format("%{} (the attention scores) is also read by {}: the kernel never materializes the "
                         "scores", s, other_readers(g, s, consumer)));
    const Node* n = g.producer(s);
    if (n == qk) break;
    if (!n) reject(fmt::format("%{} is a graph input, not the score product", s));
    std::string next;
    if (std::optional<ScaleOp> sc = scale_op(*n)) {
      p.scale *= checked_factor(*n, sc->factor);
      if (later_scale.empty()) later_scale = n->name;
      next = sc->input;
    } else if (n->op == "aten.masked_fill.Scalar" && n->args.size() == 3 && n->args[1].ref()) {
      if (p.mask != MaskKind::none)
        reject(fmt::format("%{} is a second mask of the scores: the kernel applies one", n->name));
      const std::optional<double> fill = n->args[2].number();
      // A finite fill (-1e9, torch.finfo(float32).min), times the scales after it, of at
      // most kFiniteFill removes a key as -inf does: exp(fill - row max) is 0 in fp32 unless
      // every kept score of the row is below kFiniteFill + 104. A causal row always keeps
      // its diagonal, so this holds for causal masks only (a drop mask may empty a row,
      // where eager averages and -inf gives NaN).
      constexpr double kFiniteFill = -1e9;
      const bool neg_inf = fill && std::isinf(*fill) && *fill < 0;
      const bool finite_far = fill && std::isfinite(*fill) && *fill * p.scale <= kFiniteFill;
      if (!neg_inf && !finite_far) {
        if (fill && std::isfinite(*fill) && *fill <= kFiniteFill)
          reject(fmt::format("%{} fills masked scores with {}, which the scales after it (x{}) make {}: above -1e9, "
                             "so it is not taken for -inf", n->name, graph::format_arg(n->args[2]),
                             graph::format_double(p.scale), graph::format_double(*fill * p.scale)));
        reject(fmt::format("%{} fills masked scores with {}, not -inf (or at most -1e9 on a causal mask): the "
                           "kernel removes masked keys", n->name, graph::format_arg(n->args[2])));
      }
      fill_mask(g, p, *n, *n->args[1].ref());
      if (finite_far && p.mask != MaskKind::causal)
        reject(fmt::format("%{} fills masked scores with {}: a finite fill is taken for -inf only on a proven "
                           "causal mask (a row this mask empties would average in eager)",
                           n->name, graph::format_arg(n->args[2])));
      next = *n->args[0].ref();
    } else if (n->op == "aten.add.Tensor" && n->args.size() == 2) {
      const Arg* alpha = n->kwarg("alpha");
      if (alpha && alpha->number() != 1.0)
        reject(fmt::format("%{} adds the mask times alpha={}", n->name, graph::format_arg(*alpha)));
      const bool first = n->args[0].ref() && scores_product(g, *n->args[0].ref()) == qk;
      const std::string* m = n->args[first ? 1 : 0].ref();
      if (!m) reject(fmt::format("%{} adds a constant to the scores", n->name));
      if (p.mask != MaskKind::none)
        reject(fmt::format("%{} is a second mask of the scores: the kernel applies one", n->name));
      if (!later_scale.empty())
        reject(fmt::format("%{} scales the scores after the additive mask %{}: the kernel adds the mask to the "
                           "scaled scores", later_scale, n->name));
      if (g.type(*m).dtype != n->outputs[0].type->dtype)
        reject(fmt::format("additive mask %{} has dtype {}, the scores {}", *m, graph::torch_name(g.type(*m).dtype),
                           graph::torch_name(n->outputs[0].type->dtype)));
      p.mask = MaskKind::additive;
      p.mask_value = *m;
      next = *n->args[first ? 0 : 1].ref();
    } else if (tensor_scale(*n)) {
      reject(fmt::format("%{} scales the scores by the tensor %{}, whose value the graph does not record: the "
                         "attention rule takes a scale that is a number", n->name, *n->args[1].ref()));
    } else {
      reject(fmt::format("%{} ({}) comes between the score product and the softmax: only scales by a number, "
                         "masked_fill(mask, -inf) and an additive mask may", n->name, n->op));
    }
    p.nodes.push_back(n->name);
    consumer = n;
    s = next;
  }

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
  if (const Arg* mask = n.arg_or_kwarg(3, "attn_mask"); mask && !mask->is<graph::None>()) {
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
