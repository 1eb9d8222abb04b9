#include "graph/graph.h"

#include <set>

#include "base/checked_int.h"
#include "base/error.h"
#include "graph/text.h"

namespace fact::graph {

const Arg* Node::arg_or_kwarg(size_t i, std::string_view key) const {
  if (i < args.size()) return &args[i];
  return kwarg(key);
}

const Arg* Node::kwarg(std::string_view key) const {
  for (const auto& [k, v] : kwargs)
    if (k == key) return &v;
  return nullptr;
}

std::string_view kind_name(PlaceholderKind kind) {
  switch (kind) {
    case PlaceholderKind::user_input: return "user_input";
    case PlaceholderKind::parameter: return "parameter";
    case PlaceholderKind::buffer: return "buffer";
    case PlaceholderKind::constant: return "constant";
  }
  return "?";
}

std::optional<PlaceholderKind> kind_from_name(std::string_view name) {
  for (auto k : {PlaceholderKind::user_input, PlaceholderKind::parameter,
                 PlaceholderKind::buffer, PlaceholderKind::constant})
    if (kind_name(k) == name) return k;
  return std::nullopt;
}

bool is_value_class(std::string_view name) {
  for (std::string_view c : kValueClasses)
    if (c == name) return true;
  return false;
}

namespace {

void check_value_class(const Placeholder& p) {
  if (p.value_class.empty()) return;
  if (p.kind != PlaceholderKind::buffer && p.kind != PlaceholderKind::constant)
    throw Error(std::string(kind_name(p.kind)) + " '" + p.name + "' has value class '" + p.value_class +
                "': only buffers and constants record one");
  if (!is_value_class(p.value_class))
    throw Error("placeholder '" + p.name + "': unknown value class '" + p.value_class + "' (known: tril)");
}

void check_type(const TensorType& t, const std::string& value) {
  if (t.shape.size() != t.strides.size())
    throw Error("value '" + value + "': shape has " + std::to_string(t.shape.size()) +
                " dimensions but strides has " + std::to_string(t.strides.size()));
  for (int64_t d : t.shape)
    if (d < 0) throw Error("value '" + value + "': negative dimension " + std::to_string(d));
  // The bytes a tensor spans: (its largest element offset + 1) x element size. Strides are
  // never negative (torch has none), and no tensor on a GPU spans 2^48 bytes (256 TiB): the
  // bound keeps every offset FACT computes (in int64, and in the kernels' index math) exact.
  int64_t last = 0;
  bool empty = false;
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (t.strides[i] < 0)
      throw Error("value '" + value + "': negative stride " + std::to_string(t.strides[i]));
    if (t.shape[i] == 0) empty = true;
    if (t.shape[i] > 1 && t.strides[i] > (kMaxSpanBytes - last) / (t.shape[i] - 1))
      throw Error("value '" + value + "': dimension " + std::to_string(i) + " (size " + std::to_string(t.shape[i]) +
                  ", stride " + std::to_string(t.strides[i]) + ") spans more than 2^48 elements");
    if (t.shape[i] > 1) last += (t.shape[i] - 1) * t.strides[i];
  }
  if (!empty) check_span_bytes(last + 1, int64_t(element_size(t.dtype)), "value '" + value + "'");
}

// Expected output name: `<node>` for a single tensor output, `<node>.<i>` for tuples.
bool output_name_ok(const Node& n, size_t i, const std::string& name) {
  if (n.outputs.size() == 1 && name == n.name) return true;
  return name == n.name + "." + std::to_string(i);
}

}  // namespace

void validate(const Graph& g) { GraphIndex index(g); }

