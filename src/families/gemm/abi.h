/* FACT kernel C ABI (docs/05-composition.md).
 *
 * Every generated kernel exports <symbol>_can_implement, _workspace_bytes, _run and _name.
 * Pointers are device pointers; strides are in elements. The kernel fixes dtypes and
 * layouts (its name says which):
 *   A is M x K: row-major (lda = stride of M, K contiguous) or column-major (lda = stride of K).
 *   B is K x N: row-major (ldb = stride of K, N contiguous) or column-major (ldb = stride of N).
 *   D is M x N, row-major, ldd = stride of M.
 *   D = alpha * (A * B) + beta * bias, bias a vector of length N ("n") broadcast along M.
 * A kernel whose name has a staging token (-stA, -stB, -stAB) first copies those operands
 * into its workspace, K-major (split into tf32 parts for 3xTF32, rounded to bf16 for a bf16
 * MMA on fp32 operands, whose D stays fp32), then runs the GEMM;
 * the caller sees the same arguments either way.
 * A tail kernel (name fact_tail_*: the elementwise tail of a GEMM the vendor library
 * computed) takes the same structure: D = tail(C) with C in a (lda, batch_stride_a, D's
 * dtype), D in d, the tail's inputs in epi; it reads nothing else.
 * Return codes: 0 ok; 100 + cutlass::Status for CUTLASS errors; 10000 + cudaError_t for CUDA
 * errors; FACT_ERR_* below for argument errors. This header is pasted verbatim into each
 * generated translation unit, so it has no includes beyond <stdint.h>/<stddef.h>. */
#ifndef FACT_KERNEL_ABI_H
#define FACT_KERNEL_ABI_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct FactGemmArgs {
  int64_t m, n, k, l;          /* problem size; l = batch count (>= 1) */
  const void* a; int64_t lda, batch_stride_a;
  const void* b; int64_t ldb, batch_stride_b;
  const void* bias;            /* NULL, or N elements of the output dtype */
  void* d; int64_t ldd, batch_stride_d;
  float alpha, beta;
  /* Tile scheduler options, chosen by tuning without recompiling (0 = CUTLASS's default):
   * splits > 1 runs a stream-K kernel as split-K with that many K splits (ignored by
   * persistent kernels); raster 0 heuristic, 1 along M, 2 along N; swizzle = the largest
   * swizzle size (1, 2, 4 or 8). */
  int32_t splits, raster, swizzle, reserved;
  /* External inputs c0..c3 of a fused elementwise tail (kernels whose name has an "evt"
   * token; NULL otherwise), of D's dtype. The kernel's tail fixes each input's kind: a
   * contiguous vector along N (N elements) or along M (M elements), shared by all batches;
   * or a tensor of D's logical shape with leading stride epi_ld[i] (between rows of M)
   * and batch stride epi_batch_stride[i], N contiguous. Unused entries are ignored. */
  const void* epi[4];
  int64_t epi_ld[4], epi_batch_stride[4];
} FactGemmArgs;

enum {
  FACT_OK = 0,
  FACT_ERR_BIAS_MISMATCH = 1,   /* bias given to a kernel without bias, or missing */
  FACT_ERR_BETA = 2,            /* this kernel adds the bias with beta == 1 only */
  FACT_ERR_WORKSPACE = 3,       /* workspace smaller than _workspace_bytes */
  FACT_ERR_SCHEDULER = 4,       /* splits/raster/swizzle out of range */
  FACT_ERR_EPILOGUE_INPUT = 5,  /* an input the fused tail reads is NULL */
  FACT_ERR_PROBLEM = 6,         /* a tail kernel's C or D is NULL, or M, N, L out of range */
  FACT_ERR_STATUS_BASE = 100,
  FACT_ERR_CUDA_BASE = 10000
};

typedef int (*fact_can_implement_fn)(const FactGemmArgs*);
typedef size_t (*fact_workspace_bytes_fn)(const FactGemmArgs*);
typedef int (*fact_run_fn)(const FactGemmArgs*, void* workspace, size_t workspace_bytes,
                           void* cuda_stream);
typedef const char* (*fact_name_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* FACT_KERNEL_ABI_H */
