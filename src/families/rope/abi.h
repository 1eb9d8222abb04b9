/* FACT rope kernel C ABI (docs/05-composition.md, "Rope kernels").
 *
 * Every generated rope kernel exports <symbol>_can_implement, _workspace_bytes, _run and
 * _name, with the signatures of the other families' kernels but taking FactRopeArgs.
 * Pointers are device pointers; strides are in elements. x, cos, sin and out are seen as
 * [n0, n1, n2, head_dim] (a lower-rank tensor padded with leading dims of size 1); each
 * has its own strides for the three leading dims (0 where cos or sin broadcasts) and a
 * contiguous last dim. With H = head_dim / 2, for every (i0, i1, i2) and j < head_dim:
 *
 *   half-split (form 0, rotate_half = cat(-x[H:], x[:H]), LLaMA / Hugging Face):
 *     out[j] = x[j] cos[j] - x[j + H] sin[j]      j <  H
 *     out[j] = x[j] cos[j] + x[j - H] sin[j]      j >= H
 *   interleaved pairs (form 1, stack(-x[1::2], x[::2], -1).flatten(-2), GPT-J):
 *     out[j] = x[j] cos[j] - x[j + 1] sin[j]      j even
 *     out[j] = x[j] cos[j] + x[j - 1] sin[j]      j odd
 *
 * computed in fp32 and rounded once to the element type; out must not overlap x, cos or sin
 * (they are read through the read-only cache). The kernel fixes the form,
 * head_dim and the element type of all four tensors (its name says which); out is written
 * with its own strides, so the kernel writes the layout the graph recorded for it.
 * Return codes: 0 ok; 10000 + cudaError_t for CUDA errors; FACT_ROPE_ERR_* below.
 * This header is pasted verbatim into each generated translation unit, so it has no
 * includes beyond <stdint.h>/<stddef.h>. */
#ifndef FACT_ROPE_ABI_H
#define FACT_ROPE_ABI_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct FactRopeArgs {
  int64_t n0, n1, n2, head_dim;
  const void* x; int64_t x_stride0, x_stride1, x_stride2;
  const void* cos; int64_t cos_stride0, cos_stride1, cos_stride2;
  const void* sin; int64_t sin_stride0, sin_stride1, sin_stride2;
  void* out; int64_t out_stride0, out_stride1, out_stride2;
  int32_t flags; /* 0 (reserved) */
} FactRopeArgs;

enum {
  FACT_ROPE_OK = 0,
  FACT_ROPE_ERR_SHAPE = 1,    /* head_dim differs from the kernel's, or a leading dim <= 0 */
  FACT_ROPE_ERR_STRIDE = 2,   /* a stride or pointer breaks the kernel's vector loads */
  FACT_ROPE_ERR_OPERAND = 3,  /* x, cos, sin or out is null */
  FACT_ROPE_ERR_RANGE = 4,    /* n0 * n1 * n2 rows exceed what the grid indexes (2^31 - 1 threads' rows) */
  FACT_ROPE_ERR_CUDA_BASE = 10000
};

typedef int (*fact_rope_can_implement_fn)(const FactRopeArgs*);
typedef size_t (*fact_rope_workspace_bytes_fn)(const FactRopeArgs*);
typedef int (*fact_rope_run_fn)(const FactRopeArgs*, void* workspace, size_t workspace_bytes, void* cuda_stream);

#ifdef __cplusplus
}
#endif
#endif /* FACT_ROPE_ABI_H */
