// Head handling of the `attention` rule (attention_match.h): K/V repeats of grouped-query
// attention swallowed, and the head merge after the product absorbed.
#include <fmt/format.h>

#include "families/attention/match.h"

namespace fact::discover::attention {

using graph::Arg;
using graph::GraphIndex;
using graph::Node;
using graph::TensorType;

namespace {


const std::string& out(const Node& n) { return n.outputs.at(0).name; }

struct Repeat {
  std::string base;  // [B, Hkv, T, D]
  int64_t n_rep = 0;
  std::vector<std::string> nodes;
};

// `v` [B, Hkv*n, T, D] made from [B, Hkv, T, D] by repeat_interleave(n, dim=1) or by
// [:, :, None].expand(B, Hkv, n, T, D).reshape(B, Hkv*n, T, D), each step read only by the
// next (and `v` only by `consumer`). Both repeat head h from kv head h / n.
std::optional<Repeat> repeated(const GraphIndex& g, const std::string& v, const Node* consumer) {
  if (!consumer || only_user(g, v) != consumer) return std::nullopt;
  const Node* n = g.producer(v);
  const TensorType& t = g.type(v);
  if (!n || t.rank() != 4 || n->args.empty() || !n->args[0].ref()) return std::nullopt;
  const std::string& in = *n->args[0].ref();
  if (n->op == "aten.repeat_interleave.self_int") {
    const Arg *reps = n->arg_or_kwarg(1, "repeats"), *dim = n->arg_or_kwarg(2, "dim");
    const int64_t* r = reps ? reps->get_if<int64_t>() : nullptr;
    const int64_t* d = dim ? dim->get_if<int64_t>() : nullptr;
    const TensorType& b = g.type(in);
    if (!r || !d || *r < 1 || normalized_dim(*d, 4) != 1 || b.rank() != 4) return std::nullopt;
    if (b.shape[0] != t.shape[0] || b.shape[1] * *r != t.shape[1] || b.shape[2] != t.shape[2] ||
        b.shape[3] != t.shape[3])
      return std::nullopt;
    return Repeat{in, *r, {n->name}};
  }
  if (n->op != "aten.reshape.default" && n->op != "aten.view.default" && n->op != "aten._unsafe_view.default")
    return std::nullopt;
  const Node* expand = only_user(g, in) == n ? g.producer(in) : nullptr;
  if (!expand || expand->op != "aten.expand.default" || expand->args.empty() || !expand->args[0].ref())
    return std::nullopt;
  const std::string& unsq_out = *expand->args[0].ref();
  const Node* unsq = only_user(g, unsq_out) == expand ? g.producer(unsq_out) : nullptr;
  if (!unsq || unsq->args.empty() || !unsq->args[0].ref()) return std::nullopt;
  const std::string& base = *unsq->args[0].ref();
  const TensorType &e = g.type(in), &u = g.type(unsq_out), &b = g.type(base);
  if (e.rank() != 5 || u.rank() != 5 || b.rank() != 4) return std::nullopt;
  const std::vector<int64_t> u_want{b.shape[0], b.shape[1], 1, b.shape[2], b.shape[3]};
  const bool unsqueezed = unsq->op == "aten.unsqueeze.default" || unsq->op == "aten.view.default" ||
                          unsq->op == "aten.reshape.default";
  if (!unsqueezed || u.shape != u_want) return std::nullopt;
  const int64_t rep = e.shape[2];
  const std::vector<int64_t> e_want{b.shape[0], b.shape[1], rep, b.shape[2], b.shape[3]};
  const std::vector<int64_t> t_want{b.shape[0], b.shape[1] * rep, b.shape[2], b.shape[3]};
  if (e.shape != e_want || t.shape != t_want) return std::nullopt;
  return Repeat{base, rep, {unsq->name, expand->name, n->name}};
}

}  // namespace

void swallow_repeats(const GraphIndex& g, Parts& p, const Node* k_consumer, const Node* v_consumer) {
  std::optional<Repeat> rk = repeated(g, p.k, k_consumer), rv = repeated(g, p.v, v_consumer);
  if (!rk || !rv || rk->n_rep != rv->n_rep) return;
  p.k = rk->base;
  p.v = rv->base;
  p.nodes.insert(p.nodes.end(), rk->nodes.begin(), rk->nodes.end());
  p.nodes.insert(p.nodes.end(), rv->nodes.begin(), rv->nodes.end());
  p.kv_repeat_swallowed = p.grouped_allowed = true;
}

OutputLayout absorb_output(const GraphIndex& g, const std::string& core, int64_t rank) {
  // dim[i]: which of O's dims (0 b, 1 h, 2 t, 3 d) the current value's dim i is; ostr: the
  // strides of O's dims in the current value's memory.
  std::vector<int> dim = rank == 4 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0, 2, 3};
  std::array<int64_t, 4> ostr{};
  auto strides_of = [&](const std::vector<int64_t>& s) {
    ostr = {};
    for (size_t i = 0; i < dim.size(); ++i) ostr[dim[i]] = s[i];
  };
  const TensorType& t0 = g.type(core);
  strides_of(t0.strides);
  bool merged = false;  // a view changed the shape: dims are no longer tracked
  const int64_t head_dim = t0.shape.back();
  OutputLayout best, walk{core, {}, {}};
  bool found = false;
  auto candidate = [&](const TensorType& t) {
    if (!t.is_contiguous() || (ostr[3] != 1 && head_dim != 1)) return;
    best = walk;
    best.strides = {ostr[0], ostr[1], ostr[2]};
    found = true;
  };
  candidate(t0);
  for (int step = 0; step < 8; ++step) {
    const Node* u = only_user(g, walk.value);
    if (!u || u->outputs.size() != 1 || !u->outputs[0].type || u->args.empty() || !u->args[0].ref() ||
        *u->args[0].ref() != walk.value)
      break;
    const TensorType &in = g.type(walk.value), &o = *u->outputs[0].type;
    if (o.dtype != in.dtype || o.numel() != in.numel()) break;
    const std::string& op = u->op;
    if (op == "aten.transpose.int" || op == "aten.permute.default") {
      if (merged) break;
      std::vector<int> next = dim;
      const int64_t r = in.rank();
      if (op == "aten.transpose.int") {
        const int64_t *a = u->args.size() == 3 ? u->args[1].get_if<int64_t>() : nullptr,
                      *b = u->args.size() == 3 ? u->args[2].get_if<int64_t>() : nullptr;
        if (!a || !b) break;
        const int64_t x = normalized_dim(*a, r), y = normalized_dim(*b, r);
        if (x < 0 || x >= r || y < 0 || y >= r) break;
        std::swap(next[x], next[y]);
      } else {
        const auto* l = u->args.size() == 2 ? u->args[1].get_if<Arg::List>() : nullptr;
        if (!l || static_cast<int64_t>(l->size()) != r) break;
        bool ok = true;
        for (int64_t i = 0; i < r; ++i) {
          const int64_t* d = (*l)[i].get_if<int64_t>();
          if (!d || normalized_dim(*d, r) < 0 || normalized_dim(*d, r) >= r) ok = false;
          else next[i] = dim[normalized_dim(*d, r)];
        }
        if (!ok) break;
      }
      dim = next;  // a view: the memory does not move
    } else if (op == "aten.contiguous.default" || op == "aten.clone.default") {
      if (!merged) strides_of(o.strides);  // a copy, laid out as its output records
      else if (!in.is_contiguous()) break;
    } else if (op == "aten.view.default" || op == "aten._unsafe_view.default" || op == "aten.reshape.default") {
      if (!in.is_contiguous() && op == "aten.reshape.default") {
        if (merged) break;
        strides_of(graph::contiguous_strides(in.shape));  // reshape copies in its input's row-major order
      }
      if (o.shape != in.shape) merged = true;
    } else {
      break;
    }
    walk.nodes.push_back(u->name);
    walk.value = out(*u);
    candidate(o);
  }
  if (!found)
    reject(fmt::format("the attention output %{} has strides {} and no single-use transpose, contiguous or view "
                       "after it gives a contiguous value: the kernel writes a contiguous output",
                       core, dims(t0.strides)));
  return best;
}

}  // namespace fact::discover::attention
