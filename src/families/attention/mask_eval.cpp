// Constant masks (mask_eval.h): an exact evaluator of the ops mask builders use, and the
// classification of a mask's value.
#include "families/attention/mask_eval.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "families/attention/match.h"

namespace fact::discover::attention {

using graph::Arg;
using graph::DType;
using graph::GraphIndex;
using graph::Node;

namespace {

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The element of `t` that position `idx` of a tensor of `shape` reads when t broadcasts to it.
double broadcast_at(const ConstTensor& t, const int64_t* idx, size_t o) {
  int64_t off = 0, stride = 1;
  const size_t r = t.shape.size();
  for (size_t k = 0; k < r; ++k) {
    const size_t d = r - 1 - k;
    const int64_t size = t.shape[d];
    off += (size == 1 ? 0 : idx[o - 1 - k]) * stride;
    stride *= size;
  }
  return t.data[off];
}
double broadcast_at(const ConstTensor& t, const std::vector<int64_t>& idx) { return broadcast_at(t, idx.data(), idx.size()); }

// Calls f(flat index, multi-index) for every element of `shape`, row-major.
void each(const std::vector<int64_t>& shape, const std::function<void(int64_t, const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> idx(shape.size(), 0);
  const int64_t n = count(shape);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(flat, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

double cast(double v, DType dtype) {
  if (dtype == DType::b8) return v != 0 ? 1 : 0;
  if (!graph::is_floating(dtype)) return std::trunc(v);
  if (dtype == DType::f32) return static_cast<float>(v);
  return v;
}

// An op computed element by element from broadcast arguments: which positional arguments
// it reads and how it combines them (before the cast to its output dtype).
struct ElementOp {
  std::vector<size_t> args;
  std::function<double(const double*)> f;
};

std::optional<ElementOp> element_op(const Node& n) {
  const std::string& op = n.op;
  const Arg* alpha_arg = n.kwarg("alpha");
  const double alpha = alpha_arg && alpha_arg->number() ? *alpha_arg->number() : 1.0;
  using P = const double*;
  if (op == "aten.add.Tensor" || op == "aten.add.Scalar") return ElementOp{{0, 1}, [=](P x) { return x[0] + alpha * x[1]; }};
  if (op == "aten.sub.Tensor" || op == "aten.sub.Scalar") return ElementOp{{0, 1}, [=](P x) { return x[0] - alpha * x[1]; }};
  if (op == "aten.mul.Tensor" || op == "aten.mul.Scalar") return ElementOp{{0, 1}, [](P x) { return x[0] * x[1]; }};
  static const std::map<std::string, std::function<bool(double, double)>> kCompare = {
      {"eq", std::equal_to<double>()}, {"ne", std::not_equal_to<double>()}, {"lt", std::less<double>()},
      {"le", std::less_equal<double>()}, {"gt", std::greater<double>()}, {"ge", std::greater_equal<double>()}};
  for (const auto& [name, cmp] : kCompare)
    if (op == "aten." + name + ".Tensor" || op == "aten." + name + ".Scalar")
      return ElementOp{{0, 1}, [cmp = cmp](P x) { return cmp(x[0], x[1]) ? 1.0 : 0.0; }};
  if (op == "aten.__and__.Tensor" || op == "aten.bitwise_and.Tensor" || op == "aten.logical_and.default")
    return ElementOp{{0, 1}, [](P x) { return x[0] != 0 && x[1] != 0 ? 1.0 : 0.0; }};
  if (op == "aten.__or__.Tensor" || op == "aten.bitwise_or.Tensor" || op == "aten.logical_or.default")
    return ElementOp{{0, 1}, [](P x) { return x[0] != 0 || x[1] != 0 ? 1.0 : 0.0; }};
  if (op == "aten.logical_not.default" ||
      (op == "aten.bitwise_not.default" && n.outputs[0].type->dtype == DType::b8))
    return ElementOp{{0}, [](P x) { return x[0] != 0 ? 0.0 : 1.0; }};
  if (op == "aten.where.self" || op == "aten.where.ScalarOther" || op == "aten.where.ScalarSelf" ||
      op == "aten.where.Scalar")
    return ElementOp{{0, 1, 2}, [](P x) { return x[0] != 0 ? x[1] : x[2]; }};
  if (op == "aten.masked_fill.Scalar" || op == "aten.masked_fill.Tensor")
    return ElementOp{{0, 1, 2}, [](P x) { return x[1] != 0 ? x[2] : x[0]; }};
  if (op == "aten.expand.default" || op == "aten.to.dtype" || op == "aten.to.dtype_layout" ||
      op == "aten._to_copy.default" || op == "aten.to.device")
    return ElementOp{{0}, [](P x) { return x[0]; }};
  return std::nullopt;
}

class Evaluator {
 public:
  Evaluator(const GraphIndex& g, int64_t max_elements) : g_(g), max_(max_elements) {}

  std::optional<ConstTensor> value(const std::string& v) {
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    const Node* n = g_.producer(v);
    if (!n || n->outputs.size() != 1 || !n->outputs[0].type || count(n->outputs[0].type->shape) > max_ ||
        ++steps_ > 512)
      return std::nullopt;
    std::optional<ConstTensor> t = compute(*n);
    if (!t || count(t->shape) != count(n->outputs[0].type->shape)) return std::nullopt;
    t->shape = n->outputs[0].type->shape;
    for (double& x : t->data) x = cast(x, n->outputs[0].type->dtype);
    memo_[v] = *t;
    return t;
  }

  // Values too large to hold are computed element by element when they are element ops over
  // held or such values: plan() gives the value an id (-1: it cannot be), at() one element.
  int plan(const std::string& v) {
    if (auto it = lazy_ids_.find(v); it != lazy_ids_.end()) return it->second;
    const Node* n = g_.producer(v);
    if (!n || n->outputs.size() != 1 || !n->outputs[0].type || n->outputs[0].type->rank() > int64_t(kMaxRank)) return -1;
    Lazy node{n->outputs[0].type->shape, n->outputs[0].type->dtype, nullptr, {}, {}, {}};
    if (count(node.shape) <= max_) {
      if (!value(v)) return -1;
      node.data = &memo_.at(v);
    } else {
      std::optional<ElementOp> e = element_op(*n);
      if (!e) return -1;
      for (size_t i : e->args) {
        if (i >= n->args.size()) return -1;
        const Arg& a = n->args[i];
        int id = -1;
        double number = 0;
        if (const std::string* r = a.ref()) {
          if ((id = plan(*r)) < 0) return -1;
        } else if (const bool* b = a.get_if<bool>()) {
          number = *b ? 1 : 0;
        } else if (std::optional<double> x = a.number()) {
          number = *x;
        } else {
          return -1;
        }
        node.inputs.push_back(id);
        node.numbers.push_back(number);
      }
      node.f = std::move(e->f);
    }
    lazy_.push_back(std::move(node));
    return lazy_ids_[v] = static_cast<int>(lazy_.size()) - 1;
  }

  double at(int id, const int64_t* idx, size_t rank) const {
    const Lazy& n = lazy_[id];
    if (n.data) return broadcast_at(*n.data, idx, rank);
    double x[3];
    int64_t in[kMaxRank];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] < 0) {
        x[k] = n.numbers[k];
        continue;
      }
      const std::vector<int64_t>& s = lazy_[n.inputs[k]].shape;
      for (size_t d = 0; d < s.size(); ++d) in[d] = s[d] == 1 ? 0 : idx[rank - s.size() + d];
      x[k] = at(n.inputs[k], in, s.size());
    }
    return cast(n.f(x), n.dtype);
  }

  const std::vector<int64_t>& shape_of(int id) const { return lazy_[id].shape; }

 private:
  std::optional<ConstTensor> operand(const Arg& a) {
    if (const std::string* r = a.ref()) return value(*r);
    if (const bool* b = a.get_if<bool>()) return ConstTensor{{}, {*b ? 1.0 : 0.0}};
    if (std::optional<double> x = a.number()) return ConstTensor{{}, {*x}};
    return std::nullopt;
  }

  std::optional<ConstTensor> elementwise(const Node& n, std::vector<size_t> args,
                                         const std::function<double(const double*)>& f) {
    std::vector<ConstTensor> in;
    for (size_t i : args) {
      if (i >= n.args.size()) return std::nullopt;
      std::optional<ConstTensor> t = operand(n.args[i]);
      if (!t) return std::nullopt;
      in.push_back(std::move(*t));
    }
    ConstTensor out{n.outputs[0].type->shape, {}};
    out.data.resize(count(out.shape));
    std::vector<double> x(in.size());
    each(out.shape, [&](int64_t flat, const std::vector<int64_t>& idx) {
      for (size_t k = 0; k < in.size(); ++k) x[k] = broadcast_at(in[k], idx);
      out.data[flat] = f(x.data());
    });
    return out;
  }

  std::optional<ConstTensor> filled(const Node& n, double v) {
    return ConstTensor{n.outputs[0].type->shape, std::vector<double>(count(n.outputs[0].type->shape), v)};
  }

  std::optional<ConstTensor> compute(const Node& n);
  std::optional<ConstTensor> along(const Node& n);

  static constexpr size_t kMaxRank = 8;
  struct Lazy {
    std::vector<int64_t> shape;
    DType dtype;
    const ConstTensor* data;  // a value held in memo_, or
    std::vector<int> inputs;  // the element op's arguments: value ids, -1 for a number
    std::vector<double> numbers;
    std::function<double(const double*)> f;
  };

  const GraphIndex& g_;
  int64_t max_;
  std::vector<Lazy> lazy_;
  std::map<std::string, int> lazy_ids_;
  int steps_ = 0;
  std::map<std::string, ConstTensor> memo_;
};

std::optional<double> num(const Node& n, size_t i, double absent) {
  const Arg* a = i < n.args.size() ? &n.args[i] : nullptr;
  if (!a || a->is<graph::None>()) return absent;
  return a->number();
}

// slice, cumsum, diff and index: ops that move along a dim.
std::optional<ConstTensor> Evaluator::along(const Node& n) {
  const std::string& op = n.op;
  if (n.args.empty() || !n.args[0].ref()) return std::nullopt;
  std::optional<ConstTensor> x = value(*n.args[0].ref());
  if (!x) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  const std::vector<int64_t>& oshape = n.outputs[0].type->shape;
  ConstTensor out{oshape, std::vector<double>(count(oshape))};
  auto flat_of = [&](const std::vector<int64_t>& idx) {
    int64_t f = 0;
    for (int64_t d = 0; d < rank; ++d) f = f * x->shape[d] + idx[d];
    return x->data[f];
  };
  if (op == "aten.slice.Tensor" || op == "aten.cumsum.default") {
    std::optional<double> dim_arg = num(n, 1, 0);
    if (!dim_arg) return std::nullopt;
    const int64_t dim = normalized_dim(static_cast<int64_t>(*dim_arg), rank);
    if (dim < 0 || dim >= rank || static_cast<int64_t>(oshape.size()) != rank) return std::nullopt;
    if (op == "aten.cumsum.default") {
      each(oshape, [&](int64_t flat, const std::vector<int64_t>& idx) {
        std::vector<int64_t> j = idx;
        double s = 0;
        for (j[dim] = 0; j[dim] <= idx[dim]; ++j[dim]) s += flat_of(j);
        out.data[flat] = s;
      });
      return out;
    }
    std::optional<double> start = num(n, 2, 0), step = num(n, 4, 1);
    if (!start || !step || *step < 1) return std::nullopt;
    int64_t s0 = static_cast<int64_t>(*start);
    if (s0 < 0) s0 = std::max<int64_t>(0, s0 + x->shape[dim]);
    each(oshape, [&](int64_t flat, const std::vector<int64_t>& idx) {
      std::vector<int64_t> j = idx;
      j[dim] = s0 + idx[dim] * static_cast<int64_t>(*step);
      out.data[flat] = j[dim] < x->shape[dim] ? flat_of(j) : 0;
    });
    return out;
  }
  if (op == "aten.diff.default") {  // diff(x, n=1, dim=-1, prepend, append) along the last dim
    std::optional<double> order = num(n, 1, 1), dim_arg = num(n, 2, -1);
    if (!order || *order != 1 || !dim_arg || normalized_dim(static_cast<int64_t>(*dim_arg), rank) != rank - 1 ||
        (n.args.size() > 4 && !n.args[4].is<graph::None>()))
      return std::nullopt;
    std::optional<ConstTensor> pre;
    if (n.args.size() > 3 && !n.args[3].is<graph::None>()) {
      pre = operand(n.args[3]);
      if (!pre || pre->shape.size() != x->shape.size() || pre->shape.back() != 1) return std::nullopt;
    }
    each(oshape, [&](int64_t flat, const std::vector<int64_t>& idx) {
      std::vector<int64_t> j = idx;
      const int64_t c = idx.back() + (pre ? 0 : 1);  // the later element's position in x
      j.back() = c;
      const double later = flat_of(j);
      double earlier;
      if (c == 0) {
        std::vector<int64_t> p = idx;
        p.back() = 0;
        earlier = broadcast_at(*pre, p);
      } else {
        j.back() = c - 1;
        earlier = flat_of(j);
      }
      out.data[flat] = later - earlier;
    });
    return out;
  }
  if (op == "aten.index.Tensor") {  // x[i0, i1, ...]: tensor indices of the leading dims
    const auto* list = n.args.size() == 2 ? n.args[1].get_if<Arg::List>() : nullptr;
    if (!list || list->empty() || static_cast<int64_t>(list->size()) > rank) return std::nullopt;
    std::vector<ConstTensor> ix;
    for (const Arg& a : *list) {
      if (!a.ref()) return std::nullopt;
      std::optional<ConstTensor> t = value(*a.ref());
      if (!t) return std::nullopt;
      ix.push_back(std::move(*t));
    }
    const size_t k = ix.size(), rest = static_cast<size_t>(rank) - k;
    bool ok = true;
    each(oshape, [&](int64_t flat, const std::vector<int64_t>& idx) {
      const std::vector<int64_t> lead(idx.begin(), idx.end() - static_cast<int64_t>(rest));
      std::vector<int64_t> j(rank);
      for (size_t d = 0; d < k; ++d) {
        int64_t v = static_cast<int64_t>(broadcast_at(ix[d], lead));
        if (v < 0) v += x->shape[d];
        if (v < 0 || v >= x->shape[d]) ok = false;
        j[d] = ok ? v : 0;
      }
      for (size_t d = 0; d < rest; ++d) j[k + d] = idx[idx.size() - rest + d];
      out.data[flat] = ok ? flat_of(j) : 0;
    });
    if (!ok) return std::nullopt;
    return out;
  }
  return std::nullopt;
}

std::optional<ConstTensor> Evaluator::compute(const Node& n) {
  const std::string& op = n.op;
  if (op == "aten.arange.default" || op == "aten.arange.start" || op == "aten.arange.start_step") {
    const bool start_given = op != "aten.arange.default";
    std::optional<double> start = start_given ? num(n, 0, 0) : 0.0, step = num(n, start_given ? 2 : 1, 1);
    if (!start || !step) return std::nullopt;
    ConstTensor t{n.outputs[0].type->shape, {}};
    for (int64_t i = 0; i < count(t.shape); ++i) t.data.push_back(*start + double(i) * *step);
    return t;
  }
  if (op == "aten.full.default" || op == "aten.new_full.default" || op == "aten.full_like.default") {
    std::optional<double> v = num(n, op == "aten.full.default" ? 1 : op == "aten.new_full.default" ? 2 : 1, 0);
    if (!v) return std::nullopt;
    return filled(n, *v);
  }
  if (op == "aten.ones.default" || op == "aten.new_ones.default" || op == "aten.ones_like.default") return filled(n, 1);
  if (op == "aten.zeros.default" || op == "aten.new_zeros.default" || op == "aten.zeros_like.default") return filled(n, 0);
  if (op == "aten.scalar_tensor.default") {
    std::optional<double> v = num(n, 0, 0);
    return v ? filled(n, *v) : std::nullopt;
  }
  if (std::optional<ElementOp> e = element_op(n)) return elementwise(n, e->args, e->f);
  if (op == "aten.tril.default" || op == "aten.triu.default") {
    std::optional<double> diag = num(n, 1, 0);
    const int64_t r = n.outputs[0].type->rank();
    if (!diag || r < 2 || n.args.empty() || !n.args[0].ref()) return std::nullopt;
    std::optional<ConstTensor> x = value(*n.args[0].ref());
    if (!x) return std::nullopt;
    const bool tril = op == "aten.tril.default";
    each(x->shape, [&](int64_t flat, const std::vector<int64_t>& idx) {
      const int64_t d = idx[r - 1] - idx[r - 2];
      if (tril ? d > *diag : d < *diag) x->data[flat] = 0;
    });
    return x;
  }
  static const std::set<std::string> kReshapes = {
      "aten.view.default", "aten.reshape.default", "aten._unsafe_view.default", "aten.unsqueeze.default",
      "aten.squeeze.dim", "aten.squeeze.default", "aten.alias.default", "aten.clone.default",
      "aten.contiguous.default", "aten.detach.default", "aten.lift_fresh_copy.default", "aten.flatten.using_ints"};
  if (kReshapes.contains(op)) {  // the same elements in row-major order
    if (n.args.empty() || !n.args[0].ref()) return std::nullopt;
    return value(*n.args[0].ref());
  }
  return along(n);
}

}  // namespace

std::optional<ConstTensor> evaluate_mask(const GraphIndex& g, const std::string& value, int64_t max_elements) {
  Evaluator e(g, max_elements);
  return e.value(value);
}

namespace {

MaskClass classify(const std::vector<int64_t>& shape, int64_t total, const std::function<double(int64_t)>& element,
                   bool additive) {
  MaskClass c;
  const size_t r = shape.size();
  if (r < 2) {
    c.why = "the mask has fewer than two dims";
    return c;
  }
  const int64_t rows = shape[r - 2], cols = shape[r - 1];
  bool all = true, none = true, causal = true;
  for (int64_t flat = 0; flat < total; ++flat) {
    const double v = element(flat);
    const int64_t i = (flat / cols) % rows, j = flat % cols;
    bool kept;
    if (!additive) kept = v != 0;
    else if (v == 0) kept = true;
    else if (v <= -1e9) kept = false;
    else {
      c.why = fmt::format("element ({}, {}) is {}: an additive mask that is neither 0 nor at most -1e9", i, j, v);
      return c;
    }
    all = all && kept;
    none = none && !kept;
    if (kept != (j <= i)) causal = false;
    if (!all && !none && !causal) break;  // only a window is left to try
  }
  if (all) c.kind = MaskClass::Kind::all_kept;
  else if (none) c.kind = MaskClass::Kind::none_kept;
  else if (causal) c.kind = MaskClass::Kind::causal;
  if (c.kind != MaskClass::Kind::other) return c;
  // Causal with a window w: kept iff i - w < j <= i, the same w for every row; the last row of
  // the first slice keeps exactly w keys, which gives the one w to check.
  bool valid = true;  // an additive element that is neither 0 nor a removal fits no window either
  auto kept_at = [&](int64_t flat) {
    const double v = element(flat);
    if (additive && v != 0 && !(v <= -1e9)) valid = false;
    return additive ? v == 0 : v != 0;
  };
  int64_t w = 0;
  for (int64_t j = 0; j < cols; ++j) w += kept_at((rows - 1) * cols + j) ? 1 : 0;
  bool fits = w > 0;
  for (int64_t flat = 0; fits && flat < total; ++flat) {
    const int64_t i = (flat / cols) % rows, j = flat % cols;
    fits = kept_at(flat) == (j <= i && j > i - w) && valid;
  }
  if (fits) {
    c.kind = MaskClass::Kind::causal;
    c.window = w;
    return c;
  }
  c.why = "it is not all kept, causal or causal with a window";
  return c;
}

}  // namespace

MaskClass classify_mask(const ConstTensor& m, bool additive) {
  return classify(m.shape, static_cast<int64_t>(m.data.size()), [&](int64_t f) { return m.data[f]; }, additive);
}

std::optional<MaskClass> classify_constant_mask(const GraphIndex& g, const std::string& value, bool additive,
                                                bool negated, int64_t max_elements) {
  Evaluator e(g, int64_t(1) << 20);
  const int id = e.plan(value);
  if (id < 0) return std::nullopt;
  const std::vector<int64_t> shape = e.shape_of(id);
  const int64_t total = count(shape);
  if (total > max_elements) return std::nullopt;
  std::vector<int64_t> idx(shape.size());
  auto element = [&](int64_t flat) {
    for (size_t d = shape.size(); d-- > 0;) {
      idx[d] = flat % shape[d];
      flat /= shape[d];
    }
    const double v = e.at(id, idx.data(), idx.size());
    return negated ? (v != 0 ? 0.0 : 1.0) : v;
  };
  return classify(shape, total, element, additive);
}

std::vector<std::string> exclusive_cone(const GraphIndex& g, const std::string& value,
                                        const std::vector<std::string>& inside) {
  // The nodes `value` is computed from, latest first; each joins once all its readers have.
  std::set<const Node*> behind;
  std::vector<std::string> todo{value};
  while (!todo.empty()) {
    const Node* n = g.producer(todo.back());
    todo.pop_back();
    if (!n || !behind.insert(n).second) continue;
    auto visit = [&](const std::string& in) { todo.push_back(in); };
    for (const auto& a : n->args) graph::for_each_ref(a, visit);
    for (const auto& [k, a] : n->kwargs) graph::for_each_ref(a, visit);
  }
  std::vector<const Node*> order(behind.begin(), behind.end());
  std::sort(order.begin(), order.end(), [&](const Node* a, const Node* b) { return g.position(*a) > g.position(*b); });
  std::set<std::string> members(inside.begin(), inside.end());
  std::vector<std::string> cone;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node* n : order) {
      if (members.contains(n->name)) continue;
      bool exclusive = !n->outputs.empty();
      for (const auto& o : n->outputs) {
        if (is_graph_output(g, o.name)) exclusive = false;
        for (const Node* u : g.users(o.name)) exclusive = exclusive && members.contains(u->name);
      }
      if (!exclusive) continue;
      members.insert(n->name);
      cone.push_back(n->name);
      changed = true;
    }
  }
  return cone;
}

}  // namespace fact::discover::attention
