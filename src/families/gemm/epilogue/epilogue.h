// Epilogue discovery: the elementwise tail after a GEMM that the GEMM's epilogue could
// compute (docs/03-rules.md, "Epilogues"). A tail is a tree of elementwise ops over the
// GEMM's output `acc`, scalars and external tensors that broadcast along M, along N or
// match D's shape; every intermediate it absorbs must be read only inside the tail (single
// use), so that nothing the rest of the graph needs vanishes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.h"

namespace fact::discover {

/// How an epilogue op reads its arguments.
enum class EpilogueOpKind { unary, binary, gelu, leaky_relu, hardtanh, clamp, pow };

/// One ATen op an epilogue computes: the table the tail search dispatches on and
/// `factc rules` lists.
struct EpilogueOp {
  std::string_view aten;     // "aten.relu.default"
  std::string_view name;     // expression name: "relu"
  EpilogueOpKind kind;
  std::string_view meaning;  // the PyTorch it stands for
};

/// Every op an epilogue tail may contain, in listing order.
const std::vector<EpilogueOp>& epilogue_ops();

/// One fusable tail.
struct Epilogue {
  std::vector<std::string> nodes;  // the tail's nodes, graph order
  std::string output;              // the value the fused kernel writes instead of acc
  /// Canonical expression, e.g. "relu(mul(sub(acc, 2.0), 1.5))"; external tensors are
  /// c0, c1, ... in order of first use.
  std::string expr;
  nlohmann::ordered_json tree;     // the same as JSON: {"op": ..., "args": [...]},
                                   // {"acc": true}, {"scalar": v}, {"input": "c0"}
  std::vector<std::pair<std::string, std::string>> inputs;  // "c0" -> graph value
  std::vector<std::string> broadcast;  // per input: "n" (a row vector along N), "m" (a
                                       // column along M), "mn" (D's shape), "scalar"
  int64_t saved_bytes = 0;  // what the ATen tail moves beyond reading its external inputs
};

/// The result of looking for a tail after the GEMM that produces `acc`: the largest
/// fusable tail, or none with `stop` saying why the first candidate op could not join
/// (empty when `acc` has no elementwise consumer at all).
struct EpilogueSearch {
  std::optional<Epilogue> epilogue;
  std::string stop;
};

/// Looks for the tail after `acc`. Ops: add/sub/mul/div (tensor or scalar operand), relu,
/// leaky_relu, gelu (erf and tanh), silu, sigmoid, tanh, hardtanh, clamp (scalar bounds),
/// mish, neg, erf, exp, pow with a scalar exponent. An op joins when every tensor it reads is acc,
/// a value already in the tail, or an external floating tensor of acc's dtype that
/// broadcasts along M or N or has acc's shape, and its output has acc's shape and dtype.
/// The tail ends at the last op whose absorbed intermediates (acc included) are read by
/// no op outside the tail and are not graph outputs.
EpilogueSearch find_epilogue(const graph::GraphIndex& graph, const std::string& acc);

}  // namespace fact::discover
