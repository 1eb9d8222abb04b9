// Epilogue Visitor Tree (EVT) code for a GEMM kernel: a CUTLASS sm90 fusion generated from
// the expression tree discovery captured (docs/03-rules.md, "Epilogues"), never one
// template per combination.
//
// Leaves: {"acc": true} -> Sm90AccFetch; {"scalar": v} -> Sm90ScalarBroadcast holding v;
// {"input": "bias"} -> the GEMM's own bias along N (FactGemmArgs.bias); {"input": "cI"}
// (I < 4) -> FactGemmArgs.epi[I], by its broadcast kind: "n" a vector along N
// (Sm90RowBroadcast), "m" a vector along M (Sm90ColBroadcast), "mn" a tensor of D's shape
// (Sm90AuxLoad read straight from global memory, 16-byte vectors); row and column swap in
// a kernel that computes D^T. Nodes: add, sub, mul, div, max/min (NaN-propagating, as
// torch.clamp), relu, gelu, gelu_tanh, silu, sigmoid, tanh, erf, mish, exp, neg; hardtanh and
// clamp with scalar bounds, leaky_relu and pow with exponent 2 or 3 are rewritten into
// those. Every node computes in fp32 with the accurate CUDA math functions (erff, tanhf,
// expf, log1pf; no tanh.approx), as PyTorch's fp32 kernels do; the root converts to D's
// element type. Before rendering, the tree is rewritten by the ranges its nodes can take
// (evt_ranges.h: no-op clamps dropped, erf of a bounded argument through bounded_math.h).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace fact::realize {

/// The fusion's C++ source for the kernel template: `declarations` define FusionOp (and
/// the functors it needs) plus kEpiInputMask / kEpiTensorMask (bit I: the tail reads
/// epi[I]; epi[I] is a tensor of D's shape) where the template declares its fusion;
/// `arguments` is a statement that sets `args.epilogue.thread` from `p` (FactGemmArgs) in
/// make_arguments.
struct EvtSource {
  std::string declarations;
  std::string arguments;
};

/// Renders the EVT for `tree`, whose inputs are kinds in `broadcast` ({"c0": "n", ...};
/// "bias" is always "n"). Throws fact::Error naming an op or input it cannot generate
/// (pow with another exponent, an input named other than bias/c0..c3, a kind other than
/// n/m/mn, a tree without an op).
EvtSource render_evt(const nlohmann::json& tree, const nlohmann::json& broadcast);

/// The fusion of a plain GEMM: D = alpha * acc, plus bias[n] when the kernel has a bias
/// (the template's LinearCombination / LinCombPerColBias choice, unchanged).
EvtSource plain_fusion();

}  // namespace fact::realize
