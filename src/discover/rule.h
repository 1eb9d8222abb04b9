// The Rule interface of discovery. A rule is data (name, PyTorch meaning, kernel family,
// where its tests live) plus one match function over a graph node. docs/03-rules.md.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "discover/cost_model.h"
#include "discover/tail.h"
#include "graph/graph.h"

namespace fact::discover {

struct Plan;
struct Pattern;

/// A rule's match of one subgraph: the kernel problem it stands for.
struct Match {
  std::vector<std::string> nodes;  // graph nodes the kernel replaces, in graph order
  std::string output;              // the value the kernel produces
  std::vector<std::string> extra_outputs;  // further values it writes, read after it (e.g. add & norm's sum)
  std::vector<std::pair<std::string, std::string>> operands;  // kernel operand -> graph value
  nlohmann::ordered_json problem;  // the rule's problem descriptor (plan JSON "problem")
  Work work;                       // FLOPs and fewest bytes, for the cost model
  /// The same kernel over fewer nodes: without nodes at its input side that the epilogue of
  /// the GEMM producing its operand could take instead (add & norm -> the norm of the sum).
  /// The planner swaps a pattern for one of these when that tail and this match together
  /// gain more than the pattern (make_plan, step 2b). Each leaves out nodes; none has its own.
  std::vector<Match> smaller;
};

/// The node has the op the rule is about, but a constraint fails; `reason` says which,
/// with the offending values ("operand a dtype int64: ...").
struct Rejection {
  std::string reason;
};

/// Throws the Rejection `reason`: a rule's helpers call it where a constraint fails; the
/// planner, which calls every rule's match, takes a thrown Rejection as the rule's answer.
[[noreturn]] inline void reject(std::string reason) { throw Rejection{std::move(reason)}; }

/// The node is not one the rule is about (another op).
struct NotApplicable {};

using MatchResult = std::variant<NotApplicable, Rejection, Match>;

/// What a match function sees: the graph (with name lookups) and the run's policy.
struct MatchContext {
  const graph::GraphIndex& graph;
  Precision precision = Precision::tf32;
};

struct Rule {
  std::string_view name;           // "gemm": plan key, `factc rules` row
  std::string_view meaning;        // the PyTorch semantics it implements
  std::string_view kernel_family;  // the family that realizes its patterns (families/family.h): "gemm"
  std::string_view tests;          // where its tests live
  /// Tries to match the subgraph rooted at (ending in) `node`; a failed constraint may be
  /// returned as a Rejection or thrown by reject().
  MatchResult (*match)(const MatchContext& ctx, const graph::Node& node) = nullptr;
  /// The search for the elementwise tail after a pattern's output that its kernel can
  /// compute (the GEMM's find_epilogue_through_views); the planner calls it for each of the
  /// rule's patterns, and realization fuses what it finds into the kernel's epilogue.
  /// nullptr: its kernels take no tail.
  EpilogueSearch (*find_tail)(const graph::GraphIndex& graph, const std::string& output) = nullptr;
  /// Merges this rule's planned patterns that can run as one kernel (GEMMs that read the
  /// same A: one GEMM over the concatenated weights); the planner calls it after the
  /// epilogues are found (make_plan, step 2c). Merged patterns' nodes join the first; a near
  /// miss is written into the pattern's merge_stop. nullptr: the rule merges nothing.
  void (*merge)(const graph::GraphIndex& graph, Plan& plan) = nullptr;
  /// Narrowing (discover/narrow.h): the groups of the pattern's operand roles that its
  /// kernel reads rounded to bf16 under `precision` (fp32 values under bf16), each
  /// narrowed as a whole or not at all; the role "" is the pattern's output (its fused
  /// tail's, when it has one), which the kernel can then write in bf16. nullptr or no
  /// group: the rule's patterns narrow nothing.
  std::vector<std::vector<std::string>> (*narrow_groups)(const Pattern& p, Precision precision) = nullptr;
  /// Rewrites `p.problem` for one narrowed group of narrow_groups(p): its operands' and,
  /// with "", its output's dtype become bf16.
  void (*narrow)(Pattern& p, const std::vector<std::string>& roles) = nullptr;
};

}  // namespace fact::discover
