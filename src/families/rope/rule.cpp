// Rule `rope`: rotary position embeddings (Su et al., "RoFormer", arXiv:2104.09864) of one
// tensor x — q or k, one pattern each — as real models spell them, become one rope kernel:
//   out = x * cos + rotate(x) * sin
//   half-split:  rotate(x) = cat(-x[..., H:], x[..., :H], -1)           (LLaMA, Hugging Face's rotate_half)
//   pairs:       rotate(x) = stack(-x[..., 1::2], x[..., ::2], -1).flatten(-2)  (GPT-J's rotate_every_two)
// with H = head_dim / 2 and the rotation over the last dim.
//
// Matches  add(mul(x, cos), mul(rotate(x), sin)) in any operand order, cos and sin any
//          tensors of x's dtype that broadcast to x along its leading dims (a buffer sliced
//          to T, a table computed in forward from inv_freq, indexed by position ids and
//          unsqueezed: those ops stay ATen, the kernel reads their result with its strides).
// Rejects  (each with its reason) the wrong halves (cat(x1, -x2), cat(-x1, x2), ...), a
//          rotation over another dim than the last, slices with a step or an offset that is
//          not the half, a rotation of another tensor than the one times cos, cos or sin of
//          another dtype or not broadcasting along the leading dims only, x of rank > 4, a
//          non-unit-stride last dim, an interior value read outside.
// Meaning  apply_rotary_pos_emb(q, k, cos, sin)'s q_embed (or k_embed) in Hugging Face's
//          modeling_llama.py.
// Family   rope (src/families/rope/abi.h).
// Tests    tests/golden/discover/rope_*.txt -> *.plan, tests/python/test_block_examples.py,
//          tests/python/test_hf_layers.py.
#include "families/rope/rule.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "discover/pattern.h"
#include "discover/plan.h"

