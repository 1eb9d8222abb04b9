// Narrowed values (docs/03-rules.md, "Narrowed values"): under the bf16 policy, an fp32
// value whose every reader rounds it to bf16 before its tensor cores is stored in bf16.
//
// Under `bf16` a GEMM or an attention kernel rounds its fp32 operands to bf16 (to nearest
// even) before the MMA (docs/00-design.md §4). A value that only such operands read can be
// rounded once, where it is made (the producing kernel's epilogue writes bf16, or a
// parameter is converted when the module is built), with bit-identical results and half
// the bytes: that is what this pass marks. A value is narrowed only as a whole "class":
// the value and every free view of it that ATen computes (view, transpose, split, ...),
// and only when
//   - its producer can write bf16: a parameter, or a pattern whose rule names its output
//     in a narrowing group (Rule::narrow_groups);
//   - every reader of every member is a pattern operand in one of its rule's groups (no
//     ATen op, no fused tail, no graph output reads it);
//   - every group it belongs to can be narrowed as a whole (a GEMM rounds A and B
//     together: both or neither; an attention kernel q, k, v and its output).
// Then each group's rule rewrites its pattern's problem (Rule::narrow).
#pragma once

#include "discover/plan.h"
#include "discover/registry.h"
#include "graph/graph.h"

namespace fact::discover {

/// Marks the narrowed values of `plan` (Plan::narrowed, graph order of their producers)
/// and rewrites the problems of the patterns that read or write them. Only under
/// Precision::bf16; any other policy leaves the plan as it is. `graph` is the canonical
/// graph the patterns were matched on (the canonical form's dropped nodes read nothing).
void narrow_values(const graph::GraphIndex& graph, const RuleRegistry& rules, Plan& plan);

}  // namespace fact::discover
