// The scores of a hand-written attention (match.h): the walk from the softmax back to the
// score product q @ k^T through scales, masks, floating casts and views.
#include <cmath>

#include <fmt/format.h>

#include "families/attention/mask_eval.h"
#include "families/attention/match.h"
#include "graph/text.h"

namespace fact::discover::attention {

using graph::GraphIndex;
using graph::Node;
using graph::TensorType;

namespace {

std::array<int64_t, 2> last_two(const TensorType& t) { return {t.shape[t.rank() - 2], t.shape[t.rank() - 1]}; }

// A view or reshape that keeps the last two dims (bmm's [N, T, T] scores viewed as
// [B, H, T, T] for the mask and back).
bool keeps_last_two(const GraphIndex& g, const Node& n) {
  const bool view = n.op == "aten.view.default" || n.op == "aten.reshape.default" || n.op == "aten._unsafe_view.default";
  if (!view || n.args.empty() || !n.args[0].ref() || n.outputs.size() != 1 || !n.outputs[0].type) return false;
  const TensorType &in = g.type(*n.args[0].ref()), &o = *n.outputs[0].type;
  return in.rank() >= 3 && o.rank() >= 3 && in.numel() == o.numel() && in.shape.back() == o.shape.back() &&
         in.shape[in.rank() - 2] == o.shape[o.rank() - 2] && in.dtype == o.dtype;
}

// where(m, s, c) or where(m, c, s) with c a number: the scores s, the fill c, and whether
// m is true where the fill goes.
struct WhereFill {
  std::string scores;
  const graph::Arg* fill;
  bool fills_where_true;
};
std::optional<WhereFill> where_fill(const Node& n) {
  if (n.op != "aten.where.self" || n.args.size() != 3 || !n.args[0].ref()) return std::nullopt;
  if (n.args[1].ref() && n.args[2].number()) return WhereFill{*n.args[1].ref(), &n.args[2], false};
  if (n.args[2].ref() && n.args[1].number()) return WhereFill{*n.args[2].ref(), &n.args[1], true};
  return std::nullopt;
}

// The value a walked op reads the scores from; nullopt for an op the walk does not take.
std::optional<std::string> walked_input(const GraphIndex& g, const Node& n) {
  const std::string* a0 = n.args.empty() ? nullptr : n.args[0].ref();
  if (std::optional<ScaleOp> s = scale_op(n)) return s->input;
  if (std::optional<WhereFill> w = where_fill(n)) return w->scores;
  if (a0 && (n.op == "aten.masked_fill.Scalar" || tensor_scale(n) || float_cast(g, n) || keeps_last_two(g, n)))
    return *a0;
  return std::nullopt;
}

// A product of rank >= 3 somewhere behind `v` (any inputs, a few hops).
const Node* product_behind(const GraphIndex& g, const std::string& v, int depth) {
  const Node* n = g.producer(v);
  if (!n || depth == 0) return nullptr;
  if (is_product(n)) return n->outputs[0].type->rank() >= 3 ? n : nullptr;
  const Node* found = nullptr;
  auto visit = [&](const std::string& in) {
    if (!found) found = product_behind(g, in, depth - 1);
  };
  for (const auto& a : n->args) graph::for_each_ref(a, visit);
  return found;
}

const Node* walk_to_product(const GraphIndex& g, const std::string& v, int depth, const Node** stuck) {
  const Node* n = g.producer(v);
  if (!n || depth == 0) return nullptr;
  if (is_product(n)) return n->outputs[0].type->rank() >= 3 ? n : nullptr;
  if (std::optional<std::string> in = walked_input(g, *n)) return walk_to_product(g, *in, depth - 1, stuck);
  if (n->op == "aten.add.Tensor" && n->args.size() >= 2) {
    for (size_t i = 0; i < 2; ++i)
      if (const std::string* a = n->args[i].ref())
        if (const Node* m = walk_to_product(g, *a, depth - 1, stuck)) return m;
    return nullptr;
  }
  if (!*stuck) *stuck = n;
  return nullptr;
}

// The mask of `fill` (masked_fill or where) whose true elements are removed
// (`removes_if_true`) or kept: causal when provably the triangle, else a drop or keep mask
// (the kernel reads x itself for logical_not(x)); a mask made from a buffer must be proven.
void fill_mask(const GraphIndex& g, Parts& p, const Node& fill, const std::string& m, bool removes_if_true) {
  const TensorType& scores = *fill.outputs[0].type;
  const TensorType& mt = g.type(m);
  const int64_t r = scores.rank(), mr = mt.rank();
  const bool exact = mr >= 2 && mt.shape[mr - 2] == scores.shape[r - 2] && mt.shape[mr - 1] == scores.shape[r - 1];
  if (p.mask == MaskKind::none && take_constant_mask(g, p, m, fill, last_two(scores), false, removes_if_true)) return;
  const MaskProof proof = prove_mask(g, m);
  const MaskProof::Pattern causal_pattern =
      removes_if_true ? MaskProof::Pattern::strict_upper : MaskProof::Pattern::lower;
  const bool second = p.mask != MaskKind::none;
  if (proof.pattern == causal_pattern && exact && !second) {
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
    std::string why = proof.pattern == MaskProof::Pattern::unknown ? proof.why
                      : proof.pattern != causal_pattern
                          ? (removes_if_true ? "it removes the keys j <= i (the lower triangle itself)"
                                             : "it keeps the keys j > i (the strict upper triangle)")
                          : fmt::format("it is a triangle of {} over scores {}", dims(mt.shape), dims(scores.shape));
    reject(fmt::format("mask %{} of %{} is computed from {} %{} and is not provably causal: {}; the attention "
                       "rule says causal only when it can prove the mask is torch.tril(ones) (a buffer the "
                       "graph records with value=\"tril\")",
                       m, fill.name, src ? graph::kind_name(src->kind) : "buffer", proof.source, why));
  }
  if (mt.dtype != graph::DType::b8)
    reject(fmt::format("mask %{} of %{} has dtype {}, not bool", m, fill.name, graph::torch_name(mt.dtype)));
  const Node* n = g.producer(m);
  const std::string* in = n && !n->args.empty() ? n->args[0].ref() : nullptr;
  const bool negated = in && (n->op == "aten.logical_not.default" || n->op == "aten.bitwise_not.default") &&
                       g.type(*in).dtype == graph::DType::b8 && only_user(g, m) == &fill;
  const MaskKind kind = removes_if_true != negated ? MaskKind::drop : MaskKind::keep;
  const std::string value = negated ? *in : m;
  if (negated) p.nodes.push_back(n->name);
  if (second) p.extra_masks.emplace_back(kind, value);
  else {
    p.mask = kind;
    p.mask_value = value;
  }
}

// A fill of masked scores (masked_fill's value, where's number): -inf, or a finite fill of at
// most -1e9 once the scales after it are applied.
void take_fill(const GraphIndex& g, Parts& p, const Node& n, const std::string& m, const graph::Arg& fill_arg,
               bool removes_if_true) {
  const std::optional<double> fill = fill_arg.number();
  // A finite fill (-1e9, torch.finfo(float32).min), times the scales after it, of at most
  // kFiniteFill removes a key as -inf does: exp(fill - row max) is 0 in fp32 unless every
  // kept score of the row is below kFiniteFill + 104. A causal row always keeps its
  // diagonal; any other mask may empty a row, where eager averages V and -inf does not, so
  // the problem records the fill (realize's kernels take -inf only).
  // In a float16 op, float16's lowest value (torch.finfo(torch.float16).min) plays that role:
  // the scores cannot be below it, and a kept score would have to be below -65400.
  constexpr double kFiniteFill = -1e9, kHalfLowest = -65504.0;
  const bool half = n.outputs[0].type->dtype == graph::DType::f16;
  const bool neg_inf = fill && std::isinf(*fill) && *fill < 0;
  const bool finite_far = fill && std::isfinite(*fill) &&
                          (*fill * p.scale <= kFiniteFill || (half && p.scale == 1.0 && *fill <= kHalfLowest));
  if (!neg_inf && !finite_far) {
    if (fill && std::isfinite(*fill) && *fill <= kFiniteFill)
      reject(fmt::format("%{} fills masked scores with {}, which the scales after it (x{}) make {}: above -1e9, "
                         "so it is not taken for -inf", n.name, graph::format_arg(fill_arg),
                         graph::format_double(p.scale), graph::format_double(*fill * p.scale)));
    reject(fmt::format("%{} fills masked scores with {}, not -inf (or at most -1e9): the kernel removes masked "
                       "keys", n.name, graph::format_arg(fill_arg)));
  }
  const MaskKind before = p.mask;
  const size_t extras = p.extra_masks.size();
  fill_mask(g, p, n, m, removes_if_true);
  const bool causal = p.mask == MaskKind::causal && before != MaskKind::causal && extras == p.extra_masks.size();
  if (finite_far && !causal) p.fill = *fill;
}

// An additive term of the scores: the first is the mask, later ones are extra masks.
void take_additive(const GraphIndex& g, Parts& p, const Node& n, const Node* qk, const std::string& later_scale,
                   std::string& next) {
  const graph::Arg* alpha = n.kwarg("alpha");
  if (alpha && alpha->number() != 1.0)
    reject(fmt::format("%{} adds the mask times alpha={}", n.name, graph::format_arg(*alpha)));
  const Node* stuck = nullptr;
  const bool first = n.args[0].ref() && walk_to_product(g, *n.args[0].ref(), 12, &stuck) == qk;
  const std::string* m = n.args[first ? 1 : 0].ref();
  if (!m) reject(fmt::format("%{} adds a constant to the scores", n.name));
  if (!later_scale.empty())
    reject(fmt::format("%{} scales the scores after the additive mask %{}: the kernel adds the mask to the "
                       "scaled scores", later_scale, n.name));
  if (!graph::is_floating(g.type(*m).dtype))
    reject(fmt::format("additive mask %{} has dtype {}, not a floating dtype", *m, graph::torch_name(g.type(*m).dtype)));
  next = *n.args[first ? 0 : 1].ref();
  if (p.mask == MaskKind::none && take_constant_mask(g, p, *m, n, last_two(*n.outputs[0].type), true, false)) return;
  if (p.mask != MaskKind::none) {
    p.extra_masks.emplace_back(MaskKind::additive, *m);
  } else {
    p.mask = MaskKind::additive;
    p.mask_value = *m;
  }
}

}  // namespace

bool take_constant_mask(const GraphIndex& g, Parts& p, const std::string& m, const Node& consumer,
                        std::array<int64_t, 2> scores, bool additive, bool removed_if_true) {
  const std::optional<MaskClass> found = classify_constant_mask(g, m, additive, removed_if_true);
  if (!found) return false;
  const MaskClass& c = *found;
  const TensorType& mt = g.type(m);
  const int64_t mr = mt.rank();
  const bool exact = mr >= 2 && mt.shape[mr - 2] == scores[0] && mt.shape[mr - 1] == scores[1];
  if (c.kind == MaskClass::Kind::none_kept)
    reject(fmt::format("mask %{} of %{} is a constant that removes every key", m, consumer.name));
  if (c.kind == MaskClass::Kind::other || (c.kind == MaskClass::Kind::causal && !exact)) return false;
  if (c.kind == MaskClass::Kind::causal) {
    p.mask = MaskKind::causal;
    p.window = c.window;
  }
  std::vector<std::string> inside = p.nodes;
  inside.push_back(consumer.name);
  for (const auto& n : exclusive_cone(g, m, inside)) p.nodes.push_back(n);
  return true;
}

const Node* scores_product(const GraphIndex& g, const std::string& v) {
  const Node* stuck = nullptr;
  if (const Node* qk = walk_to_product(g, v, 16, &stuck)) return qk;
  if (!stuck) return nullptr;
  const Node* behind = product_behind(g, stuck->outputs.empty() ? v : stuck->outputs[0].name, 8);
  if (!behind) return nullptr;
  reject(fmt::format("%{} ({}) comes between the score product %{} and the softmax, and the attention rule does "
                     "not walk through it: only scales by a number, masked_fill / where with a constant fill, "
                     "an additive mask, floating casts and views that keep the last two dims may",
                     stuck->name, stuck->op, behind->name));
}

void walk_scores(const GraphIndex& g, Parts& p, const Node& sm, const Node* qk) {
  std::string s = *sm.args[0].ref();
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
    } else if (n->op == "aten.masked_fill.Scalar" && n->args.size() == 3 && n->args[1].ref() && n->args[0].ref()) {
      take_fill(g, p, *n, *n->args[1].ref(), n->args[2], true);
      next = *n->args[0].ref();
    } else if (std::optional<WhereFill> w = where_fill(*n)) {
      take_fill(g, p, *n, *n->args[0].ref(), *w->fill, w->fills_where_true);
      next = w->scores;
    } else if (n->op == "aten.add.Tensor" && n->args.size() == 2) {
      take_additive(g, p, *n, qk, later_scale, next);
    } else if (float_cast(g, *n) || keeps_last_two(g, *n)) {
      next = *n->args[0].ref();  // the kernel computes the scores in fp32, in any view
    } else if (tensor_scale(*n)) {
      reject(fmt::format("%{} scales the scores by the tensor %{}, whose value the graph does not record: the "
                         "attention rule takes a scale that is a number", n->name, *n->args[1].ref()));
    } else {
      reject(fmt::format("%{} ({}) comes between the score product and the softmax: only scales by a number, "
                         "masked_fill(mask, -inf), where(mask, scores, -inf) and an additive mask may", n->name,
                         n->op));
    }
    p.nodes.push_back(n->name);
    consumer = n;
    s = next;
  }
}

}  // namespace fact::discover::attention
