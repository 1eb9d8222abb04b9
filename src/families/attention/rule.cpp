// Rule `attention`: scaled dot-product attention, however it is written, becomes one fused
// attention kernel (FlashAttention-style: the [Tq, Tk] scores never reach memory),
//   O[b, h, i, :] = softmax_j(scale * Q[b,h,i,:] . K[b,g(h),j,:] + mask(b,h,i,j)) @ V[b,g(h)],
//   g(h) = h / (Hq / Hkv).
//
// Matches  a hand-written attention anchored at its softmax (aten.softmax.int / _softmax),
//          over the canonical graph (discover/canonical/): q @ k.transpose(-2, -1), scales by
//          numbers, masked_fill / where with a constant fill and + mask (several masks, the
//          first the kernel's; an additive mask (r - m) * c read as m with its prologue,
//          peel_mask_prologue), floating casts and views around the scores, softmax(-1),
//          casts, @ v; masks that are constants of the export classified (mask_eval.h); and
//          aten.scaled_dot_product_attention.default. Both swallow K/V repeats (GQA) and the
//          head merge after the product (attention_match.h).
// Meaning  F.scaled_dot_product_attention / softmax(q @ k^T * scale + mask) @ v.
// Family   cutlass.attention (src/families/attention/abi.h).
// Tests    tests/golden/discover/attention_*.txt -> *.plan, tests/python/test_attention_discovery.py.
//
// Conventions (docs/03-rules.md, "The attention rule"): q, k, v are the values the products
// read, 4-D [B, H, T, D] (or 3-D [N, T, D]: batch N, one head, head stride 0); strides are
// the graph's for those values, [batch, head, row], the head dim being unit stride.
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "base/checked_int.h"
#include "discover/plan.h"
#include "families/attention/match.h"
#include "families/attention/problem.h"
#include "families/attention/rule.h"