GraphIndex::GraphIndex(const Graph& g) : graph_(g) {
  auto define = [&](const std::string& name, Entry e) {
    if (name.empty()) throw Error("graph '" + g.name + "': a value has an empty name");
    if (!is_value_name(name))
      throw Error("graph '" + g.name + "': value '" + name + "' is not a value name (letters, digits, '_' and '.', as in linear_1)");
    if (!values_.emplace(name, e).second)
      throw Error("graph '" + g.name + "': value '" + name + "' is defined twice");
  };
  for (const auto& p : g.inputs) {
    if (p.kind != PlaceholderKind::user_input)
      throw Error("input '" + p.name + "' has kind " + std::string(kind_name(p.kind)) +
                  ", expected user_input");
    check_type(p.type, p.name);
    check_value_class(p);
    define(p.name, {nullptr, &p, nullptr});
  }
  for (const auto& p : g.params) {
    if (p.kind == PlaceholderKind::user_input)
      throw Error("parameter '" + p.name + "' has kind user_input");
    check_type(p.type, p.name);
    check_value_class(p);
    define(p.name, {nullptr, &p, nullptr});
  }
  std::set<std::string, std::less<>> node_names;
  for (const auto& n : g.nodes) {
    if (!node_names.insert(n.name).second)
      throw Error("node '" + n.name + "' is defined twice");
    if (!is_value_name(n.name))
      throw Error("graph '" + g.name + "': node '" + n.name + "' is not a value name (letters, digits, '_' and '.', as in linear_1)");
    if (n.op.empty()) throw Error("node '" + n.name + "' has an empty op (expected \"aten.<op>.<overload>\")");
    if (!is_op_name(n.op))
      throw Error("node '" + n.name + "' has op '" + n.op + "', which is not an op name (a letter or '_', then letters, digits, '_' and '.', as in aten.mm.default)");
    for (const auto& [k, a] : n.kwargs)
      if (!is_op_name(k))  // the text form reads a keyword as the same kind of word as an op
        throw Error("node '" + n.name + "' has keyword argument '" + k + "', which is not a name (a letter or '_', then letters, digits, '_' and '.', as in dtype)");
    auto use = [&](const std::string& ref) {
      auto it = values_.find(ref);
      if (it == values_.end())
        throw Error("node '" + n.name + "' uses '" + ref + "', which is not defined before it");
      if (it->second.type && !*it->second.type)
        throw Error("node '" + n.name + "' uses '" + ref + "', which is a None output");
      auto& u = users_[ref];
      if (u.empty() || u.back() != &n) u.push_back(&n);
    };
    for (const auto& a : n.args) for_each_ref(a, use);
    for (const auto& [k, a] : n.kwargs) for_each_ref(a, use);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value& v = n.outputs[i];
      if (!output_name_ok(n, i, v.name))
        throw Error("node '" + n.name + "': output " + std::to_string(i) + " is named '" +
                    v.name + "', expected '" + n.name +
                    (n.outputs.size() == 1 ? "'" : "." + std::to_string(i) + "'"));
      if (v.type) check_type(*v.type, v.name);
      define(v.name, {&n, nullptr, &v.type});
    }
  }
  for (const auto& o : g.outputs) {
    auto it = values_.find(o);
    if (it == values_.end()) throw Error("graph output '" + o + "' is not defined");
  }
}

const GraphIndex::Entry& GraphIndex::entry(std::string_view value) const {
  auto it = values_.find(value);
  if (it == values_.end())
    throw Error("graph '" + graph_.name + "' has no value '" + std::string(value) + "'");
  return it->second;
}

bool GraphIndex::contains(std::string_view value) const { return values_.contains(value); }

const Node* GraphIndex::producer(std::string_view value) const { return entry(value).producer; }

const Placeholder* GraphIndex::placeholder(std::string_view value) const {
  auto it = values_.find(value);
  return it == values_.end() ? nullptr : it->second.placeholder;
}

const TensorType& GraphIndex::type(std::string_view value) const {
  const Entry& e = entry(value);
  if (e.placeholder) return e.placeholder->type;
  if (!*e.type) throw Error("value '" + std::string(value) + "' is None and has no type");
  return **e.type;
}

size_t GraphIndex::position(const Node& node) const {
  return static_cast<size_t>(&node - graph_.nodes.data());
}

std::vector<const Node*> GraphIndex::users(std::string_view value) const {
  auto it = users_.find(value);
  return it == users_.end() ? std::vector<const Node*>{} : it->second;
}

}  // namespace fact::graph
