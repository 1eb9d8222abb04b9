// Element types, the one enum of FACT: what a graph carries (graph/types.h names and sizes
// them) and what kernels compute in (f32, f16, bf16; a family's problem parser says which it
// takes). Plain C++17, so the CUDA helpers of src/engine/ include it too.
#pragma once

#include <cstdint>

namespace fact {

/// Element types (torch dtypes): float64, float32, float16, bfloat16, int64, int32, int16,
/// int8, uint8, bool.
enum class DType : uint8_t { f64, f32, f16, bf16, i64, i32, i16, i8, u8, b8 };

}  // namespace fact
