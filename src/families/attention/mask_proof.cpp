// The mask proof of the `attention` rule: which boolean masks are provably the causal
// triangle. docs/03-rules.md, "The attention rule"; the value class "tril" of a buffer is
// docs/02-graph-format.md's.
#include <limits>

#include <fmt/format.h>

#include "families/attention/match.h"

namespace fact::discover::attention {
namespace {

using graph::Node;
using graph::PlaceholderKind;

// The first buffer or constant among the values `v` is computed from (a few hops back), or "".
std::string buffer_source(const graph::GraphIndex& g, const std::string& v, int depth = 16) {
  if (const graph::Placeholder* p = g.placeholder(v))
    return p->kind == PlaceholderKind::buffer || p->kind == PlaceholderKind::constant ? v : "";
  const Node* n = g.producer(v);
  if (!n || depth == 0) return "";
  std::string found;
  auto visit = [&](const std::string& in) {
    if (found.empty()) found = buffer_source(g, in, depth - 1);
  };
  for (const auto& a : n->args) graph::for_each_ref(a, visit);
  for (const auto& [k, a] : n->kwargs) graph::for_each_ref(a, visit);
  return found;
}

int64_t int_arg(const Node& n, size_t i, std::string_view key, int64_t absent) {
  const graph::Arg* a = n.arg_or_kwarg(i, key);
  if (!a || a->is<graph::None>()) return absent;
  if (auto* v = a->get_if<int64_t>()) return *v;
  return std::numeric_limits<int64_t>::min();  // not an integer: no caller accepts it
}

bool last_two_kept(const graph::TensorType& in, const graph::TensorType& out) {
  return in.rank() >= 2 && out.rank() >= 2 && in.shape[in.rank() - 2] == out.shape[out.rank() - 2] &&
         in.shape[in.rank() - 1] == out.shape[out.rank() - 1];
}

bool is_ones(const Node* n) { return n && n->op == "aten.ones.default"; }

}  // namespace

MaskProof prove_mask(const graph::GraphIndex& g, const std::string& mask) {
  MaskProof proof;
  auto unknown = [&](std::string why) {
    proof.pattern = MaskProof::Pattern::unknown;
    proof.why = std::move(why);
    if (proof.source.empty()) {
      proof.source = buffer_source(g, mask);
      proof.from_buffer = !proof.source.empty();
    }
    return proof;
  };
  bool negated = false;
  MaskProof::Pattern base = MaskProof::Pattern::unknown;
  std::string cur = mask;
  for (int step = 0; step < 64 && base == MaskProof::Pattern::unknown; ++step) {
    const graph::TensorType& t = g.type(cur);
    if (t.rank() < 2) return unknown(fmt::format("%{} has rank {}, not a [.., Tq, Tk] mask", cur, t.rank()));
    const Node* n = g.producer(cur);
    if (!n) {
      const graph::Placeholder* p = g.placeholder(cur);
      proof.source = cur;
      proof.from_buffer = p->kind == PlaceholderKind::buffer || p->kind == PlaceholderKind::constant;
      if (proof.from_buffer && p->value_class == "tril") {
        base = MaskProof::Pattern::lower;
        break;
      }
      return unknown(proof.from_buffer
                         ? fmt::format("{} %{} records no value class (its contents are not known to be "
                                       "torch.tril(ones))", graph::kind_name(p->kind), cur)
                         : fmt::format("%{} is a graph input (its contents are not known)", cur));
    }
    proof.chain.push_back(n);
    const std::string* in = n->args.empty() ? nullptr : n->args[0].ref();
    const std::string& op = n->op;
    if (op == "aten.tril.default" || op == "aten.triu.default") {
      const bool tril = op == "aten.tril.default";
      const int64_t diag = int_arg(*n, 1, "diagonal", 0);
      if (diag != (tril ? 0 : 1))
        return unknown(fmt::format("%{} is {}(diagonal={}); the causal triangle is tril(diagonal=0) or "
                                   "triu(diagonal=1)", n->name, tril ? "tril" : "triu", diag));
      const Node* src = in ? g.producer(*in) : nullptr;
      if (!is_ones(src))
        return unknown(fmt::format("%{} is {} of %{}, not of torch.ones", n->name, tril ? "tril" : "triu",
                                   in ? *in : std::string("?")));
      proof.chain.push_back(src);
      base = tril ? MaskProof::Pattern::lower : MaskProof::Pattern::strict_upper;
      break;
    }
    if (!in) return unknown(fmt::format("%{} ({}) has no tensor input the proof can follow", n->name, op));
    const graph::TensorType& t_in = g.type(*in);
    if (op == "aten.slice.Tensor") {
      const int64_t rank = t_in.rank();
      int64_t dim = int_arg(*n, 1, "dim", 0);
      if (dim < 0) dim += rank;
      const int64_t start = int_arg(*n, 2, "start", 0), step_ = int_arg(*n, 4, "step", 1);
      if (dim >= rank - 2 && (start != 0 || step_ != 1))
        return unknown(fmt::format("%{} slices dim {} from {} with step {}: only slices from 0 with step 1 "
                                   "keep the triangle top-left aligned", n->name, dim, start, step_));
    } else if (op == "aten.view.default" || op == "aten.reshape.default" || op == "aten._unsafe_view.default" ||
               op == "aten.unsqueeze.default" || op == "aten.expand.default" || op == "aten.alias.default" ||
               op == "aten.clone.default" || op == "aten.contiguous.default" || op == "aten.to.dtype" ||
               op == "aten._to_copy.default" || op == "aten.detach.default") {
      if (!last_two_kept(t_in, t))
        return unknown(fmt::format("%{} ({}) changes the last two dims of the mask", n->name, op));
    } else if (op == "aten.eq.Scalar" || op == "aten.ne.Scalar") {
      const std::optional<double> c = n->args.size() > 1 ? n->args[1].number() : std::nullopt;
      const bool flip = n->args.size() > 1 && n->args[1].get_if<bool>() ? !*n->args[1].get_if<bool>() : c == 0.0;
      const bool keep = n->args.size() > 1 && n->args[1].get_if<bool>() ? *n->args[1].get_if<bool>() : c == 1.0;
      if (!flip && !keep)
        return unknown(fmt::format("%{} compares with a value other than 0 or 1", n->name));
      if ((op == "aten.eq.Scalar") == flip) negated = !negated;
    } else if (op == "aten.logical_not.default" ||
               (op == "aten.bitwise_not.default" && t_in.dtype == graph::DType::b8)) {
      negated = !negated;
    } else {
      return unknown(fmt::format("%{} is made by {}, which the mask proof does not follow", cur, op));
    }
    cur = *in;
  }
  if (base == MaskProof::Pattern::unknown) return unknown("the mask chain is too long to follow");
  using P = MaskProof::Pattern;
  proof.pattern = !negated ? base : base == P::lower ? P::strict_upper : P::lower;
  return proof;
}

}  // namespace fact::discover::attention
