// The FACT graph IR: what torch.export produced, as plain data. See docs/02-graph-format.md.
//
//   Graph ── inputs, params : Placeholder (name, kind, state-dict target, TensorType)
//         ── nodes          : Node (ATen op, Arg args/kwargs, Value outputs), topological
//         ── outputs        : value names
//
// GraphIndex answers "who produces this value / what is its type" in O(log n).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "graph/types.h"

namespace fact::graph {

/// A reference to a tensor value by name (`{"ref": "x"}`, `%x`).
struct Ref {
  std::string name;
  bool operator==(const Ref&) const = default;
};
/// torch enum constants carried as arguments.
struct ScalarType {  // torch.dtype, e.g. dtype(f32)
  DType dtype;
  bool operator==(const ScalarType&) const = default;
};
struct Device {  // torch.device, e.g. device("cuda:0")
  std::string name;
  bool operator==(const Device&) const = default;
};
struct TorchLayout {  // torch.layout, e.g. layout("strided")
  std::string name;
  bool operator==(const TorchLayout&) const = default;
};
struct MemoryFormat {  // torch.memory_format, e.g. memory_format("contiguous_format")
  std::string name;
  bool operator==(const MemoryFormat&) const = default;
};
/// Python None.
struct None {
  bool operator==(const None&) const = default;
};

/// One argument value of a node: a tensor reference or a constant (recursive for lists).
struct Arg {
  using List = std::vector<Arg>;
  using Variant = std::variant<None, Ref, int64_t, double, bool, std::string, List, ScalarType,
                               Device, TorchLayout, MemoryFormat>;
  Variant value;

  Arg() = default;
  template <typename T>
    requires(!std::is_same_v<std::remove_cvref_t<T>, Arg> && std::is_constructible_v<Variant, T &&>)
  Arg(T&& v) : value(std::forward<T>(v)) {}  // NOLINT: implicit by design
  Arg(const char* s) : value(std::string(s)) {}  // NOLINT: never bool

  template <typename T>
  bool is() const { return std::holds_alternative<T>(value); }
  template <typename T>
  const T* get_if() const { return std::get_if<T>(&value); }
  /// The referenced value's name, or nullptr when this is not a Ref.
  const std::string* ref() const {
    auto* r = std::get_if<Ref>(&value);
    return r ? &r->name : nullptr;
  }
  /// An int or float constant as a double; nullopt for anything else (a bool included).
  std::optional<double> number() const {
    if (auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
    if (auto* d = std::get_if<double>(&value)) return *d;
    return std::nullopt;
  }
  bool operator==(const Arg&) const = default;
};

/// A value a node produces. type is nullopt for a None element of a tuple output.
struct Value {
  std::string name;
  std::optional<TensorType> type;
  bool operator==(const Value&) const = default;
};

/// One call_function node: op is the OpOverload name, "aten.<op>.<overload>".
struct Node {
  std::string name;
  std::string op;
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;  // in the order the graph gives them
  std::vector<Value> outputs;

  /// The kwarg called `key`, or nullptr.
  const Arg* kwarg(std::string_view key) const;
  /// Positional argument `i` when given, else the kwarg `key`; nullptr when neither is
  /// (ATen ops take most arguments either way: softmax(x, dim) or softmax(x, dim=...)).
  const Arg* arg_or_kwarg(size_t i, std::string_view key) const;
  bool operator==(const Node&) const = default;
};

enum class PlaceholderKind : uint8_t { user_input, parameter, buffer, constant };
/// "user_input", "parameter", "buffer", "constant".
std::string_view kind_name(PlaceholderKind kind);
/// Inverse of kind_name; nullopt for an unknown name.
std::optional<PlaceholderKind> kind_from_name(std::string_view name);

/// Value classes a buffer or constant may record (docs/02-graph-format.md, "Value
/// classes"): what export proved about the tensor's contents.
///   "tril": 0/1 (or false/true) elements, every leading dim of size 1, and the last two
///           dims [R, C] equal to torch.tril(torch.ones(R, C)): element (i, j) is 1 iff j <= i.
inline constexpr std::string_view kValueClasses[] = {"tril"};
/// True when `name` is one of kValueClasses.
bool is_value_class(std::string_view name);

/// A graph input: a user input, or a parameter/buffer/constant with its state-dict name.
struct Placeholder {
  std::string name;
  PlaceholderKind kind = PlaceholderKind::user_input;
  std::string target;  // state-dict name ("fc.weight"); empty for a user input
  TensorType type;
  /// A value class (kValueClasses) of a buffer or constant; empty when none is recorded.
  std::string value_class;
  bool operator==(const Placeholder&) const = default;
};

struct Graph {
  std::string name;
  std::vector<Placeholder> inputs;  // user inputs, call order
  std::vector<Placeholder> params;  // parameters, buffers, constants, lift order
  std::vector<Node> nodes;          // topological order
  std::vector<std::string> outputs;  // value names
  bool operator==(const Graph&) const = default;
};

/// Checks that a graph is well formed; throws fact::Error naming the first problem:
/// duplicate value or node names, a reference to a value not defined before its use,
/// a reference to a None output, a shape/strides rank mismatch, a placeholder of the
/// wrong kind in `inputs`/`params`, a value class on a user input or parameter or one
/// not in kValueClasses, or node outputs not named `<node>` (one output)
/// or `<node>.<i>` (tuple outputs).
void validate(const Graph& graph);

/// Name lookups over one graph. Validates the graph on construction (see validate()).
/// Holds a reference: the graph must outlive the index and stay unchanged.
class GraphIndex {
 public:
  explicit GraphIndex(const Graph& graph);

  const Graph& graph() const { return graph_; }
  /// True when `value` names a placeholder or a node output.
  bool contains(std::string_view value) const;
  /// The node producing `value`; nullptr for a placeholder. Throws if unknown.
  const Node* producer(std::string_view value) const;
  /// The placeholder named `value`, or nullptr.
  const Placeholder* placeholder(std::string_view value) const;
  /// The type of `value`. Throws if unknown or a None output.
  const TensorType& type(std::string_view value) const;
  /// Position of `node` in graph.nodes (node must belong to this graph).
  size_t position(const Node& node) const;
  /// Nodes whose args or kwargs reference `value`, in graph order.
  std::vector<const Node*> users(std::string_view value) const;

 private:
  struct Entry {
    const Node* producer = nullptr;
    const Placeholder* placeholder = nullptr;
    const std::optional<TensorType>* type = nullptr;
  };
  const Entry& entry(std::string_view value) const;

  const Graph& graph_;
  std::map<std::string, Entry, std::less<>> values_;
  std::map<std::string, std::vector<const Node*>, std::less<>> users_;
};

/// Calls f(name) for every tensor reference inside `arg` (recursing into lists).
template <typename F>
void for_each_ref(const Arg& arg, F&& f) {
  if (auto* r = arg.ref()) f(*r);
  if (auto* l = arg.get_if<Arg::List>())
    for (const Arg& a : *l) for_each_ref(a, f);
}

}  // namespace fact::graph
