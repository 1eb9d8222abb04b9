// Roofline cost model of discovery: how long a pattern takes at best on the target GPU,
// whether compute or memory bounds it, and how much a FACT kernel can gain over ATen.
#pragma once

#include "base/precision.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "graph/types.h"

namespace fact::discover {

using fact::Precision;
using fact::precision_name;
using fact::precision_from_name;

/// The unit that executes a pattern's FLOPs.
enum class MathUnit { fp32_simt, tf32_tensor, fp16_tensor, bf16_tensor };
std::string_view unit_name(MathUnit u);
/// The unit a matmul of `dtype` operands uses under `policy`: float32 -> fp32 SIMT, TF32
/// or bf16 tensor cores by policy; float16/bfloat16 -> their tensor cores. Throws
/// fact::Error for other dtypes.
MathUnit matmul_unit(graph::DType dtype, Precision policy);

/// Peak rates of one GPU. All rates are dense (no structured sparsity).
struct Ceilings {
  std::string_view gpu;
  double fp32_flops, tf32_flops, fp16_flops, bf16_flops;  // FLOP/s
  double hbm_bytes_per_s;                                  // byte/s
  /// Share of a pattern's roofline time a tuned kernel is assumed to win over the ATen
  /// path even when it moves no fewer bytes (tile/schedule choice for this exact shape).
  double tuning_headroom;
  double peak(MathUnit u) const;
};

/// NVIDIA H200 SXM datasheet (nvidia.com/en-us/data-center/h200), dense rates: FP32
/// 67 TFLOP/s, TF32 tensor 494 TFLOP/s, BF16/FP16 tensor 989 TFLOP/s (the datasheet's
/// 989/1979 figures are with sparsity), HBM3e 4.8 TB/s.
inline constexpr Ceilings kH200{"NVIDIA H200", 67e12, 494e12, 989e12, 989e12, 4.8e12, 0.05};

/// What a pattern costs: its FLOPs on one math unit and the fewest bytes it must move.
struct Work {
  int64_t flops = 0;
  int64_t bytes = 0;
  MathUnit unit = MathUnit::fp32_simt;
};

enum class Bound { compute, memory };

/// The roofline estimate of one pattern.
struct Estimate {
  int64_t flops = 0;
  int64_t bytes = 0;      // fewest bytes of the fused kernel
  Bound bound = Bound::compute;
  double time_us = 0;     // max(flops / peak, bytes / bandwidth)
  double gain_us = 0;     // estimated time saved over the ATen nodes it replaces
  std::string reason;     // "intensity 1365.3 FLOP/B >= ridge 102.9 FLOP/B (tf32 tensor cores)"
};

/// Estimates `fused` against the ATen path that moves `unfused_bytes` (every replaced
/// node reading its inputs and writing its outputs):
///   gain = (time(unfused) - time(fused)) + tuning_headroom * time(fused).
Estimate estimate(const Work& fused, int64_t unfused_bytes, const Ceilings& gpu = kH200);

/// Fewest bytes to read or write one tensor (stride-0 dimensions count once).
int64_t tensor_bytes(const graph::TensorType& type);

}  // namespace fact::discover
