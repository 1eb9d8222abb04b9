#include "families/gemm/epilogue/epilogue.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "discover/cost_model.h"
#include "families/gemm/epilogue/op_table.h"
#include "families/gemm/epilogue/program.h"
#include "families/gemm/epilogue/idiom.h"
#include "discover/pattern.h"
#include "graph/text.h"

namespace fact::discover {
namespace {

using graph::Arg;
using graph::Node;
using nlohmann::ordered_json;

// An expression in both forms.
struct Expr {
  std::string text;
  ordered_json tree;
};

Expr scalar(double v) { return {graph::format_double(v), {{"scalar", v}}}; }

Expr call(const std::string& op, const std::vector<Expr>& args) {
  std::string text = fmt::format("{}(", op);
  ordered_json list = ordered_json::array();
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) text += ", ";
    text += args[i].text;
    list.push_back(args[i].tree);
  }
  return {text + ")", {{"op", op}, {"args", list}}};
}

// A number argument (int or float), or nullopt (also for an argument not given).
std::optional<double> number(const Arg* a) { return a ? a->number() : std::nullopt; }

struct NotFusable {
  std::string reason;
};

// The tail under construction.
class Builder {
 public:
  Builder(const graph::GraphIndex& g, const std::string& acc) : g_(g), acc_type_(g.type(acc)) {
    exprs_[acc] = {"acc", {{"acc", true}}};
  }

  bool in_tail(const std::string& v) const { return exprs_.count(v) > 0; }

  // Adds `n` to the tail or throws NotFusable naming why it cannot join.
  void add(const Node& n) {
    if (n.outputs.size() != 1 || !n.outputs[0].type) throw NotFusable{fmt::format("%{}: {} has several outputs", n.name, n.op)};
    const auto& out = *n.outputs[0].type;
    if (out.shape != acc_type_.shape || out.dtype != acc_type_.dtype) {
      throw NotFusable{fmt::format("%{}: {} changes the shape or dtype of the tail", n.name, n.op)};
    }
    pending_.clear();
    exprs_[n.outputs[0].name] = expression(n);
    std::vector<std::pair<std::string, std::string>> named;  // the node joined: name its inputs
    for (const auto& [v, kind] : pending_) named.emplace_back(v, slot_of(v));
    for (size_t i = 0; i < pending_.size(); ++i) {
      external_[pending_[i].first] = pending_[i].second;
      external_order_.push_back(named[i]);
    }
    pending_.clear();
    nodes_.push_back(&n);
  }

  Epilogue finish(const std::vector<const Node*>& tail) const {
    Epilogue e;
    std::set<std::string> inputs_used;
    for (const Node* n : tail) {
      e.nodes.push_back(n->name);
      for (const auto& a : n->args) graph::for_each_ref(a, [&](const std::string& v) { if (external_.count(v)) inputs_used.insert(v); });
    }
    const std::string& root = tail.back()->outputs[0].name;
    e.output = root;
    e.expr = exprs_.at(root).text;
    e.tree = exprs_.at(root).tree;
    for (const auto& [v, slot] : external_order_) {
      if (!inputs_used.count(v)) continue;
      e.inputs.emplace_back(slot, v);
      e.broadcast.push_back(external_.at(v));
    }
    // Unfused, every tail node reads its tensors and writes its output; fused, the tail's
    // external inputs are still read once and D is written once instead of acc.
    for (const Node* n : tail) {
      std::set<std::string> read;
      for (const auto& a : n->args) graph::for_each_ref(a, [&](const std::string& v) { read.insert(v); });
      for (const auto& v : read) e.saved_bytes += tensor_bytes(g_.type(v));
      e.saved_bytes += tensor_bytes(*n->outputs[0].type);
    }
    for (const auto& [slot, v] : e.inputs) e.saved_bytes -= tensor_bytes(g_.type(v));
    e.saved_bytes -= tensor_bytes(g_.type(root));  // written once either way
    e.saved_bytes += tensor_bytes(acc_type_);      // acc is no longer written
    return e;
  }

