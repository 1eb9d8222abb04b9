/* A host-memory stand-in for generated attention kernels (tests/python): the ABI of
 * src/families/attention/abi.h with float32 Q/K/V/O and head_dim 8, the ABI's formula
 * evaluated naively in double (fa_causal with the args' sliding window, fa_additive with the
 * args' mask prologue). Like a real kernel, can_implement wants 16-byte aligned
 * pointers and strides that are multiples of 4 elements, and a mask tensor exactly when the
 * kernel's mask kind reads one; run wants a 64-byte workspace (else the unlisted code 7).
 * fa_last holds the arguments of the latest successful run as the C side read them.
 * Symbols: fa_none, fa_causal, fa_additive (float mask), fa_keep and fa_drop (one byte per
 * element), and fa_fail (accepts everything, run returns FACT_ATTN_ERR_RANGE). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "attention/abi.h"

#define OFF(f) offsetof(FactAttentionArgs, f)
static const size_t offsets[] = {
  OFF(batch), OFF(heads), OFF(kv_heads), OFF(seq_q), OFF(seq_k), OFF(head_dim),
  OFF(q), OFF(q_batch_stride), OFF(q_head_stride), OFF(q_row_stride),
  OFF(k), OFF(k_batch_stride), OFF(k_head_stride), OFF(k_row_stride),
  OFF(v), OFF(v_batch_stride), OFF(v_head_stride), OFF(v_row_stride),
  OFF(o), OFF(o_batch_stride), OFF(o_head_stride), OFF(o_row_stride),
  OFF(mask), OFF(mask_batch_stride), OFF(mask_head_stride), OFF(mask_row_stride),
  OFF(scale), OFF(flags), OFF(window), OFF(mask_rsub), OFF(mask_scale), OFF(mask_affine)};
size_t fa_sizeof_args(void) { return sizeof(FactAttentionArgs); }
size_t fa_field_count(void) { return sizeof offsets / sizeof offsets[0]; }
size_t fa_field_offset(size_t i) { return offsets[i]; }

FactAttentionArgs fa_last;
int fa_runs = 0;
long long fa_last_workspace_bytes = -1;

enum { M_NONE, M_CAUSAL, M_ADDITIVE, M_KEEP, M_DROP };

static int check(const FactAttentionArgs* a, int kind) {
  if (a->head_dim != 8 || a->kv_heads <= 0 || a->heads % a->kv_heads || a->batch <= 0 ||
      a->seq_q <= 0 || a->seq_k <= 0) return FACT_ATTN_ERR_SHAPE;
  if ((kind >= M_ADDITIVE) != (a->mask != 0)) return FACT_ATTN_ERR_MASK;
  if (a->window < 0 || (a->window > 0 && kind != M_CAUSAL)) return FACT_ATTN_ERR_MASK;
  if (a->mask_affine != 0 && (a->mask_affine != 1 || kind != M_ADDITIVE)) return FACT_ATTN_ERR_MASK;
  const void* p[] = {a->q, a->k, a->v, a->o};
  for (int i = 0; i < 4; ++i) if ((uintptr_t)p[i] % 16) return FACT_ATTN_ERR_STRIDE;
  const int64_t s[] = {a->q_batch_stride, a->q_head_stride, a->q_row_stride,
                       a->k_batch_stride, a->k_head_stride, a->k_row_stride,
                       a->v_batch_stride, a->v_head_stride, a->v_row_stride,
                       a->o_batch_stride, a->o_head_stride, a->o_row_stride};
  for (int i = 0; i < 12; ++i) if (s[i] % 4) return FACT_ATTN_ERR_STRIDE;
  return a->seq_k > 1024 ? FACT_ATTN_ERR_RANGE : 0;
}

static int run(const FactAttentionArgs* a, void* ws, size_t ws_bytes, int kind) {
  int rc = check(a, kind);
  if (rc) return rc;
  if (ws == 0 || ws_bytes < 64) return 7;
  fa_last = *a; fa_last_workspace_bytes = (long long)ws_bytes; ++fa_runs;
  const float *Q = a->q, *K = a->k, *V = a->v; float* O = a->o;
  const unsigned char* M8 = a->mask; const float* MF = a->mask;
  const long group = a->heads / a->kv_heads;
  double p[1024];
  for (long b = 0; b < a->batch; ++b)
    for (long h = 0; h < a->heads; ++h)
      for (long i = 0; i < a->seq_q; ++i) {
        const long g = h / group;
        const float* q = Q + b * a->q_batch_stride + h * a->q_head_stride + i * a->q_row_stride;
        double mx = -INFINITY, sum = 0;
        for (long j = 0; j < a->seq_k; ++j) {
          const float* k = K + b * a->k_batch_stride + g * a->k_head_stride + j * a->k_row_stride;
          double s = 0;
          for (long d = 0; d < a->head_dim; ++d) s += (double)q[d] * (double)k[d];
          s *= a->scale;
          const long m = b * a->mask_batch_stride + h * a->mask_head_stride +
                         i * a->mask_row_stride + j;
          if (kind == M_CAUSAL && (j > i || (a->window > 0 && j <= i - a->window))) s = -INFINITY;
          if (kind == M_ADDITIVE)  /* the prologue in fp32, as ATen's rsub and mul */
            s += a->mask_affine ? (float)((float)(a->mask_rsub - MF[m]) * a->mask_scale) : MF[m];
          if (kind == M_KEEP && !M8[m]) s = -INFINITY;
          if (kind == M_DROP && M8[m]) s = -INFINITY;
          p[j] = s;
          if (s > mx) mx = s;
        }
        for (long j = 0; j < a->seq_k; ++j) { p[j] = mx == -INFINITY ? NAN : exp(p[j] - mx); sum += p[j]; }
        float* o = O + b * a->o_batch_stride + h * a->o_head_stride + i * a->o_row_stride;
        for (long d = 0; d < a->head_dim; ++d) {
          double acc = 0;
          for (long j = 0; j < a->seq_k; ++j)
            acc += p[j] * V[b * a->v_batch_stride + g * a->v_head_stride + j * a->v_row_stride + d];
          o[d] = mx == -INFINITY && (a->flags & FACT_ATTN_FLAG_EMPTY_ROW_ZERO) ? 0.f : (float)(acc / sum);
        }
      }
  return 0;
}
#define ATTN(sym, kind, label)                                                               \
  int sym##_can_implement(const FactAttentionArgs* a) { return check(a, kind); }             \
  size_t sym##_workspace_bytes(const FactAttentionArgs* a) { return 64; }                    \
  int sym##_run(const FactAttentionArgs* a, void* ws, size_t n, void* s) {                   \
    return run(a, ws, n, kind); }                                                            \
  const char* sym##_name(void) { return label; }
ATTN(fa_none, M_NONE, "fake_host_attn_f32_d8_none")
ATTN(fa_causal, M_CAUSAL, "fake_host_attn_f32_d8_causal")
ATTN(fa_additive, M_ADDITIVE, "fake_host_attn_f32_d8_additive")
ATTN(fa_keep, M_KEEP, "fake_host_attn_f32_d8_keep")
ATTN(fa_drop, M_DROP, "fake_host_attn_f32_d8_drop")
int fa_fail_can_implement(const FactAttentionArgs* a) { return 0; }
size_t fa_fail_workspace_bytes(const FactAttentionArgs* a) { return 0; }
int fa_fail_run(const FactAttentionArgs* a, void* ws, size_t n, void* s) { return FACT_ATTN_ERR_RANGE; }
const char* fa_fail_name(void) { return "fake_host_attn_fails"; }
