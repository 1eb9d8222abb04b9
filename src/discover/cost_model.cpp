#include "discover/cost_model.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/error.h"

namespace fact::discover {

std::string_view unit_name(MathUnit u) {
  switch (u) {
    case MathUnit::fp32_simt: return "fp32 SIMT";
    case MathUnit::tf32_tensor: return "tf32 tensor cores";
    case MathUnit::fp16_tensor: return "fp16 tensor cores";
    case MathUnit::bf16_tensor: return "bf16 tensor cores";
  }
  return "?";
}

MathUnit matmul_unit(graph::DType dtype, Precision policy) {
  using graph::DType;
  switch (dtype) {
    case DType::f16: return MathUnit::fp16_tensor;
    case DType::bf16: return MathUnit::bf16_tensor;
    case DType::f32:
      return policy == Precision::fp32   ? MathUnit::fp32_simt
             : policy == Precision::tf32 ? MathUnit::tf32_tensor
                                         : MathUnit::bf16_tensor;
    default:
      throw Error("no matmul unit for dtype " + std::string(graph::torch_name(dtype)));
  }
}

double Ceilings::peak(MathUnit u) const {
  switch (u) {
    case MathUnit::fp32_simt: return fp32_flops;
    case MathUnit::tf32_tensor: return tf32_flops;
    case MathUnit::fp16_tensor: return fp16_flops;
    case MathUnit::bf16_tensor: return bf16_flops;
  }
  return fp32_flops;
}

Estimate estimate(const Work& w, int64_t unfused_bytes, const Ceilings& gpu) {
  const double peak = gpu.peak(w.unit);
  const double compute_s = static_cast<double>(w.flops) / peak;
  const double memory_s = static_cast<double>(w.bytes) / gpu.hbm_bytes_per_s;
  const double fused_s = std::max(compute_s, memory_s);
  const double unfused_s =
      std::max(compute_s, static_cast<double>(std::max(unfused_bytes, w.bytes)) / gpu.hbm_bytes_per_s);

  Estimate e;
  e.flops = w.flops;
  e.bytes = w.bytes;
  e.bound = compute_s >= memory_s ? Bound::compute : Bound::memory;
  e.time_us = fused_s * 1e6;
  e.gain_us = ((unfused_s - fused_s) + gpu.tuning_headroom * fused_s) * 1e6;
  const double intensity = w.bytes ? static_cast<double>(w.flops) / static_cast<double>(w.bytes) : 0;
  const double ridge = peak / gpu.hbm_bytes_per_s;
  e.reason = fmt::format("intensity {:.1f} FLOP/B {} ridge {:.1f} FLOP/B ({} on {})", intensity,
                         e.bound == Bound::compute ? ">=" : "<", ridge, unit_name(w.unit), gpu.gpu);
  return e;
}

int64_t tensor_bytes(const graph::TensorType& t) {
  return t.distinct_elements() * graph::element_size(t.dtype);
}

}  // namespace fact::discover
