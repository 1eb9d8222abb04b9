// The canonical form of a graph: what every rule sees (docs/03-rules.md, "Canonical form").
//
// One pass per file in this folder; canonicalize() runs them in the order written down in
// canonicalize.cpp, once, before any rule. A pass either drops a node whose output is
// another value (a cast to the value's own dtype, dropout that does nothing, an alias), drops
// a node no value depends on (an assertion, a folded constant), or rewrites a node's spelling
// so that it reads only what it computes from (expand_as -> expand with the shape; a 0-d
// constant argument -> the number). Node and value names never change, so every name a rule
// puts into the plan is a name of the exported graph, which the runtime runs.
//
// The runtime replaces a pattern's nodes in the ORIGINAL graph, so after the rules ran,
// restore_dropped() puts the dropped nodes back into the plan: into the pattern (or its
// epilogue) they sit inside, else into the fallback list, where they keep running as the
// identities they are.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace fact::discover {

struct Plan;

/// A node the canonical form does not have.
struct DroppedNode {
  std::string node, op;
  std::string same_as;  // the value its output equals; "" when no value is left depending on it
  std::string why;      // "a cast to its own dtype", ...
};

struct CanonicalGraph {
  graph::Graph graph;                // names as in the exported graph, fewer nodes
  std::vector<DroppedNode> dropped;  // graph order
  std::set<std::string> rewritten;   // nodes kept with another spelling (they read less)
};

/// Runs the canonical passes over `graph` (a valid graph) and returns the canonical graph;
/// a graph with nothing to canonicalize comes back unchanged.
CanonicalGraph canonicalize(const graph::Graph& graph);

/// The canonical graph's text (graph/text.h) followed by one comment line per dropped node
/// ("# dropped %to (aten.to.dtype): a cast to its own dtype, same as %div") and per rewritten
/// one: `factc discover --canonical` and the golden tests of tests/golden/canonical/.
std::string canonical_to_text(const CanonicalGraph& canonical);

/// The nodes of `exported` that a match of canonical `nodes` with `output` replaces: `nodes`
/// and the dropped or rewritten nodes that join them as restore_dropped says, in graph order.
/// The planner estimates a match over these (the ATen path runs them all).
std::vector<std::string> exported_nodes(const graph::GraphIndex& exported, const CanonicalGraph& canonical,
                                        const std::vector<std::string>& nodes, const std::string& output);

/// Makes `plan` (planned over canonical.graph) consistent with `original`: a dropped or
/// rewritten node that reads a value produced inside a pattern (other than its output), or a
/// dropped node read only by a pattern's nodes, joins that pattern (its epilogue for values
/// of the tail); every other dropped node is listed as fallback with why it is an identity.
/// A pattern that would still leave one of its inner values read outside is given up (its
/// nodes become fallback, naming the reader).
void restore_dropped(const graph::Graph& original, const CanonicalGraph& canonical, Plan& plan);

}  // namespace fact::discover
