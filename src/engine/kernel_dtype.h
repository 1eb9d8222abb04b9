// The element types kernels compute in: float32, float16 and bfloat16 (base/dtype.h's
// f32, f16, bf16), as plans spell them and as device buffers size them.
#pragma once
#include <library_types.h>

#include <cstddef>
#include <string>

#include "base/dtype.h"

namespace fact::realize {

using fact::DType;  // kernels compute in f32, f16 or bf16

/// Parses torch dtype names "float32" | "float16" | "bfloat16". Throws fact::Error
/// "dtype '<s>' is not realized by the CUTLASS GEMM family" for any other.
DType parse_dtype(const std::string& s);
/// "float32" | "float16" | "bfloat16"; "?" for a dtype no kernel computes in.
std::string to_string(DType d);
/// Bytes per element of a kernel dtype: 4 for f32, else 2.
std::size_t dtype_bytes(DType d);
/// The unit roundoff of storing in `d`: 2^-24 (fp32), 2^-11 (fp16), 2^-8 (bf16).
double unit_roundoff(DType d);
/// The CUDA data type of a kernel dtype (CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF).
cudaDataType_t cuda_data_type(DType d);

}  // namespace fact::realize
