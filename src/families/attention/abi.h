/* FACT fused-attention kernel C ABI (docs/05-composition.md, "Attention kernels").
 *
 * Every generated attention kernel exports <symbol>_can_implement, _workspace_bytes, _run
 * and _name, with the same signatures as the GEMM kernels of kernel_abi.h but taking
 * FactAttentionArgs. Pointers are device pointers; strides are in elements.
 *
 *   O[b, h, i, :] = softmax_j( scale * Q[b, h, i, :] . K[b, g(h), j, :] + mask(b, h, i, j) )
 *                   @ V[b, g(h), :, :]
 *
 * with i < seq_q, j < seq_k, d < head_dim, g(h) = h / (heads / kv_heads) (grouped-query
 * attention reads the shared K/V heads; kv_heads == heads is plain multi-head attention).
 * The last dimension of Q, K, V and O is contiguous (stride 1); every other stride is
 * given. The kernel fixes the element type of Q/K/V/O (float32 with tf32 or bf16 tensor-
 * core math, or bfloat16/float16), the head dim, the mask kind and the tile (its name says
 * which). Mask kinds:
 *   causal   : key j takes part iff j <= i (top-left aligned, torch.tril(ones(Tq, Tk))) and,
 *              with window W > 0, j > i - W (a sliding window: key blocks wholly left of
 *              every row's window are skipped); window must be 0 for the other kinds;
 *   additive : mask(b,h,i,j) = M[b*mask_batch_stride + h*mask_head_stride +
 *              i*mask_row_stride + j], same dtype as Q (a stride may be 0: broadcast);
 *              with mask_affine = 1, (mask_rsub - M[...]) * mask_scale instead, each op in
 *              fp32 and rounded to Q's dtype, as ATen's rsub and mul compute
 *              (1.0 - mask) * torch.finfo(dtype).min; mask_affine must be 0 otherwise;
 *   keep     : boolean (uint8) mask, true = takes part (SDPA's bool attn_mask);
 *   drop     : boolean (uint8) mask, true = removed (masked_fill(mask, -inf)).
 * A row whose keys are all removed gives NaN, as eager softmax over all -inf does, or 0
 * with FACT_ATTN_FLAG_EMPTY_ROW_ZERO (F.scaled_dot_product_attention's convention).
 * Return codes: 0 ok; 10000 + cudaError_t for CUDA errors; FACT_ATTN_ERR_* below.
 * This header is pasted verbatim into each generated translation unit, so it has no
 * includes beyond <stdint.h>/<stddef.h>. */
#ifndef FACT_ATTENTION_ABI_H
#define FACT_ATTENTION_ABI_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

typedef struct FactAttentionArgs {
  int64_t batch, heads, kv_heads;  /* B, Hq, Hkv (Hq % Hkv == 0) */
  int64_t seq_q, seq_k, head_dim;  /* Tq, Tk, D (the head dim of Q, K and V) */
  const void* q; int64_t q_batch_stride, q_head_stride, q_row_stride;
  const void* k; int64_t k_batch_stride, k_head_stride, k_row_stride;
  const void* v; int64_t v_batch_stride, v_head_stride, v_row_stride;
  void* o; int64_t o_batch_stride, o_head_stride, o_row_stride;
  const void* mask; int64_t mask_batch_stride, mask_head_stride, mask_row_stride;
  float scale;       /* multiplies q.k before the mask and the softmax */
  int32_t flags;     /* FACT_ATTN_FLAG_* */
  int64_t window;    /* causal only: > 0 keeps keys i - window < j <= i; 0 none */
  /* Appended after the fields above, whose offsets do not change: */
  float mask_rsub, mask_scale;  /* additive, mask_affine = 1: the mask prologue's r and c */
  int32_t mask_affine;          /* 1: mask(b,h,i,j) = (mask_rsub - M[...]) * mask_scale; 0: M[...] */
} FactAttentionArgs;

enum {
  FACT_ATTN_OK = 0,
  FACT_ATTN_ERR_SHAPE = 1,      /* head_dim differs from the kernel's, Hq % Hkv != 0, or a size <= 0 */
  FACT_ATTN_ERR_STRIDE = 2,     /* a stride or pointer breaks the kernel's 16-byte vector loads */
  FACT_ATTN_ERR_MASK = 3,       /* mask given to a kernel without one, or missing; a window < 0, or without causal;
                                   mask_affine other than 0 or 1, or 1 without an additive mask */
  FACT_ATTN_ERR_RANGE = 4,      /* an index would overflow 32 bits where the kernel uses them */
  FACT_ATTN_ERR_WORKSPACE = 5,  /* workspace null, unaligned (16 bytes) or smaller than _workspace_bytes says */
  FACT_ATTN_ERR_CUDA_BASE = 10000
};

enum {
  FACT_ATTN_FLAG_EMPTY_ROW_ZERO = 1  /* a row with every key removed gives 0, not NaN */
};

typedef int (*fact_attn_can_implement_fn)(const FactAttentionArgs*);
typedef size_t (*fact_attn_workspace_bytes_fn)(const FactAttentionArgs*);
typedef int (*fact_attn_run_fn)(const FactAttentionArgs*, void* workspace, size_t workspace_bytes,
                                void* cuda_stream);

#ifdef __cplusplus
}
#endif
#endif /* FACT_ATTENTION_ABI_H */
