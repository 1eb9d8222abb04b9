// Device kernels for fused elementwise tails (docs/06-verification.md, "Fused tails"): the
// float64 reference applied to the reference GEMM, the comparison of a fused kernel's
// output against it with a per-element bound, and the interpreting fp32 tail pass that
// follows a vendor GEMM when the pattern's tail kernel (tail_codegen.h) did not build and
// that times a tail pass in every fused problem. All launch on `stream` and check the launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "families/gemm/epilogue/program.h"
#include "families/gemm/problem.h"
#include "engine/gpu_kernels.h"

namespace fact::realize {

/// Where a tail's external inputs c0..c3 live on the device. Element (b, i, j) of the
/// L x M x N output reads input s at: kind n: ptr[j]; kind m: ptr[i]; kind mn:
/// ptr[b * bs + i * ld + j]. The element type (double for the reference, D's dtype for a
/// tail pass) is fixed by the call.
enum class TailInputKind : int32_t { none = 0, n = 1, m = 2, mn = 3 };
struct TailInputs {
  const void* ptr[4] = {};
  TailInputKind kind[4] = {};
  int64_t ld[4] = {}, bs[4] = {};
};

/// What one draw's float64 reference of a tail shows: which sides of each branching op it
/// took (eval_epilogue's bits), whether it varies, and its magnitude.
struct TailReferenceStats {
  uint32_t sides[2 * EpilogueProgram::kMaxInstr / 32];
  /// Elements that differ from each of three probes (the first, middle and last element's
  /// value): the least of them says how far the reference is from constant, even when a
  /// probe is itself the odd one out.
  unsigned long long differs_from_probe[3];
  double first_value, max_abs_ref;
  double max_abs_acc;  // max |acc64|: the scale of the GEMM's allowed error
};

/// Stats of tail(acc64) over the logical L x M x N elements (row-major, leading stride ldd,
/// batch stride bsd); inputs are float64. Writes `stats_device` (zeroed here).
void tail_reference_stats(const double* acc64, const EpilogueProgram& prog, const TailInputs& inputs64,
                          int64_t l, int64_t m, int64_t n, int64_t ldd, int64_t bsd,
                          TailReferenceStats* stats_device, cudaStream_t stream);

/// Compares `d` (dtype) with tail(acc64): CompareStats against the tail's float64 output,
/// and `over_bound` counts elements whose error exceeds epilogue_error_bound(acc, delta,
/// out_unit), with delta the GEMM's allowed absolute error and out_unit D's unit roundoff.
/// Where the reference is not finite, d must be the same non-finite value (NaN for NaN)
/// or the element counts as over its bound; where the reference lies beyond D's dtype's
/// range (fp16 overflow), the element is not compared. Writes `stats_device` (zeroed here).
void compare_to_tail_reference(const void* d, DType dtype, const double* acc64, const EpilogueProgram& prog,
                               const TailInputs& inputs64, double delta, double out_unit, int64_t l, int64_t m, int64_t n,
                               int64_t ldd, int64_t bsd, CompareStats* stats_device, cudaStream_t stream);

/// In place d = tail(d), computed in fp32 with inputs of dtype `in_dtype` (d's, or fp32
/// when D is narrowed): the elementwise pass a vendor GEMM needs to produce what a fused
/// kernel produces.
void apply_tail(void* d, DType dtype, DType in_dtype, const EpilogueProgram& prog, const TailInputs& inputs, int64_t l,
                int64_t m, int64_t n, int64_t ldd, int64_t bsd, cudaStream_t stream);

}  // namespace fact::realize
