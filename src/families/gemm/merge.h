// Merged projections (docs/03-rules.md, "Merged projections"): GEMM patterns that read the
// same A with the same layout run as one GEMM over their weights concatenated along N.
#pragma once

#include "discover/plan.h"

namespace fact::discover::rules {

/// Rule::merge of rule `gemm`. Patterns of the rule with no epilogue, unbatched (l = 1),
/// reading the same A value with the same M, K, layout_a, lda, dtypes, bias kind, alpha and
/// beta, each with a column-major B (F.linear's [N_i, K] weight, ldb = K) that is a
/// parameter, become one pattern: N = sum N_i, ldd = N, problem["merged"] lists each member's
/// output, weight, bias, N_i and column offset (graph order); its outputs are strided views
/// of the one [M, N] result (row stride N), never copies. The first member's output is the
/// pattern's output, the others its extra outputs; operands a, b, bias, then b1, bias1, ...
/// A member whose output reaches, through views, a node of another pattern (which assumed
/// the output's strides) stays alone, and so does one with another layout: its merge_stop
/// says why. SwiGLU's gate and up GEMMs are merged first, into one pattern of their own
/// (swiglu_merge.h).
void merge_gemms(const graph::GraphIndex& graph, Plan& plan);

}  // namespace fact::discover::rules
