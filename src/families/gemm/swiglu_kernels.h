// Device helpers of SwiGLU's realization (swiglu_realize.cpp): the pairing pass the vendor
// candidate runs after its GEMM, the float64 reference's comparison and max |acc|.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/gpu_kernels.h"
#include "engine/kernel_dtype.h"

namespace fact::realize {

/// out[i, j] = silu(acc[i, gate(j)]) * acc[i, gate(j) + 8] for i < m, j < hidden, in fp32
/// arithmetic (acc: m x 2*hidden, row stride ld_acc, interleaved as swiglu.h says; acc and
/// out of dtype `dt`, out's row stride ldo).
void swiglu_pairs(const void* acc, DType dt, int64_t m, int64_t hidden, int64_t ld_acc, void* out, int64_t ldo,
                  cudaStream_t stream);

/// max |x| over `count` doubles (synchronizes `stream`).
double max_abs_device(const double* x, int64_t count, cudaStream_t stream);

/// Compares a kernel's D (dtype `dt`, m x hidden, row stride ldd) with the float64
/// reference silu(g)·u of acc64 (m x 2*hidden, contiguous, interleaved). Each element must
/// lie within swiglu_error_bound(g, u, delta, out_unit) of it (swiglu_bound.h), delta being
/// the GEMM's bound on the error of g and u (tolerance x max |acc|). Accumulates into *stats_device (zeroed here) as
/// compare_to_reference does, with over_bound and a witness (its flat index i * hidden + j,
/// witness_acc = g).
void swiglu_compare(const void* d, DType dt, int64_t ldd, const double* acc64, int64_t m, int64_t hidden,
                    double delta, double out_unit, CompareStats* stats_device, cudaStream_t stream);

}  // namespace fact::realize
