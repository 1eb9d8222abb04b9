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

#include "discover/tail.h"
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

/// Looks for the tail after `acc`. Ops: add/sub/mul/div (tensor or scalar operand), relu,
/// leaky_relu, gelu (erf and tanh), silu, sigmoid, tanh, hardtanh, clamp (scalar bounds),
/// mish, neg, erf, exp, pow with a scalar exponent. An op joins when every tensor it reads is acc,
/// a value already in the tail, or an external floating tensor of acc's dtype that
/// broadcasts along M or N or has acc's shape, and its output has acc's shape and dtype.
/// The tail ends at the last op whose absorbed intermediates (acc included) are read by
/// no op outside the tail and are not graph outputs.
EpilogueSearch find_epilogue(const graph::GraphIndex& graph, const std::string& acc);

}  // namespace fact::discover
