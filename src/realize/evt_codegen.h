// Epilogue Visitor Tree (EVT) code for a GEMM kernel: a CUTLASS sm90 fusion generated from
// the expression tree discovery captured (docs/03-rules.md, "Epilogues"), never one
// template per combination.
//
// Leaves: {"acc": true} -> Sm90AccFetch; {"scalar": v} -> Sm90ScalarBroadcast holding v;
// {"input": "c0"} -> a vector along N read through FactGemmArgs.bias (Sm90RowBroadcast, or
// Sm90ColBroadcast in a kernel that computes D^T). Nodes: add, sub, mul, div, relu, gelu,
// gelu_tanh, silu, sigmoid, tanh, neg, hardtanh and clamp (as max/min with scalars),
// leaky_relu (max(x,0) + s*min(x,0)) and pow with exponent 2 or 3 (as products) become
// Sm90Compute nodes computing in fp32; the root converts to D's element type.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace fact::realize {

/// The fusion's C++ source for the kernel template: `declarations` define FusionOp (and
/// the functors it needs) where the template declares its fusion; `arguments` is a
/// statement that sets `args.epilogue.thread` from `p` (FactGemmArgs) in make_arguments.
struct EvtSource {
  std::string declarations;
  std::string arguments;
};

/// Renders the EVT for `tree`. `inputs` is the number of external tensors (at most one
/// vector along N is supported: it travels as the bias pointer). Throws fact::Error naming
/// an op or input kind it cannot generate (e.g. mish, erf, a tensor of D's shape).
EvtSource render_evt(const nlohmann::json& tree, const nlohmann::json& broadcast);

/// The fusion of a plain GEMM: D = alpha * acc, plus bias[n] when `has_bias` (the
/// template's LinearCombination / LinCombPerColBias choice, unchanged).
EvtSource plain_fusion();

}  // namespace fact::realize