namespace fact::discover::rules {
namespace {

using attention::MaskKind;
using attention::Parts;
using graph::DType;
using graph::TensorType;


bool attention_dtype(DType d) { return d == DType::f32 || d == DType::bf16 || d == DType::f16; }

// [B, H, T, D] sizes of an operand (a 3-D [N, T, D] one has H = 1).
struct Dims4 {
  int64_t b, h, t, d;
};
Dims4 dims_of(const TensorType& t) {
  if (t.rank() == 4) return {t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
  return {t.shape[0], 1, t.shape[1], t.shape[2]};
}

// [batch, head, row] strides of q, k or v; the head dim must be unit stride.
nlohmann::ordered_json operand_strides(const std::string& role, const std::string& value, const TensorType& t) {
  const int64_t r = t.rank();
  if (t.shape[r - 1] != 1 && t.strides[r - 1] != 1)
    reject(fmt::format("operand {} %{} has strides {}: the head dim is not unit stride (the kernel reads rows of "
                       "D contiguous elements)", role, value, attention::dims(t.strides)));
  if (r == 4) return {t.strides[0], t.strides[1], t.strides[2]};
  return {t.strides[0], 0, t.strides[1]};
}

// [batch, head, row] strides of a mask broadcast to [B, H, Tq, Tk] (size-1 dims: stride 0).
// `key_stride` (when given) receives a key stride other than 1 instead of a rejection: the
// problem records it (mask_key_stride) and realize runs the pattern on the ATen path.
nlohmann::ordered_json mask_strides(const std::string& value, const TensorType& m, const Dims4& o, int64_t tk,
                                    int64_t rank, int64_t* key_stride = nullptr) {
  const std::vector<int64_t> target =
      rank == 4 ? std::vector<int64_t>{o.b, o.h, o.t, tk} : std::vector<int64_t>{o.b, o.t, tk};
  auto fail = [&](const char* why) {
    reject(fmt::format("mask %{} of shape {} strides {} {} the scores {}: the kernel reads a mask that broadcasts "
                       "as [B or 1, H or 1, Tq or 1, Tk] with unit stride along the keys",
                       value, attention::dims(m.shape), attention::dims(m.strides), why, attention::dims(target)));
  };
  int64_t lead = 0;  // leading size-1 dims beyond the scores' rank (a [1, 1, T, T] mask of bmm's scores)
  while (m.rank() - lead > rank && m.shape[lead] == 1) ++lead;
  if (m.rank() - lead > rank) fail("has more dims than");
  std::vector<int64_t> s(rank, 0);
  const int64_t off = rank - (m.rank() - lead);
  for (int64_t i = lead; i < m.rank(); ++i) {
    const int64_t size = m.shape[i], want = target[off + i - lead];
    if (size != want && size != 1) fail("does not broadcast to");
    s[off + i - lead] = size == 1 ? 0 : m.strides[i];
  }
  if (m.rank() == 0 || (tk != 1 && m.shape.back() == 1)) fail("is broadcast along the keys of");
  if (m.shape.back() != tk) fail("is not unit stride along the keys of");
  if (tk != 1 && s.back() != 1) {
    if (!key_stride || s.back() <= 0) fail("is not unit stride along the keys of");
    *key_stride = s.back();
  }
  if (rank == 4) return {s[0], s[1], s[2]};
  return {s[0], 0, s[1]};
}

// The dims of O from outermost to innermost in the output's memory ("bhtd", "bthd", ...).
std::string layout_name(const std::array<int64_t, 3>& st, const Dims4& o) {
  static const char* kOrders[] = {"bhtd", "bthd", "tbhd", "hbtd", "htbd", "thbd"};
  const int64_t size[3] = {o.b, o.h, o.t};
  for (const char* order : kOrders) {
    int64_t want[3] = {}, acc = o.d;
    for (int i = 2; i >= 0; --i) {
      const int dim = order[i] == 'b' ? 0 : order[i] == 'h' ? 1 : 2;
      want[dim] = acc;
      acc *= size[dim];
    }
    bool ok = true;
    for (int dim = 0; dim < 3; ++dim) ok = ok && (size[dim] == 1 || st[dim] == want[dim]);
    if (ok) return order;
  }
  reject(fmt::format("O lands at strides [{}, {}, {}] of the output: not a dense layout of [B, H, T, D]", st[0], st[1],
                     st[2]));
}

// A mask operand made by expand (m.expand_as(scores) in canonical form) and read once inside
// the pattern: the kernel reads m itself (its size-1 dims broadcast at stride 0), and the
// expand joins the pattern's nodes.
void peel_mask_expand(const graph::GraphIndex& g, Parts& parts, std::string& mask) {
  const std::set<std::string> inside(parts.nodes.begin(), parts.nodes.end());
  for (;;) {
    const graph::Node* e = g.producer(mask);
    const graph::Node* reader = attention::only_user(g, mask);
    if (!e || e->op != "aten.expand.default" || e->args.empty() || !e->args[0].ref() || !reader ||
        !inside.contains(reader->name) || g.type(*e->args[0].ref()).rank() > g.type(mask).rank())
      return;
    parts.nodes.push_back(e->name);
    mask = *e->args[0].ref();
  }
}

// The two ops that build an additive mask from a 0/1 one, (r - m) * c (Hugging Face's
// (1.0 - mask) * torch.finfo(dtype).min): aten.rsub.Scalar(m, r) with alpha 1, then
// aten.mul by the number c, each read only by the next and the last by a node inside the
// pattern, in m's floating dtype throughout (no cast: canonical form has dropped the no-op
// ones). Then the kernel reads m and computes the term itself (problem mask_rsub,
// mask_scale): both nodes join the pattern's nodes and `mask` becomes m. Otherwise (a
// divide, a tensor factor, another reader, a dtype change) nothing changes and the ops
// stay outside, their product the mask operand.
std::optional<realize::AttentionMaskPrologue> peel_mask_prologue(const graph::GraphIndex& g, Parts& parts, std::string& mask) {
  const std::set<std::string> inside(parts.nodes.begin(), parts.nodes.end());
  const graph::Node* mul = g.producer(mask);
  const graph::Node* reader = attention::only_user(g, mask);
  if (!mul || !reader || !inside.contains(reader->name) ||
      (mul->op != "aten.mul.Tensor" && mul->op != "aten.mul.Scalar"))
    return std::nullopt;
  const std::optional<attention::ScaleOp> c = attention::scale_op(*mul);
  if (!c || !std::isfinite(c->factor)) return std::nullopt;
  const graph::Node* rsub = g.producer(c->input);
  if (!rsub || rsub->op != "aten.rsub.Scalar" || attention::only_user(g, c->input) != mul ||
      rsub->args.size() < 2 || rsub->args.size() > 3 || !rsub->args[0].ref())
    return std::nullopt;
  const graph::Arg* alpha = rsub->args.size() == 3 ? &rsub->args[2] : rsub->kwarg("alpha");
  const std::optional<double> r = rsub->args[1].number();
  if (!r || !std::isfinite(*r) || (alpha && alpha->number() != 1.0)) return std::nullopt;
  for (const auto& [key, value] : rsub->kwargs)
    if (key != "alpha") return std::nullopt;
  const std::string& m = *rsub->args[0].ref();
  const TensorType &tm = g.type(m), &tr = g.type(c->input), &tc = g.type(mask);
  if (!graph::is_floating(tm.dtype) || tr.dtype != tm.dtype || tc.dtype != tm.dtype || tr.shape != tm.shape ||
      tc.shape != tm.shape)
    return std::nullopt;
  parts.nodes.push_back(mul->name);
  parts.nodes.push_back(rsub->name);
  mask = m;
  return realize::AttentionMaskPrologue{*r, c->factor};
}

// What the spelling asks beyond the kernels' one mask of Q's dtype, removed with -inf:
// problem fields realize reads (docs/03-rules.md, "Problem descriptor"); absent when not asked.
void add_spelled_extras(const graph::GraphIndex& g, const Parts& parts, const Dims4& o, int64_t tk, int64_t rank,
                        DType dtype, nlohmann::ordered_json& problem, int64_t& bytes) {
  if (!parts.mask_value.empty() && parts.mask == MaskKind::additive && g.type(parts.mask_value).dtype != dtype)
    problem["mask_dtype"] = graph::torch_name(g.type(parts.mask_value).dtype);
  if (parts.fill) problem["fill"] = *parts.fill;
  if (parts.extra_masks.empty()) return;
  nlohmann::ordered_json extra = nlohmann::ordered_json::array();
  for (const auto& [kind, value] : parts.extra_masks) {
    const TensorType& t = g.type(value);
    extra.push_back({{"mask", attention::mask_name(kind)},
                     {"value", value},
                     {"dtype", graph::torch_name(t.dtype)},
                     {"strides", mask_strides(value, t, o, tk, rank)}});
    bytes += tensor_bytes(t);
  }
  problem["extra_masks"] = std::move(extra);
}

Match make_match(const MatchContext& ctx, Parts parts) {
  const graph::GraphIndex& g = ctx.graph;
  const TensorType &tq = g.type(parts.q), &tk = g.type(parts.k), &tv = g.type(parts.v), &to = g.type(parts.core);
  const int64_t rank = tq.rank();
  if (rank != 3 && rank != 4)
    reject(fmt::format("q %{} has rank {}: the attention rule takes [B, H, T, D] or [N, T, D]", parts.q, rank));
  if (tk.rank() != rank || tv.rank() != rank || to.rank() != rank)
    reject(fmt::format("q {}, k {}, v {} and the output {} differ in rank", attention::dims(tq.shape),
                       attention::dims(tk.shape), attention::dims(tv.shape), attention::dims(to.shape)));
  for (const auto& [role, t] : {std::pair{"q", &tq}, std::pair{"k", &tk}, std::pair{"v", &tv}, std::pair{"output", &to}})
    if (!attention_dtype(t->dtype))
      reject(fmt::format("{} dtype {}: the attention rule takes float32, bfloat16 or float16", role,
                         graph::torch_name(t->dtype)));
  if (tk.dtype != tq.dtype || tv.dtype != tq.dtype || to.dtype != tq.dtype)
    reject(fmt::format("mixed dtypes: q {}, k {}, v {}, output {}; the kernel takes one", graph::torch_name(tq.dtype),
                       graph::torch_name(tk.dtype), graph::torch_name(tv.dtype), graph::torch_name(to.dtype)));
  const Dims4 q = dims_of(tq), k = dims_of(tk), v = dims_of(tv), o = dims_of(to);
  const std::string shapes = fmt::format("q {}, k {}, v {}", attention::dims(tq.shape), attention::dims(tk.shape),
                                         attention::dims(tv.shape));
  if (k.b != q.b || v.b != q.b) reject("batch sizes differ: " + shapes + "; the kernel takes one batch");
  if (k.h != v.h || k.t != v.t) reject("k and v differ in heads or keys: " + shapes);
  if (k.d != q.d || v.d != q.d) reject("head dims differ: " + shapes + "; the kernel takes one head dim");
  if (k.h != q.h && !(k.h == 1 || (parts.grouped_allowed && q.h % k.h == 0)))
    reject(fmt::format("q has {} heads and k, v {}: {}; the kernel maps query head h to kv head h / (Hq / Hkv)", q.h,
                       k.h, shapes));
  if (o.b != q.b || o.h != q.h || o.t != q.t || o.d != q.d)
    reject(fmt::format("the output {} is not [B, Hq, Tq, D] of {}", attention::dims(to.shape), shapes));
  if (q.b == 0 || q.h == 0 || q.t == 0 || k.t == 0 || q.d == 0) reject("empty problem: " + shapes);

  attention::OutputLayout out = attention::absorb_output(g, parts.core, rank);
  parts.nodes.insert(parts.nodes.end(), out.nodes.begin(), out.nodes.end());

  std::optional<realize::AttentionMaskPrologue> prologue;
  if (!parts.mask_value.empty()) {
    peel_mask_expand(g, parts, parts.mask_value);
    if (parts.mask == MaskKind::additive && (prologue = peel_mask_prologue(g, parts, parts.mask_value)))
      peel_mask_expand(g, parts, parts.mask_value);
  }
  for (auto& extra : parts.extra_masks) peel_mask_expand(g, parts, extra.second);
  const bool has_mask_operand = !parts.mask_value.empty();
  int64_t key_stride = 1;  // of an additive mask that is a strided view (T5's position bias)
  nlohmann::ordered_json strides = {
      {"q", operand_strides("q", parts.q, tq)}, {"k", operand_strides("k", parts.k, tk)},
      {"v", operand_strides("v", parts.v, tv)}, {"o", {out.strides[0], out.strides[1], out.strides[2]}},
      {"mask", has_mask_operand ? mask_strides(parts.mask_value, g.type(parts.mask_value), o, k.t, rank, &key_stride)
                                : nlohmann::ordered_json(nullptr)}};

  int64_t flops = 4;
  try {
    for (int64_t f : {q.d, q.b, q.h, realize::attention_kept_pairs(q.t, k.t, parts.mask, parts.window)})
      flops = checked_mul(flops, f, "4*B*H*Tq*Tk*D");
  } catch (const Error& e) {
    reject(std::string(e.what()) + ": " + shapes);
  }

  Match m;
  // Graph order, each node once (k and v may be one value, repeated once).
  const std::set<std::string> replaced(parts.nodes.begin(), parts.nodes.end());
  for (const auto& n : g.graph().nodes)
    if (replaced.contains(n.name)) m.nodes.push_back(n.name);
  m.output = out.value;
  m.operands = {{"q", parts.q}, {"k", parts.k}, {"v", parts.v}};
  if (has_mask_operand) m.operands.emplace_back("mask", parts.mask_value);
  m.problem = {{"kind", "attention"},
               {"batch", q.b},
               {"heads", q.h},
               {"kv_heads", k.h},
               {"seq_q", q.t},
               {"seq_k", k.t},
               {"head_dim", q.d},
               {"dtype", graph::torch_name(tq.dtype)},
               {"scale", parts.scale},
               {"mask", attention::mask_name(parts.mask)},
               {"strides", std::move(strides)},
               {"output_layout", layout_name(out.strides, o)},
               {"form", parts.form}};
  // The proof's premise, which the runtime re-checks against the buffer it loads: whether or
  // not the pattern's nodes read the buffer (a mask chain shared by two attentions stays ATen).
  if (!parts.causal_buffer.empty()) m.problem["causal_buffer"] = parts.causal_buffer;
  if (parts.window > 0) m.problem["window"] = parts.window;
  if (key_stride != 1) m.problem["mask_key_stride"] = key_stride;
  if (prologue) {
    m.problem["mask_rsub"] = prologue->rsub;
    m.problem["mask_scale"] = prologue->scale;
  }
  int64_t bytes = tensor_bytes(tq) + tensor_bytes(tk) + tensor_bytes(tv) + tensor_bytes(g.type(out.value));
  if (has_mask_operand) bytes += tensor_bytes(g.type(parts.mask_value));
  add_spelled_extras(g, parts, o, k.t, rank, tq.dtype, m.problem, bytes);
  m.work = {flops, bytes, matmul_unit(tq.dtype, ctx.precision)};
  return m;
}

MatchResult match_attention(const MatchContext& ctx, const graph::Node& node) {
  std::optional<Parts> parts = attention::match_sdpa(ctx.graph, node);
  if (!parts) parts = attention::match_written(ctx.graph, node);
  if (!parts) return NotApplicable{};
  return make_match(ctx, std::move(*parts));
}

}  // namespace

namespace {
// Narrowing (discover/narrow.h): under bf16 the kernel rounds fp32 q, k and v to bf16 as
// it loads them; all three may arrive in bf16 instead, with O written in bf16 (the
// problem is then the bf16 one). Not with an additive mask: the kernels read it, and
// compute a mask prologue, in q's element type, which would round an fp32 mask (a
// finfo(float32).min padding value becomes -inf).
std::vector<std::vector<std::string>> attention_narrow_groups(const Pattern& p, Precision precision) {
  if (precision != Precision::bf16 || p.problem.value("dtype", "") != "float32") return {};
  if (p.problem.value("mask", "") == "additive") return {};
  return {{"q", "k", "v", ""}};
}
void attention_narrow(Pattern& p, const std::vector<std::string>&) { p.problem["dtype"] = "bfloat16"; }
}  // namespace

Rule attention_rule() {
  return Rule{
      .name = "attention",
      .meaning = "F.scaled_dot_product_attention / softmax(q @ k^T * scale [+ mask | masked_fill -inf]) "
                 "[dropout p=0] @ v: causal (proven), additive, keep or drop masks, grouped K/V, head merge",
      .kernel_family = "attention",
      .tests = "tests/golden/discover/attention_*.txt, tests/python/test_attention_discovery.py",
      .match = &match_attention,
      .narrow_groups = &attention_narrow_groups,
      .narrow = &attention_narrow,
  };
}

}  // namespace fact::discover::rules