  const std::vector<const Node*>& nodes() const { return nodes_; }

 private:
  // One operand: a tail value, a scalar, or an external tensor (checked and named cN).
  Expr operand(const Node& n, const Arg& a) {
    if (auto v = number(&a)) return scalar(*v);
    const std::string* ref = a.ref();
    if (!ref) throw NotFusable{fmt::format("%{}: {} has a non-tensor, non-number operand", n.name, n.op)};
    if (auto it = exprs_.find(*ref); it != exprs_.end()) return it->second;
    const auto& t = g_.type(*ref);
    if (!graph::is_floating(t.dtype)) {
      throw NotFusable{fmt::format("%{}: operand %{} has dtype {}, not floating point", n.name, *ref, graph::torch_name(t.dtype))};
    }
    if (t.dtype != acc_type_.dtype) {
      throw NotFusable{fmt::format("%{}: operand %{} is {}, the GEMM writes {}", n.name, *ref,
                                   graph::torch_name(t.dtype), graph::torch_name(acc_type_.dtype))};
    }
    const std::string kind = broadcast_of(t.shape);
    if (kind.empty()) {
      throw NotFusable{fmt::format("%{}: operand %{} of shape [{}] does not broadcast along M or N of [{}]",
                                   n.name, *ref, fmt::join(t.shape, ", "), fmt::join(acc_type_.shape, ", "))};
    }
    // The kernel reads a vector as consecutive elements and a tensor as rows of N
    // consecutive elements with one leading stride (folded batches included).
    if (kind != "scalar" && !t.is_contiguous()) {
      throw NotFusable{fmt::format("%{}: operand %{} (strides [{}]) is not contiguous", n.name, *ref,
                                   fmt::join(t.strides, ", "))};
    }
    if (!external_.count(*ref) && std::none_of(pending_.begin(), pending_.end(),
                                                [&](const auto& p) { return p.first == *ref; })) {
      pending_.emplace_back(*ref, kind);
    }
    const std::string slot = slot_of(*ref);
    return {slot, {{"input", slot}}};
  }

  // cN: N counts the inputs named before, then this node's new ones in order.
  std::string slot_of(const std::string& v) const {
    for (const auto& [name, slot] : external_order_)
      if (name == v) return slot;
    for (size_t i = 0; i < pending_.size(); ++i)
      if (pending_[i].first == v) return realize::epilogue_input_name(external_order_.size() + i);
    return "c?";
  }

  // "n": [N] or [1, ..., N]; "m": [..., M, 1] (acc's leading dims, last 1); "mn": acc's
  // shape; "scalar": one element; "" otherwise.
  std::string broadcast_of(const std::vector<int64_t>& s) const {
    const auto& d = acc_type_.shape;
    int64_t numel = 1;
    for (auto x : s) numel *= x;
    if (numel == 1) return "scalar";
    if (s == d) return "mn";
    std::vector<int64_t> t = s;
    while (!t.empty() && t.front() == 1 && t.size() > 1) t.erase(t.begin());
    if (t.size() == 1 && !d.empty() && t[0] == d.back()) return "n";
    if (s.size() == d.size() && s.back() == 1 && std::equal(s.begin(), s.end() - 1, d.begin())) return "m";
    return "";
  }

  // The idiom rooted at `n` whose argument and inner nodes are all in the tail, or nullopt.
  std::optional<Expr> idiom(const Node& n) const {
    for (const Idiom& idiom : epilogue_idioms()) {
      for (const PatternExpr& form : idiom.forms) {
        for (const PatternMatch& m : match_all(g_, form, n)) {
          auto x = m.values.find("x");
          if (x == m.values.end() || !exprs_.count(x->second)) continue;
          const bool inner_in_tail = std::all_of(m.nodes.begin(), m.nodes.end() - 1, [&](const Node* inner) {
            return exprs_.count(inner->outputs[0].name) > 0;
          });
          if (inner_in_tail) return call(std::string(idiom.op), {exprs_.at(x->second)});
        }
      }
    }
    return std::nullopt;
  }

