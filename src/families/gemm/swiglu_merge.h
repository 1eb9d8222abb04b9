// SwiGLU in discovery (docs/03-rules.md, "SwiGLU"): the Llama MLP's
//   silu(x @ Wg.T) * (x @ Wu.T)      (F.silu(self.w1(x)) * self.w3(x))
// planned as one GEMM over the gate/up weight interleaved at load (swiglu.h).
#pragma once

#include "discover/plan.h"

namespace fact::discover::rules {

/// Part of Rule::merge of rule `gemm` (merge_gemms calls it first). A GEMM pattern (the
/// gate) whose tail is mul(silu(acc), c0) or mul(c0, silu(acc)), c0 of D's shape being the
/// output of another GEMM pattern (the up) that only the tail's mul reads, becomes one
/// pattern when both read the same A with the same M, N (= H), K, dtypes, A row-major,
/// [H, K] parameter weights (layout_b col, ldb = K), no bias, alpha 1, beta 0, unbatched,
/// H a multiple of 8: its nodes are both GEMMs' and the tail's, its output the mul's,
/// operands a, b (Wg), b1 (Wu), problem the gate's with n = 2H, ldd = H and "swiglu"
/// (gate and up output and weight, hidden H, interleave 8); the up pattern is gone. A
/// gate whose tail has that form but fails a condition keeps its tail (today's two
/// kernels) and says why in merge_stop.
void merge_swiglu(const graph::GraphIndex& graph, Plan& plan);

}  // namespace fact::discover::rules
