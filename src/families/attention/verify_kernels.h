// Device kernels for verifying fused attention (docs/06-verification.md, "Attention"): mask
// draws, the float64 reference with a per-element error bound, the comparison on sampled
// heads, the full-tensor check that every element of O was written (and nothing else), and
// the gather of strided heads into the contiguous copies the vendor bound multiplies. All
// launch on `stream` and check the launch; none synchronizes.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "families/attention/bound.h"
#include "families/attention/problem.h"
#include "engine/gpu_kernels.h"

namespace fact::realize {

/// A problem's sizes and strides as the device kernels take them (by value).
struct AttentionDims {
  int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
  int64_t q[3], k[3], v[3], o[3], m[3];  // (batch, head, row) strides in elements
  double scale;
  int32_t mask;            // MaskKind
  int64_t window;          // causal: > 0 keeps i - window < j <= i (attention_causal_keeps); 0 none
  int32_t empty_row_zero;  // 1: a row whose keys are all removed is 0 (form "sdpa"), else NaN
  int32_t mask_affine;     // 1: an additive mask's term is (mask_rsub - M) * mask_scale (problem.h)
  float mask_rsub, mask_scale;  // the prologue's numbers in fp32, as the kernels get them
};
AttentionDims attention_dims(const AttentionProblem& p);

/// Draws a mask tensor (additive: N(0, 1) in Q's dtype; keep/drop: uint8 0/1) over its whole
/// extent, removing each key with probability 1/4 (additive -inf; keep 0; drop 1). An additive
/// mask with a prologue (d.mask_affine: the term is (r - M) * c) is drawn so that its terms
/// are alike: removed keys M = -inf (c < 0) or +inf (c > 0), whose term is -inf; of the others
/// half M = r (term 0), a quarter M = r - x / c for x ~ N(0, 1) (term about x) and a quarter
/// M = r - 1 (term c: the padding value, torch.finfo.min in Hugging Face's spelling). With
/// `dead_rows`, one row per distinct (batch, head) of the mask (coordinates whose stride is
/// 0 collapse to 0), chosen by the seed, has every key removed: the kernel must give NaN
/// there. Callers pass dead_rows only when the mask's row stride is nonzero and seq_q >= 2,
/// so that other rows stay alive.
void fill_attention_mask(void* mask, DType additive_dtype, const AttentionDims& d, uint64_t seed, bool dead_rows,
                         cudaStream_t stream);

/// Float64 attention for the (batch, head) pairs `pairs` (device, b * heads + h, n_pairs of
/// them), exactly as eager: scores scale * q.k (+ the additive mask, through its prologue
/// computed as ATen computes it: fp32 ops rounded to Q's dtype; -inf where a causal mask
/// removes the key, j > i or j <= i - window, or a bool mask does), softmax with max subtraction, times V; a row with every
/// key removed is NaN (0 with d.empty_row_zero). Writes ref[(p * seq_q + i) * head_dim + d]
/// and the element's error bound (docs/06-verification.md, "Attention"; 0 for such a row)
/// likewise. head_dim <= 128.
void attention_reference(const void* q, const void* k, const void* v, const void* mask, DType dtype,
                         const AttentionDims& d, const AttentionErrorTerms& terms, const int64_t* pairs, int n_pairs,
                         double* ref, double* bound, cudaStream_t stream);

/// The comparison of O with the reference on the sampled heads. Finite references go through
/// CompareStats (nonfinite: O NaN/Inf there; differs_from_first: elements that differ from
/// O's first element of their row, 0 for an output constant along every row; over_bound:
/// elements beyond their bound).
struct AttentionCompareStats : CompareStats {
  unsigned long long nan_expected;  // reference NaN: every key removed
  unsigned long long nan_mismatch;  // ... and O is not NaN there
  unsigned long long ref_varies;    // finite reference elements differing from their row's first
  double max_bound_ratio;           // max |o - ref| / bound over finite references
  double max_bound;                 // max bound
};
void compare_attention(const void* o, DType dtype, const AttentionDims& d, const int64_t* pairs, int n_pairs,
                       const double* ref, const double* bound, AttentionCompareStats* stats_device,
                       cudaStream_t stream);

/// Every element of O, and O's whole allocation: rows (b, h, i) whose keys are not all
/// removed must hold finite values, rows whose keys are all removed must be NaN (0 with
/// d.empty_row_zero), and no
/// element of the allocation outside O's logical elements (padding, guards) may have been
/// written (it stays NaN from the poison).
struct AttentionCoverageStats {
  unsigned long long rows, dead_rows;  // O rows, and those with every key removed
  unsigned long long unwritten;        // NaN where a value is expected
  unsigned long long infinite;         // +-Inf where a finite value is expected
  unsigned long long dead_not_nan;     // elements of dead rows that are not NaN (not 0 with empty_row_zero)
  unsigned long long written;          // O's logical elements that are not NaN
  unsigned long long buffer_not_nan;   // elements of the whole allocation that are not NaN
};
/// `buffer` is the whole allocation of `buffer_elems` elements; O starts `guard` elements in.
void check_attention_coverage(const void* buffer, int64_t buffer_elems, int64_t guard, const void* mask, DType dtype,
                              const AttentionDims& d, AttentionCoverageStats* stats_device, cudaStream_t stream);

/// Copies heads of a strided [batch, src_heads, rows, dim] tensor into a contiguous
/// [batch * heads, rows, dim] one of the same dtype: head h reads source head h / group.
void gather_heads(const void* src, DType dtype, const int64_t strides[3], int64_t batch, int64_t heads, int64_t group,
                  int64_t rows, int64_t dim, void* dst, cudaStream_t stream);

}  // namespace fact::realize