  Expr expression(const Node& n) {
    if (auto e = idiom(n)) return *e;
    const std::string& op = n.op;
    // The op's tensor arguments; a node with fewer than the op takes is malformed, and stops
    // the tail with that reason (not an exception out of discovery).
    auto arg = [&](size_t i) {
      if (i >= n.args.size())
        throw NotFusable{fmt::format("%{}: {} has {} argument(s), the op takes at least {}", n.name, n.op,
                                     n.args.size(), i + 1)};
      return operand(n, n.args[i]);
    };
    auto x = [&] { return arg(0); };
    auto y = [&] { return arg(1); };
    auto number_or = [&](size_t i, const char* key, double dflt) {
      const Arg* a = n.arg_or_kwarg(i, key);
      if (!a || a->is<graph::None>()) return dflt;
      auto v = number(a);
      if (!v) throw NotFusable{fmt::format("%{}: {} has a tensor {}", n.name, op, key)};
      return *v;
    };
    const EpilogueOp* e = nullptr;
    for (const auto& candidate : epilogue_ops())
      if (candidate.aten == op) e = &candidate;
    if (op == "aten.clamp.Tensor") throw NotFusable{fmt::format("%{}: clamp with tensor bounds", n.name)};
    if (!e) throw NotFusable{fmt::format("%{}: {} is not an elementwise op an epilogue computes", n.name, op)};
    const std::string name(e->name);
    switch (e->kind) {
      case EpilogueOpKind::unary:
        return call(name, {x()});
      case EpilogueOpKind::binary: {
        Expr rhs = y();
        const double alpha = number_or(2, "alpha", 1.0);
        if (alpha != 1.0) rhs = call("mul", {rhs, scalar(alpha)});
        return call(name, {x(), rhs});
      }
      case EpilogueOpKind::gelu: {
        const Arg* a = n.kwarg("approximate");
        const std::string* how = a ? a->get_if<std::string>() : nullptr;
        return call(how && *how == "tanh" ? "gelu_tanh" : "gelu", {x()});
      }
      case EpilogueOpKind::leaky_relu:
        return call(name, {x(), scalar(number_or(1, "negative_slope", 0.01))});
      case EpilogueOpKind::hardtanh:
        return call(name, {x(), scalar(number_or(1, "min_val", -1.0)), scalar(number_or(2, "max_val", 1.0))});
      case EpilogueOpKind::clamp: {
        std::vector<Expr> args{x()};
        const Arg* lo = n.arg_or_kwarg(1, "min");
        const Arg* hi = n.arg_or_kwarg(2, "max");
        // torch.clamp raises on this ("At least one of 'min' or 'max' must not be None"): a
        // malformed graph, whose tail stops here rather than fusing a clamp that clamps nothing.
        if ((!lo || lo->is<graph::None>()) && (!hi || hi->is<graph::None>()))
          throw NotFusable{fmt::format("%{}: {} has neither min nor max (torch.clamp raises on it)", n.name, op)};
        args.push_back(lo && !lo->is<graph::None>() ? scalar(number_or(1, "min", 0)) : Expr{"none", nullptr});
        args.push_back(hi && !hi->is<graph::None>() ? scalar(number_or(2, "max", 0)) : Expr{"none", nullptr});
        return call(name, args);
      }
      case EpilogueOpKind::pow: {
        auto v = number(n.arg_or_kwarg(1, "exponent"));
        if (!v) throw NotFusable{fmt::format("%{}: pow with a non-scalar exponent", n.name)};
        return call(name, {x(), scalar(*v)});
      }
    }
    throw NotFusable{fmt::format("%{}: {} is not an elementwise op an epilogue computes", n.name, op)};
  }

