// Discovery over a graph with symbolic sizes (docs/03-rules.md, "Symbolic sizes").
#pragma once

#include <vector>

#include "discover/plan.h"
#include "graph/symbolic.h"

namespace fact::discover {

/// The symbol values a symbolic graph is planned at: every symbol at its hint, then, for
/// each symbol alone, its min, the smallest odd size of its range, and its upper probe (max,
/// or its bucket bound when unbounded), the others at their hints. Duplicates are left out.
///
/// Why these: a rule's size predicates are divisibility by powers of two (alignment),
/// monotone bounds (32-bit sizes, head-dim limits), and equalities between sizes. For a
/// monomial size c*s, c*s % 2^k == 0 holds for every s iff it holds at an odd s; a monotone
/// bound holds on [min, max] iff it holds at both ends; and two different monomials agree
/// at two different values of s only if they are equal.
std::vector<graph::SymbolValues> sample_points(const graph::SymbolicGraph& g);

/// The plan of a symbolic graph: make_plan of the graph at every sample point, merged.
/// A pattern of the plan at the hints is kept when every sample's plan has the same rule
/// over the same nodes, output and operands (and the same epilogue), and every integer of
/// its problem is a monomial in the symbols fitted from the samples and checked at all of
/// them (e.g. "m": "512*B"); other fields must agree everywhere. A pattern that fails
/// either test leaves its nodes ATen, listed as fallback with the sample and the reason.
/// Estimates are those at the hints. The plan carries the graph's symbols. Throws
/// fact::Error if a specialization is malformed.
Plan make_symbolic_plan(const graph::SymbolicGraph& g, const RuleRegistry& rules, Precision precision);

}  // namespace fact::discover
