/* FACT norm kernel C ABI (docs/05-composition.md, "Norm kernels").
 *
 * Every generated norm kernel exports <symbol>_can_implement, _workspace_bytes, _run and
 * _name, with the signatures of the other families' kernels but taking FactNormArgs.
 * Pointers are device pointers; strides are in elements. For each row r < rows:
 *
 *   s[r, :] = x[r, :] + residual[r, :]   (rounded to x's dtype, as eager's add; without a
 *                                          residual s = x)
 *   LayerNorm: mu = mean_j s[r, j],  var = mean_j (s[r, j] - mu)^2
 *   RMSNorm:   mu = 0,               var = mean_j s[r, j]^2
 *   out[r, j] = (s[r, j] - mu) / sqrt(var + eps) * weight[j] + bias[j]
 *   sum[r, j] = s[r, j]                   (only when sum is not null)
 *
 * Statistics are fp32 under every policy (two passes over the register-resident row). The
 * kernel fixes the norm, cols, the element types of x/residual/sum, out and weight/bias,
 * and which of residual, weight and bias it reads (its name says which); the last
 * dimension of every tensor is contiguous, weight and bias are contiguous [cols] vectors.
 * Return codes: 0 ok; 10000 + cudaError_t for CUDA errors; FACT_NORM_ERR_* below.
 * This header is pasted verbatim into each generated translation unit, so it has no
 * includes beyond <stdint.h>/<stddef.h>. */
#ifndef FACT_NORM_ABI_H
#define FACT_NORM_ABI_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct FactNormArgs {
  int64_t rows, cols;
  const void* x; int64_t x_row_stride;
  const void* residual; int64_t residual_row_stride;  /* null without a residual */
  const void* weight;                                 /* [cols], null without */
  const void* bias;                                   /* [cols], null without */
  void* out; int64_t out_row_stride;
  void* sum; int64_t sum_row_stride;                  /* null: the sum is not written */
  float eps;
  int32_t flags;                                      /* 0 (reserved) */
} FactNormArgs;

enum {
  FACT_NORM_OK = 0,
  FACT_NORM_ERR_SHAPE = 1,    /* cols differs from the kernel's, or rows <= 0 */
  FACT_NORM_ERR_STRIDE = 2,   /* a stride or pointer breaks the kernel's vector loads */
  FACT_NORM_ERR_OPERAND = 3,  /* residual, weight or bias given to a kernel without it, or missing */
  FACT_NORM_ERR_RANGE = 4,    /* rows exceed the grid the kernel launches */
  FACT_NORM_ERR_CUDA_BASE = 10000
};

typedef int (*fact_norm_can_implement_fn)(const FactNormArgs*);
typedef size_t (*fact_norm_workspace_bytes_fn)(const FactNormArgs*);
typedef int (*fact_norm_run_fn)(const FactNormArgs*, void* workspace, size_t workspace_bytes, void* cuda_stream);

#ifdef __cplusplus
}
#endif
#endif /* FACT_NORM_ABI_H */