  const graph::GraphIndex& g_;
  const graph::TensorType& acc_type_;
  std::map<std::string, Expr> exprs_;                          // value -> expression
  std::map<std::string, std::string> external_;                // value -> broadcast kind
  std::vector<std::pair<std::string, std::string>> external_order_;  // value -> cN
  std::vector<std::pair<std::string, std::string>> pending_;  // value -> kind, node in progress
  std::vector<const Node*> nodes_;
};

}  // namespace

const std::vector<EpilogueOp>& epilogue_ops() {
  // Each ATen op of the table's rows (op_table.h), in its order.
  struct AtenOp {
    std::string_view aten;
    EpilogueOpKind kind;
    std::string_view meaning;
  };
  struct Row {
    std::string_view name;
    std::vector<AtenOp> aten;
  };
#define ATEN(op, kind, meaning) AtenOp{op, EpilogueOpKind::kind, meaning},
#define FACT_EPI_ATEN_ROW(op_name, aten, ...) Row{#op_name, {aten}},
  static const std::vector<EpilogueOp> ops = [] {
    std::vector<EpilogueOp> all;
    for (const Row& row : {FACT_EPILOGUE_OPS(FACT_EPI_ATEN_ROW, FACT_EPI_ATEN_ROW, FACT_EPI_ATEN_ROW, FACT_EPI_NONE)})
      for (const AtenOp& a : row.aten) all.push_back({a.aten, row.name, a.kind, a.meaning});
    return all;
  }();
#undef ATEN
#undef FACT_EPI_ATEN_ROW
  return ops;
}

EpilogueSearch find_epilogue(const graph::GraphIndex& g, const std::string& acc) {
  EpilogueSearch out;
  const auto& graph = g.graph();
  Builder b(g, acc);
  const Node* producer = g.producer(acc);
  const size_t start = producer ? g.position(*producer) + 1 : 0;
  // 1. Grow: every later op that reads the tail and can join, in graph order.
  for (size_t i = start; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    bool reads_tail = false;
    for (const auto& a : n.args) graph::for_each_ref(a, [&](const std::string& v) { reads_tail |= b.in_tail(v); });
    for (const auto& [k, a] : n.kwargs) graph::for_each_ref(a, [&](const std::string& v) { reads_tail |= b.in_tail(v); });
    if (!reads_tail) continue;
    try {
      b.add(n);
    } catch (const NotFusable& e) {
      if (out.stop.empty()) out.stop = e.reason;
    }
  }
  // 2. The largest closed tail: the latest root whose absorbed values (acc and every
  //    intermediate it is computed from) are read only inside the tail and are not graph
  //    outputs.
  const auto& grown = b.nodes();
  std::string first_failure;
  for (size_t r = grown.size(); r-- > 0;) {
    // The root and the tail nodes it is computed from.
    std::set<std::string> wanted{grown[r]->outputs[0].name};
    std::set<const Node*> in;
    for (size_t i = r + 1; i-- > 0;) {
      if (!wanted.count(grown[i]->outputs[0].name)) continue;
      in.insert(grown[i]);
      for (const auto& a : grown[i]->args) graph::for_each_ref(a, [&](const std::string& v) { wanted.insert(v); });
    }
    std::vector<const Node*> closed;
    for (size_t i = 0; i <= r; ++i)
      if (in.count(grown[i])) closed.push_back(grown[i]);
    std::set<std::string> values{acc};
    for (const Node* n : closed) values.insert(n->outputs[0].name);
    values.erase(grown[r]->outputs[0].name);  // the root is what the kernel writes
    const std::string failure = read_outside(g, values, in, "stay inside an epilogue", "outside the epilogue");
    if (failure.empty()) {
      out.epilogue = b.finish(closed);
      if (!first_failure.empty()) out.stop = first_failure;  // why a longer tail did not close
      return out;
    }
    if (first_failure.empty()) first_failure = failure;
  }
  if (!first_failure.empty()) out.stop = first_failure;
  return out;
}

}  // namespace fact::discover
