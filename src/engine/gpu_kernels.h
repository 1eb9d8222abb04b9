// Small device kernels for verification: random fill, conversion to float64, bias
// broadcast and the comparison against the float64 reference. All launch on `stream`
// and check the launch; none synchronizes.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "base/dtype.h"

namespace fact::realize {

enum class Distribution { Normal, Uniform01 };

/// Fills `count` elements of dtype `d` at `dst` with independent draws (counter-based
/// hash of (seed, index): the same seed gives the same values), times `scale`.
void fill_random(void* dst, DType d, int64_t count, uint64_t seed, Distribution dist,
                 double scale, cudaStream_t stream);

/// dst[i] = double(src[i]) for `count` elements of dtype `d`.
void convert_to_double(const void* src, DType d, double* dst, int64_t count, cudaStream_t stream);

/// Writes bias[j] (dtype `bias_d`, length n) or 0 when bias is null into every logical
/// element (b, i, j) of a row-major L x M x N matrix with leading stride ldd and batch
/// stride bsd. `out_double` selects a float64 destination, else one of dtype `d`.
void broadcast_rows(void* out, bool out_double, const void* bias, DType d, DType bias_d, int64_t l,
                    int64_t m, int64_t n, int64_t ldd, int64_t bsd, cudaStream_t stream);

/// Keeps the GPU busy for `microseconds` (one thread spinning on %globaltimer). Launched
/// before a timed region's start event, it hides the host's launch preparation, so the
/// events measure device time only.
void gpu_spin(int microseconds, cudaStream_t stream);

/// Comparison of an output against its float64 reference over the logical L x M x N
/// elements. Accumulated in device memory (see CompareStats) and read back by the caller.
struct CompareStats {
  double max_abs_err;     // max |d - ref| over finite d
  double max_abs_ref;     // max |ref|
  double sum_sq_err;      // sum (d - ref)^2
  double sum_sq_ref;      // sum ref^2
  unsigned long long nonfinite;  // elements of d that are NaN/Inf where ref is finite
  double first_value;     // d at (0,0,0); with `all_same` detects constant outputs
  unsigned long long differs_from_first;  // count of d elements != d(0,0,0)
  unsigned long long over_bound;  // elements whose error exceeds their own bound (fused tails)
  // One element beyond its bound (fused tails; the first to claim `witness_taken`): its
  // flat index b*M*N + i*N + j, the float64 GEMM value, the tail's reference, the kernel's
  // value and the bound.
  unsigned int witness_taken;
  unsigned long long witness_index;
  double witness_acc, witness_ref, witness_value, witness_bound;
};
void compare_to_reference(const void* d, DType dtype, const double* ref, int64_t l, int64_t m,
                          int64_t n, int64_t ldd, int64_t bsd, CompareStats* stats_device,
                          cudaStream_t stream);

}  // namespace fact::realize
