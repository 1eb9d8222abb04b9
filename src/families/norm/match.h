// The norm family's matchers (match.cpp): the spellings of LayerNorm and RMSNorm over the
// last dimension, and what surrounds them (input casts, a residual add, output casts, the
// affine weight and bias). rule.cpp turns the parts into the plan's problem.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "discover/rule.h"
#include "graph/graph.h"

namespace fact::discover::norm {

/// What one matched norm is made of, before its problem is formed.
struct NormParts {
  std::string kind;               // "layer" (subtracts the mean) | "rms"
  std::string form;               // "layer_norm" | "native_layer_norm" | "rms_norm" | "written"
  std::string x;                  // the value whose rows are normalized (the kernel's input)
  std::string residual;           // add & norm: the add's second operand ("" without an add)
  std::string sum_output;         // add & norm: the sum's value read after the pattern, or ""
  std::string weight, bias;       // "" when absent
  double eps = 0;
  std::vector<std::string> nodes;  // every node replaced (any order; rule.cpp sorts)
  std::string output;             // the normalized value the pattern produces
};

/// An ATen norm op at `node` (layer_norm, native_layer_norm, rms_norm) over the last
/// dimension: its parts, or nullopt for another op. Throws Rejection (discover::reject) for a norm over more than
/// the last dimension, missing eps, or native_layer_norm whose mean or rstd is read.
std::optional<NormParts> match_norm_op(const graph::GraphIndex& g, const graph::Node& node);

/// A norm written out, anchored at its core `node`: c * rsqrt(stat + eps) or
/// c / sqrt(stat + eps), stat = mean(c^2, -1, keepdim) (RMSNorm: c is the input; LayerNorm:
/// c = x - mean(x, -1, keepdim)) or var(x, -1, unbiased=False, keepdim). Nullopt when the
/// node is not such a core. Throws Rejection (discover::reject) for a reduction over another dimension, an
/// unbiased variance, or an interior value read outside.
std::optional<NormParts> match_written_norm(const graph::GraphIndex& g, const graph::Node& node);

/// Extends a match around its core: the output casts (to.dtype, type_as), the weight
/// multiply and the bias add after it (each the single reader of the value before it), the
/// input casts before it and a residual add feeding it (add & norm), with the
/// _assert_tensor_metadata nodes that read the values taken. The sum is an output
/// (`sum_output`) exactly when a node outside the pattern, or the graph's outputs, read it;
/// the add is not taken when two of its chain's values are read after, or when a reader of
/// the sum comes before the norm's output in graph order (the kernel runs there), nor when
/// `with_residual` is false (the match without its add, Match::smaller).
void extend_norm(const graph::GraphIndex& g, NormParts& parts, bool with_residual = true);

/// True for a cast that keeps the values (to.dtype, type_as, _to_copy without other
/// arguments) between floating types.
bool is_cast(const graph::GraphIndex& g, const graph::Node& node);

}  // namespace fact::discover::norm
