// The element types FACT's kernels read and write (fp32, bf16, fp16), on the host: rounding
// a float to one of them, and the bytes of arrays of them. The families' float64 references
// and verification (norm, rope) share these; tests/families/norm/test_reference.cpp tests
// them.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/kernel_dtype.h"

namespace fact::realize {

/// Rounds `v` to dtype `d` (round to nearest even; bf16 and fp16 as cuda_bf16.h /
/// cuda_fp16.h do) and back to float. Other dtypes: `v` unchanged.
float round_to(DType d, float v);

/// The bytes of `values` (each representable in `d`, e.g. rounded by round_to) as `d`'s
/// elements: fp32 as is, bf16 its upper half, fp16 its IEEE binary16 encoding.
std::vector<uint8_t> encode_elements(DType d, const std::vector<float>& values);

/// Element `i` of an array of `d` at `data`, as a float.
float decode_element(DType d, const void* data, int64_t i);

}  // namespace fact::realize
