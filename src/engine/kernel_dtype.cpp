#include "engine/kernel_dtype.h"

#include <cmath>

#include "base/error.h"

namespace fact::realize {

DType parse_dtype(const std::string& s) {
  if (s == "float32") return DType::f32;
  if (s == "float16") return DType::f16;
  if (s == "bfloat16") return DType::bf16;
  throw Error("dtype '" + s + "' is not realized by the CUTLASS GEMM family");
}

std::string to_string(DType d) {
  switch (d) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    default: return "?";
  }
}

std::size_t dtype_bytes(DType d) { return d == DType::f32 ? 4 : 2; }

double unit_roundoff(DType d) {
  return d == DType::f32 ? std::ldexp(1.0, -24) : d == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

cudaDataType_t cuda_data_type(DType d) {
  switch (d) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: break;  // no kernel computes in another dtype
  }
  return CUDA_R_32F;
}

}  // namespace fact::realize
