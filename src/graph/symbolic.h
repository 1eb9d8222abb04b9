// Symbolic sizes of the FACT graph format version 2 (docs/02-graph-format.md, "Symbols"):
// a dimension the user (torch.export.Dim) or Dynamo marked dynamic stays a symbol, and a
// size or stride is a monomial in the symbols ("B", "512*B", "B*T").
//
//   SymbolicGraph ── symbols : Symbol (name, range [min, max], seen sizes, buckets)
//                 ── json    : the v2 document; specialize() evaluates it at symbol values
//                              and reads the result as an ordinary (static) Graph.
//
// Rules never see a symbol: discovery plans a symbolic graph by planning specializations
// of it (discover/symbolic_plan.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.h"

namespace fact::graph {

/// Symbol name -> value.
using SymbolValues = std::map<std::string, int64_t, std::less<>>;

/// coeff * prod(symbol^power): the only size expressions the format has. Text form:
/// factors joined by '*', the integer coefficient first (left out when 1), then each symbol
/// as often as its power, in name order: "512*B", "B*B*T", "B", "64".
struct Monomial {
  int64_t coeff = 1;
  std::map<std::string, int, std::less<>> powers;  // symbol -> power >= 1
  bool operator==(const Monomial&) const = default;
  bool is_constant() const { return powers.empty(); }
};

/// Parses the text form. Throws fact::Error naming `where` and the text when it is not a
/// product of positive integers and identifiers (sums, quotients and negative factors are
/// not size expressions of the format).
Monomial parse_monomial(std::string_view text, std::string_view where);
/// The canonical text form (see Monomial).
std::string format_monomial(const Monomial& m);
/// The value at `values`. Throws fact::Error for a symbol without a value or an int64
/// overflow.
int64_t evaluate(const Monomial& m, const SymbolValues& values);

/// A symbolic dimension: sizes in [min, max] (max nullopt: unbounded), the sizes seen when
/// the graph was captured (the first is the hint every estimate uses), and the bucket upper
/// bounds the user named (empty: realization chooses powers of two, docs/04, "Buckets").
/// `bound` (nullopt: 4096 or max, whichever is smaller) caps the chosen buckets.
struct Symbol {
  std::string name;
  int64_t min = 1;
  std::optional<int64_t> max;
  std::vector<int64_t> seen;
  std::vector<int64_t> buckets;
  std::optional<int64_t> bound;
  int64_t hint() const { return seen.front(); }
  bool operator==(const Symbol&) const = default;
};

/// The largest bucket realization chooses for a symbol without `bound` (when its max is
/// larger or unbounded).
inline constexpr int64_t kDefaultBucketBound = 4096;

/// The upper end of the buckets chosen for `s`: its bound, else min(max, 4096); never below
/// its largest seen size.
int64_t bucket_bound(const Symbol& s);
/// The bucket upper bounds of `s`, increasing (docs/04-realization.md, "Buckets"): the
/// user's list when given, else the powers of two from the smallest seen size rounded up to
/// one, up to bucket_bound(s) (which ends the list when it is not a power of two). Bucket i
/// serves sizes (bounds[i-1], bounds[i]]; the first serves [min, bounds[0]].
std::vector<int64_t> bucket_bounds(const Symbol& s);

/// The symbols of a v2 document's "symbols" object (`path` names it in errors) and back.
/// Throws fact::Error: a name that is not an identifier, min < 1, max < min, no seen size,
/// a seen size or bucket outside [min, max], buckets not strictly increasing.
std::vector<Symbol> symbols_from_json(const nlohmann::ordered_json& j, const std::string& path);
nlohmann::ordered_json symbols_to_json(const std::vector<Symbol>& symbols);

/// A v2 graph document with its symbols, checked: every size, stride and {"sym": ...}
/// argument is an integer or a monomial in the declared symbols, and the graph specialized
/// at the hints is a valid graph.
struct SymbolicGraph {
  std::string name;
  std::vector<Symbol> symbols;
  nlohmann::ordered_json json;

  const Symbol* symbol(std::string_view name) const;
  /// Each symbol at its hint (first seen size).
  SymbolValues hints() const;
};

/// True when `j` is a graph document with a non-empty "symbols" object (version 2).
bool has_symbols(const nlohmann::ordered_json& j);
/// Reads a v2 graph document that has symbols. Throws fact::Error naming the JSON path of
/// the problem (see symbols_from_json, parse_monomial, graph_from_json).
SymbolicGraph symbolic_from_json(const nlohmann::ordered_json& j);
/// The static graph at `values` (every symbol needs one, within its range). Throws
/// fact::Error naming the symbol and its range, or the expression that cannot be evaluated.
Graph specialize(const SymbolicGraph& g, const SymbolValues& values);
/// Parses "B=8,T=128" (what `--at` takes). Throws fact::Error for another form.
SymbolValues parse_symbol_values(std::string_view text);

}  // namespace fact::graph