namespace fact::discover::rules {
namespace {

using graph::Arg;
using graph::DType;
using graph::GraphIndex;
using graph::Node;
using graph::TensorType;

bool io_dtype(DType d) { return d == DType::f32 || d == DType::bf16 || d == DType::f16; }

const Node* producer_of(const GraphIndex& g, const Arg& a) { return a.ref() ? g.producer(*a.ref()) : nullptr; }

const std::string& out_of(const Node& n) { return n.outputs.at(0).name; }

bool is_binary(const Node* n, std::string_view op) {
  return n && n->op == op && n->args.size() == 2 && n->kwargs.empty() && n->args[0].ref() && n->args[1].ref() &&
         n->outputs.size() == 1;
}

int64_t normalize_dim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

// One slice x[..., start:end:step] along `dim` (normalized, end clamped to the size).
struct Slice {
  const Node* node;
  std::string source;
  int64_t dim, start, end, step;
};

std::optional<Slice> slice_of(const GraphIndex& g, const Node* n) {
  if (!n || n->op != "aten.slice.Tensor" || n->args.empty() || !n->args[0].ref() || !n->kwargs.empty()) return {};
  const std::string& src = *n->args[0].ref();
  const TensorType& t = g.type(src);
  const auto num = [&](size_t i, int64_t dflt) -> std::optional<int64_t> {
    if (i >= n->args.size() || n->args[i].is<graph::None>()) return dflt;
    const auto* v = n->args[i].get_if<int64_t>();
    return v ? std::optional<int64_t>(*v) : std::nullopt;
  };
  const auto dim = num(1, 0), start = num(2, 0), end = num(3, std::numeric_limits<int64_t>::max()), step = num(4, 1);
  if (!dim || !start || !end || !step || t.rank() == 0) return {};
  Slice s{n, src, normalize_dim(*dim, t.rank()), *start, *end, *step};
  if (s.dim < 0 || s.dim >= t.rank()) return {};
  const int64_t size = t.shape[size_t(s.dim)];
  if (s.start < 0) s.start += size;
  if (s.end < 0) s.end += size;
  s.end = std::min(s.end, size);
  return s;
}

std::string slice_text(const Slice& s, int64_t rank) {
  const std::string idx = s.step == 1 ? fmt::format("{}:{}", s.start, s.end) : fmt::format("{}:{}:{}", s.start, s.end, s.step);
  std::vector<std::string> parts;
  for (int64_t i = 0; i < rank; ++i) parts.push_back(i == s.dim ? idx : ":");
  return fmt::format("{}[{}]", s.source, fmt::join(parts, ", "));
}

// A part of the rotation: neg(slice) or slice.
struct Part {
  Slice slice;
  const Node* neg = nullptr;
};

std::optional<Part> part_of(const GraphIndex& g, const Arg& a) {
  const Node* n = producer_of(g, a);
  Part p{};
  if (n && n->op == "aten.neg.default" && n->args.size() == 1) {
    p.neg = n;
    n = producer_of(g, n->args[0]);
  }
  auto s = slice_of(g, n);
  if (!s) return {};
  p.slice = *s;
  return p;
}

// What a matched rope is made of, before its checks.
struct RopeParts {
  std::string form;  // "half" | "pairs"
  std::string x, cos, sin;
  std::vector<const Node*> nodes;
};

// The rotation at `n` (cat, or a flatten/view/reshape of a stack): nullopt when `n` is none
// of those or its parts are not a negated slice and a slice; its Rejection when it has that
// shape but is not rotate_half / rotate_every_two of the last dim.
std::optional<RopeParts> rotation(const GraphIndex& g, const Node* n) {
  if (!n || n->outputs.size() != 1 || !n->outputs[0].type) return {};
  RopeParts r;
  const Node* join = n;
  if (n->op == "aten.view.default" || n->op == "aten.reshape.default" || n->op == "aten.flatten.using_ints" ||
      n->op == "aten._unsafe_view.default") {
    join = producer_of(g, n->args.empty() ? Arg() : n->args[0]);
    if (!join || join->op != "aten.stack.default") return {};
    r.nodes.push_back(n);
    r.form = "pairs";
  } else if (n->op == "aten.cat.default") {
    r.form = "half";
  } else {
    return {};
  }
  const auto* list = join->args.empty() ? nullptr : join->args[0].get_if<Arg::List>();
  if (!list || list->size() != 2) return {};
  auto a = part_of(g, (*list)[0]), b = part_of(g, (*list)[1]);
  if (!a || !b || (!a->neg && !b->neg)) return {};
  r.nodes.push_back(join);
  for (const Part* p : {&*a, &*b}) {
    if (p->neg) r.nodes.push_back(p->neg);
    r.nodes.push_back(p->slice.node);
  }
  const std::string& x = a->slice.source;
  const TensorType& tx = g.type(x);
  const int64_t rank = tx.rank(), d = tx.shape.back();
  if (b->slice.source != x)
    reject(fmt::format("%{} joins slices of %{} and %{}: a rotation takes both halves of one tensor", join->name, x,
                       b->slice.source));
  const Arg* dim_arg = join->arg_or_kwarg(1, "dim");
  const auto* jd = dim_arg ? dim_arg->get_if<int64_t>() : nullptr;
  const int64_t join_rank = r.form == "pairs" ? rank + 1 : rank;
  const int64_t jdim = jd ? normalize_dim(*jd, join_rank) : 0;
  for (const Part* p : {&*a, &*b}) {
    if (p->slice.dim != rank - 1)
      reject(fmt::format("%{} slices %{} along dim {}, not the last: the rope kernels rotate the last (head) dim",
                         p->slice.node->name, x, p->slice.dim));
  }
  if (jdim != join_rank - 1)
    reject(fmt::format("%{} joins the halves along dim {}, not the last: the rope kernels rotate the last (head) dim",
                       join->name, jdim));
  const std::string want = r.form == "half" ? fmt::format("cat(-x[..., {}:], x[..., :{}])", d / 2, d / 2)
                                            : "stack(-x[..., 1::2], x[..., ::2], -1).flatten(-2)";
  const auto text = [&](const Part& p) { return (p.neg ? "-" : "") + slice_text(p.slice, rank); };
  const bool right = r.form == "half"
                         ? a->neg && !b->neg && a->slice.step == 1 && b->slice.step == 1 && d % 2 == 0 &&
                               a->slice.start == d / 2 && a->slice.end == d && b->slice.start == 0 && b->slice.end == d / 2
                         : a->neg && !b->neg && a->slice.step == 2 && b->slice.step == 2 && d % 2 == 0 &&
                               a->slice.start == 1 && b->slice.start == 0 && a->slice.end == d && b->slice.end >= d - 1;
  if (!right)
    reject(fmt::format("%{} is {}({}, {}): the rotation of rope is {} (x = %{}, last dim {})", join->name,
                       r.form == "half" ? "cat" : "stack", text(*a), text(*b), want, x, d));
  if (r.form == "pairs" && g.type(out_of(*n)).shape != tx.shape)
    reject(fmt::format("%{} reshapes the stacked pairs to {}, not x's shape {}", n->name, g.type(out_of(*n)).shape,
                       tx.shape));
  r.x = x;
  return r;
}

// add(mul(x, cos), mul(rotate(x), sin)) at `add`, in any operand order, or nullopt.
std::optional<RopeParts> find_rope(const GraphIndex& g, const Node& add) {
  if (!is_binary(&add, "aten.add.Tensor")) return {};
  for (int i = 0; i < 2; ++i) {
    const Node* rot_mul = producer_of(g, add.args[size_t(i)]);
    const Node* x_mul = producer_of(g, add.args[size_t(1 - i)]);
    if (!is_binary(rot_mul, "aten.mul.Tensor") || !is_binary(x_mul, "aten.mul.Tensor")) continue;
    for (int k = 0; k < 2; ++k) {
      auto r = rotation(g, producer_of(g, rot_mul->args[size_t(k)]));
      if (!r) continue;
      r->sin = *rot_mul->args[size_t(1 - k)].ref();
      const std::string& a = *x_mul->args[0].ref();
      const std::string& b = *x_mul->args[1].ref();
      if (a != r->x && b != r->x)
        reject(fmt::format("%{} multiplies %{} by %{}, but the rotation %{} is of %{}", x_mul->name, a, b,
                           r->nodes.front()->name, r->x));
      r->cos = a == r->x ? b : a;
      r->nodes.push_back(rot_mul);
      r->nodes.push_back(x_mul);
      r->nodes.push_back(&add);
      return r;
    }
  }
  return {};
}

// The strides of `t`'s three leading dims as the kernel sees them: right-aligned to x's
// [n0, n1, n2, D] (`rank` <= 4), 0 for a dim of size 1 or one it lacks (broadcast).
std::array<int64_t, 3> leading_strides(const TensorType& t) {
  std::array<int64_t, 3> s{0, 0, 0};
  const int64_t r = t.rank();
  for (int64_t i = 0; i + 1 < r; ++i) {
    const size_t slot = size_t(3 - (r - 1 - i));
    s[slot] = t.shape[size_t(i)] == 1 ? 0 : t.strides[size_t(i)];
  }
  return s;
}

void check_table(const std::string& role, const std::string& v, const TensorType& t, const TensorType& tx) {
  if (t.dtype != tx.dtype)
    reject(fmt::format("{} %{} has dtype {}, x {}: the rope kernels read cos, sin and x in one dtype", role, v,
                       graph::torch_name(t.dtype), graph::torch_name(tx.dtype)));
  if (t.rank() > tx.rank() || t.rank() == 0 || t.shape.back() != tx.shape.back())
    reject(fmt::format("{} %{} of shape {} does not broadcast to x {} along its leading dims only", role, v, t.shape,
                       tx.shape));
  for (int64_t i = 1; i < t.rank(); ++i) {
    const int64_t mine = t.shape[size_t(t.rank() - 1 - i)], theirs = tx.shape[size_t(tx.rank() - 1 - i)];
    if (mine != 1 && mine != theirs)
      reject(fmt::format("{} %{} of shape {} does not broadcast to x {}", role, v, t.shape, tx.shape));
  }
  if (t.shape.back() > 1 && t.strides.back() != 1)
    reject(fmt::format("{} %{} has strides {}: the last dim is not unit stride (the kernel reads 16-byte vectors)", role,
                       v, t.strides));
}

Match make_match(const MatchContext& ctx, const RopeParts& p) {
  const GraphIndex& g = ctx.graph;
  const Node& add = *p.nodes.back();
  const TensorType& tx = g.type(p.x);
  const TensorType& to = g.type(out_of(add));
  if (!io_dtype(tx.dtype))
    reject(fmt::format("x %{} has dtype {}: the rope kernels take float32, bfloat16 or float16", p.x,
                       graph::torch_name(tx.dtype)));
  if (tx.rank() > 4 || tx.rank() < 1)
    reject(fmt::format("x %{} has rank {}: the rope kernels take [n0, n1, n2, head_dim] at most", p.x, tx.rank()));
  if (tx.shape.back() > 1 && tx.strides.back() != 1)
    reject(fmt::format("x %{} has strides {}: the last dim is not unit stride (the kernel reads 16-byte vectors)", p.x,
                       tx.strides));
  check_table("cos", p.cos, g.type(p.cos), tx);
  check_table("sin", p.sin, g.type(p.sin), tx);
  if (to.shape != tx.shape || to.dtype != tx.dtype)
    reject(fmt::format("the output %{} is {}{}, not x's {}{}", out_of(add), graph::torch_name(to.dtype), to.shape,
                       graph::torch_name(tx.dtype), tx.shape));
  if (to.shape.back() > 1 && to.strides.back() != 1)
    reject(fmt::format("the output %{} has strides {}: the last dim is not unit stride", out_of(add), to.strides));
  std::set<std::string> interior;
  std::set<const Node*> inside(p.nodes.begin(), p.nodes.end());
  for (const Node* n : p.nodes)
    if (n != &add) interior.insert(out_of(*n));
  const std::string why = read_outside(g, interior, inside, "be computed inside the rope kernel only", "outside the rope");
  if (!why.empty()) reject(why);

  Match m;
  for (const Node& n : g.graph().nodes)
    if (inside.contains(&n)) m.nodes.push_back(n.name);
  m.output = out_of(add);
  m.operands = {{"x", p.x}, {"cos", p.cos}, {"sin", p.sin}};
  std::array<int64_t, 3> dims{1, 1, 1};
  for (int64_t i = 0; i + 1 < tx.rank(); ++i) dims[size_t(3 - (tx.rank() - 1 - i))] = tx.shape[size_t(i)];
  m.problem = {{"kind", "rope"},
               {"form", p.form},
               {"dims", dims},
               {"head_dim", tx.shape.back()},
               {"dtype", graph::torch_name(tx.dtype)},
               {"strides",
                {{"x", leading_strides(tx)},
                 {"cos", leading_strides(g.type(p.cos))},
                 {"sin", leading_strides(g.type(p.sin))},
                 {"out", leading_strides(to)}}}};
  const int64_t bytes = tensor_bytes(tx) + tensor_bytes(to) + tensor_bytes(g.type(p.cos)) + tensor_bytes(g.type(p.sin));
  m.work = {3 * tx.numel(), bytes, MathUnit::fp32_simt};
  return m;
}

MatchResult match_rope(const MatchContext& ctx, const Node& node) {
  const std::optional<RopeParts> parts = find_rope(ctx.graph, node);
  if (!parts) return NotApplicable{};
  return make_match(ctx, *parts);
}

}  // namespace

namespace {
// Narrowing (discover/narrow.h): the kernel computes in fp32 and can write its output in
// bf16 (out_dtype), rounded as the bf16 reader (attention) would round it.
std::vector<std::vector<std::string>> rope_narrow_groups(const Pattern& p, Precision precision) {
  if (precision != Precision::bf16 || p.problem.value("dtype", "") != "float32" || p.problem.contains("out_dtype")) return {};
  return {{""}};
}
void rope_narrow(Pattern& p, const std::vector<std::string>&) { p.problem["out_dtype"] = "bfloat16"; }
}  // namespace

Rule rope_rule() {
  return Rule{
      .name = "rope",
      .meaning = "rotary position embeddings of q or k: x * cos + rotate_half(x) * sin (cat(-x2, x1), LLaMA / Hugging "
                 "Face) or the interleaved pairs (stack(-x[1::2], x[::2]).flatten), over the last dim",
      .kernel_family = "rope",
      .tests = "tests/golden/discover/rope_*.txt, tests/python/test_block_examples.py, tests/python/test_hf_layers.py",
      .match = &match_rope,
      .narrow_groups = &rope_narrow_groups,
      .narrow = &rope_narrow,
  };
}

}  // namespace fact::discover::rules
