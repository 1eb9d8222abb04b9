// The interleaved gate/up weight of SwiGLU (swiglu.h), shared by the host code and the
// device helpers (swiglu_kernels.cu): rows 16b .. 16b+7 of W are Wg's rows 8b .. 8b+7 and
// rows 16b+8 .. 16b+15 are Wu's, so output column j's gate value is GEMM column
// swiglu_gate_column(j) and its up value kSwigluInterleave columns further.
#pragma once
#include <cstdint>

namespace fact::realize {

/// Rows of Wg, then of Wu, in each block of the interleaved weight.
constexpr int kSwigluInterleave = 8;

#ifdef __CUDACC__
__host__ __device__
#endif
inline int64_t swiglu_gate_column(int64_t j) {
  return j / kSwigluInterleave * 2 * kSwigluInterleave + j % kSwigluInterleave;
}

}  // namespace fact::realize
