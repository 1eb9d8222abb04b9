// Masks that are constants of the export (docs/03-rules.md, "Masks"): Hugging Face builds its
// causal, sliding-window and bidirectional masks in forward from arange positions (arange ->
// index -> le / gt, the packed-sequence term diff -> ne -> cumsum -> eq, __and__, expand,
// where(m, 0, finfo.min)). When every value such a mask is computed from is a constant of the
// graph (no input, parameter or buffer), evaluate_mask computes it exactly and classify_mask
// says what it is; no runtime value is involved, so nothing needs re-checking at load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace fact::discover::attention {

/// A constant tensor's elements, row-major over `shape` (bools and integers as 0/1 and exact
/// integers, floats as doubles).
struct ConstTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

/// Evaluates `value` from the graph's constants when it is computed by the ops mask builders
/// use (arange, full/ones/zeros/new_ones, add/sub/mul, comparisons, __and__/__or__/not,
/// cumsum, diff, index.Tensor, slice, unsqueeze/view/reshape/expand, casts, where,
/// masked_fill) from no placeholder, with at most `max_elements` elements in any value.
/// nullopt otherwise.
std::optional<ConstTensor> evaluate_mask(const graph::GraphIndex& g, const std::string& value,
                                         int64_t max_elements = int64_t(1) << 20);

/// What a constant mask keeps over its last two dims [R, C] (the same for every leading
/// index): key j of row i is kept where the element is true (a bool mask) or 0 (an additive
/// mask whose other elements are at most -1e9 or -inf).
struct MaskClass {
  enum class Kind { other, all_kept, none_kept, causal };
  Kind kind = Kind::other;
  int64_t window = 0;  // causal: 0 = every j <= i; w > 0 = only i - w < j <= i
  std::string why;     // other: the first element that fits no kind
};
MaskClass classify_mask(const ConstTensor& m, bool additive);

/// classify_mask of `value` (negated: of its logical not) when it is a constant of the export,
/// without holding it: values of at most 2^20 elements are evaluated (evaluate_mask), larger
/// ones element by element when they are element ops (comparisons, and/or/not, where,
/// masked_fill, add/sub/mul, expand, casts) over such values; at most `max_elements` in all.
/// nullopt when it is not such a constant.
std::optional<MaskClass> classify_constant_mask(const graph::GraphIndex& g, const std::string& value,
                                                bool additive, bool negated,
                                                int64_t max_elements = int64_t(1) << 26);

/// The nodes computing `value` that nothing outside `inside` and themselves reads (walking
/// back from its producer): a mask's builders, which the pattern replaces with it.
std::vector<std::string> exclusive_cone(const graph::GraphIndex& g, const std::string& value,
                                        const std::vector<std::string>& inside);

}  // namespace fact::discover::attention
