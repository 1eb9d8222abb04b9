// Realization of a symbolic pattern per bucket of its symbol (docs/04-realization.md,
// "Buckets"): each bucket is tuned as the static problem at its upper size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/symbolic.h"

namespace fact::realize {

/// Sizes lo..hi of one symbol (inclusive), served by the kernel tuned at hi.
struct Bucket {
  int64_t lo = 0, hi = 0;
};

/// The buckets of `s`, from graph::bucket_bounds: the first starts at s.min, each next one
/// just above the previous bound.
std::vector<Bucket> buckets_of(const graph::Symbol& s);

/// The symbols (of `symbols`) the size expressions of a plan problem name, in `symbols`
/// order. A size expression is a string field that parses as a monomial (graph/symbolic.h)
/// naming declared symbols only; other strings ("float32", "row") are not sizes.
std::vector<std::string> problem_symbols(const nlohmann::json& problem, const std::vector<graph::Symbol>& symbols);

/// The problem with every size expression evaluated at `values`.
nlohmann::json specialize_problem(const nlohmann::json& problem, const std::vector<graph::Symbol>& symbols,
                                  const graph::SymbolValues& values);

/// The symbols of a plan document (its "symbols" object; none for a version-1 plan).
/// Throws fact::Error for a malformed object (graph::symbols_from_json).
std::vector<graph::Symbol> plan_symbols(const nlohmann::json& plan);

}  // namespace fact::realize
