// The pattern language of discovery: a rule written as data (docs/03-rules.md, "Patterns").
//
// A pattern is a tree over graph values. Its nodes are
//   - an op: one of some ATen ops, with operand patterns matched against the node's
//     positional arguments (all of them, no keyword arguments unless listed as allowed);
//     `commutative` lets operands 0 and 1 match in either order;
//   - a capture: any tensor value, bound to a name; a name used twice must bind the same
//     value (the DAG: x in x * sigmoid(x) is one value read twice);
//   - a number: a scalar argument (int or float) equal to a constant within a relative
//     tolerance, optionally bound to a name;
//   - none: an argument that is None (an optional operand left out);
//   - alternatives: the first of several patterns (e.g. x**3 as pow(x, 3) or x*x*x) that
//     matches, each tried with backtracking.
// Constraints beyond these are predicates on a matched op node (`where`).
//
// Example, Swish written out:  op({"aten.mul.Tensor"}, {capture("x"),
//                                  op({"aten.sigmoid.default"}, {capture("x")})}).commutative()
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace fact::discover {

struct PatternMatch;

/// One node of a pattern (see the header comment). Build with op(), capture(), number(),
/// number_capture(), none_arg() and any_of().
struct PatternExpr {
  enum class Kind { op, capture, number, none, any_of };
  Kind kind = Kind::capture;
  std::vector<std::string> ops;            // op: accepted ATen ops ("aten.mul.Tensor")
  std::vector<PatternExpr> operands;           // op: positional operands; any_of: the choices
  std::vector<std::string> allowed_kwargs;  // op: keyword arguments that may be present
  bool is_commutative = false;             // op: operands 0 and 1 may be swapped
  std::function<bool(const graph::Node&)> predicate;  // op: a further constraint, or empty
  std::string name;                        // capture / number: the binding (may be empty for a number)
  double value = 0, rel_tol = 0;           // number: the constant and its relative tolerance

  /// This op pattern with operands 0 and 1 matched in either order.
  PatternExpr commutative() const;
  /// This op pattern with a further constraint on the matched node.
  PatternExpr where(std::function<bool(const graph::Node&)> pred) const;
  /// This op pattern accepting keyword argument `key` (its value is not constrained).
  PatternExpr allowing(const std::string& key) const;
};

PatternExpr op(std::vector<std::string> ops, std::vector<PatternExpr> operands);
PatternExpr capture(std::string name);
/// A number argument equal to `value` within `rel_tol` (relative; 1e-6 by default, so that
/// constants written to 7 significant digits, e.g. 0.7978846 for sqrt(2/pi), match).
PatternExpr number(double value, double rel_tol = 1e-6);
/// Any number argument, bound to `name`.
PatternExpr number_capture(std::string name);
PatternExpr any_of(std::vector<PatternExpr> choices);
/// An argument that is None.
PatternExpr none_arg();

/// What a match binds: captured values and numbers, and the graph nodes the op patterns
/// matched (the match's interior and root), in graph order.
struct PatternMatch {
  std::map<std::string, std::string> values;  // capture name -> graph value
  std::map<std::string, double> numbers;      // number capture -> its value
  std::vector<const graph::Node*> nodes;      // graph order, root last
};

/// Matches `pattern` (whose root is an op) at `root`: every match in a deterministic order
/// (operands left to right, the given order before the swapped one, alternatives in order),
/// duplicates removed. Empty when none matches.
std::vector<PatternMatch> match_all(const graph::GraphIndex& g, const PatternExpr& pattern, const graph::Node& root);

/// The first of match_all, or nullopt.
std::optional<PatternMatch> match_first(const graph::GraphIndex& g, const PatternExpr& pattern, const graph::Node& root);

/// Single use: a match may replace its nodes only if every value they produce, except the
/// root's, is read by no node outside the match and is not a graph output. Returns why
/// not ("%sigmoid is also read by %sum, outside the match"), or "" when it may.
std::string single_use_violation(const graph::GraphIndex& g, const PatternMatch& m);

/// The check behind single_use_violation, for any set of values about to vanish (the
/// epilogue search uses it for a tail): the first of `values` (in order) that is a graph
/// output — "%v is a graph output, so it cannot <cannot>" — or is read by a node not in
/// `inside` — "%v is also read by %u, <outside>" —, or "".
std::string read_outside(const graph::GraphIndex& g, const std::set<std::string>& values,
                         const std::set<const graph::Node*>& inside, std::string_view cannot,
                         std::string_view outside);

}  // namespace fact::discover
