// Tensor types of the FACT graph: element dtype, static shape and strides (in elements).
// See docs/02-graph-format.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/dtype.h"

namespace fact::graph {

/// Element types a FACT graph carries (torch dtypes; base/dtype.h).
using fact::DType;

/// torch's name: "float32", "bfloat16", "int64", "bool", ...
std::string_view torch_name(DType dtype);
/// The short name of the text form: "f32", "bf16", "i64", "b8", ...
std::string_view short_name(DType dtype);
/// Inverse of torch_name. Throws fact::Error naming the unknown string.
DType dtype_from_torch_name(std::string_view name);
/// Inverse of short_name; nullopt for an unknown name.
std::optional<DType> dtype_from_short_name(std::string_view name);
/// Bytes per element.
int64_t element_size(DType dtype);
/// True for f64, f32, f16, bf16.
bool is_floating(DType dtype);

/// A tensor value's type. shape and strides have the same length (the rank).
struct TensorType {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// Number of logical elements (1 for a 0-d tensor).
  int64_t numel() const;
  /// Number of distinct memory elements addressed: a dimension with stride 0 (a
  /// broadcast) counts once. The fewest elements a kernel must read.
  int64_t distinct_elements() const;
  /// Row-major contiguous (size-1 dimensions may have any stride).
  bool is_contiguous() const;

  bool operator==(const TensorType&) const = default;
};

/// Row-major contiguous strides for a shape: [4,3,2] -> [6,2,1].
std::vector<int64_t> contiguous_strides(std::span<const int64_t> shape);

}  // namespace fact::graph
