// The plan: discovery's output (docs/03-rules.md), the planner that makes it and its
// JSON and text forms.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "discover/cost_model.h"
#include "discover/tail.h"
#include "discover/registry.h"
#include "graph/graph.h"
#include "graph/symbolic.h"

namespace fact::discover {

/// One matched subgraph the plan asks realize to build a kernel for.
struct Pattern {
  std::string id;  // "p<priority>"
  std::string rule;
  int priority = 0;  // 0 = largest estimated gain
  std::vector<std::string> nodes;
  std::string output;
  std::vector<std::string> extra_outputs;  // Match::extra_outputs (in memory only: the problem names them)
  std::vector<std::pair<std::string, std::string>> operands;
  nlohmann::ordered_json problem;
  Estimate estimate;
  std::optional<std::string> vetted_example;  // filled from the registry when known
  /// The elementwise tail the kernel's epilogue could compute, found by its rule's
  /// find_tail; realization fuses it or says why not.
  std::optional<Epilogue> epilogue;
  double epilogue_gain_us = 0;  // saved_bytes at the GPU's bandwidth
  std::string epilogue_stop;    // why no (longer) tail fuses, when an op after the GEMM
                                // could not join
  std::string merge_stop;       // why it was not merged with a pattern reading the same
                                // operand (Rule::merge), when one does
};

/// A node a rule was about but could not take, with the rule's reason.
struct RejectedNode {
  std::string node, op, rule, reason;
};

/// A node no pattern covers; it stays an ATen op (or, when the canonical form dropped it,
/// the runtime leaves it out: `same_as` names the value its output equals, "" for a node
/// whose output nothing reads).
struct FallbackNode {
  std::string node, op, reason;
  std::optional<std::string> same_as = std::nullopt;  // set only for nodes the canonical form dropped
};

/// A value stored in a narrower dtype than the graph's (discover/narrow.h): every reader
/// rounds it to that dtype anyway.
struct NarrowedValue {
  std::string value;   // a node output or parameter of the graph
  std::string dtype;   // torch name: "bfloat16"
  std::string reason;  // who reads it, or which value it is a view of
};

struct Plan {
  std::string graph;
  Precision precision = Precision::tf32;
  /// The graph's symbols (make_symbolic_plan): problem sizes may then be monomials in
  /// them ("m": "512*B"), and the plan is written as version 2. Empty for a static graph.
  std::vector<graph::Symbol> symbols;
  std::vector<Pattern> patterns;  // priority order
  std::vector<RejectedNode> rejected;  // graph order
  std::vector<FallbackNode> fallback;  // graph order
  std::vector<NarrowedValue> narrowed;  // graph order of their producers (parameters first)
};

/// Runs every rule over every node of the canonical graph (discover/canonical/canonical.h),
/// estimates each match, resolves overlaps (a node
/// belongs to at most one pattern; larger gain wins, then earlier node), orders the
/// patterns by gain and lists every other node as rejected or fallback; nodes the canonical
/// form dropped are put back (restore_dropped), so every name is one of `graph`'s.
/// Throws fact::Error if the graph is malformed.
Plan make_plan(const graph::Graph& graph, const RuleRegistry& rules, Precision precision);

/// The plan as JSON (docs/03-rules.md, version 1) and dumped with a final newline.
nlohmann::ordered_json plan_to_json(const Plan& plan);
std::string plan_to_json_string(const Plan& plan);

/// Canonical plan text for golden tests and `factc discover --text`: a header line, then
/// one line per pattern, rejection and fallback node.
std::string plan_to_text(const Plan& plan);

}  // namespace fact::discover
