// The norm problem a plan pattern describes (rule "norm", docs/03-rules.md, "The norm rule";
// the kernels' C ABI is abi.h): rows x cols, LayerNorm or RMSNorm over each row, the
// residual add before it and its optional sum output, the affine weight and bias.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/kernel_dtype.h"

namespace fact::realize {

enum class NormKind { layer, rms };

struct NormProblem {
  NormKind norm = NormKind::layer;
  int64_t rows = 1, cols = 1;
  DType dtype = DType::f32;                // x, residual and the sum
  DType out_dtype = DType::f32;            // the normalized output
  std::optional<DType> param_dtype;        // weight and bias; none when neither is read
  double eps = 1e-5;
  bool weight = false, bias = false, residual = false;
  std::string sum_output;                  // the sum's graph value, "" when it is not written
  int64_t x_stride = 1, residual_stride = 0;  // row strides in elements (the last dim is unit stride)
  std::string form;                        // how the graph wrote it (layer_norm, rms_norm, written, ...)

  bool writes_sum() const { return !sum_output.empty(); }
  /// Elements x's (and the residual's) allocation spans: (rows - 1) * stride + cols.
  int64_t extent_x() const { return (rows - 1) * x_stride + cols; }
  int64_t extent_residual() const { return residual ? (rows - 1) * residual_stride + cols : 0; }
};

/// "layer" | "rms".
std::string norm_kind_name(NormKind k);

/// Reads a plan pattern's "problem" object of kind "norm": norm ("layer" | "rms"), rows and
/// cols (positive integers), dtype, out_dtype ("float32" | "bfloat16" | "float16"),
/// param_dtype (one of those, or null when neither weight nor bias is read), eps (a finite
/// number >= 0), weight, bias, residual (booleans), sum_output (a value name or null; only
/// with a residual), strides {"x": integer >= cols (or any for one row), "residual": the same
/// with a residual, else null} and form (a string). Throws fact::Error naming the missing or
/// bad field. Rows or cols past 2^31 - 1, a stride past 2^48 elements and an operand past
/// 2^48 bytes (kMaxSpanBytes) are refused the same way.
NormProblem norm_problem_from_json(const nlohmann::json& j);

}  // namespace fact::realize
