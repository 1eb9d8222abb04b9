/* A host-memory stand-in for generated norm kernels (tests/python): the ABI of
 * src/families/norm/abi.h with float32 x/residual/out/sum and float32 weight/bias, the
 * ABI's formula evaluated in double. Like a real kernel, can_implement wants 16-byte
 * aligned pointers, row strides that are multiples of 4 elements, and exactly the
 * operands its symbol names. fn_last holds the arguments of the latest successful run.
 * Symbols: fn_ln_rwb (LayerNorm, residual, weight, bias), fn_ln_nwb (weight, bias),
 * fn_rms_rwn (RMSNorm, residual, weight), fn_rms_nwn (weight). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "norm/abi.h"

#define OFF(f) offsetof(FactNormArgs, f)
static const size_t offsets[] = {OFF(rows), OFF(cols), OFF(x), OFF(x_row_stride), OFF(residual),
                                 OFF(residual_row_stride), OFF(weight), OFF(bias), OFF(out),
                                 OFF(out_row_stride), OFF(sum), OFF(sum_row_stride), OFF(eps),
                                 OFF(flags)};
size_t fn_sizeof_args(void) { return sizeof(FactNormArgs); }
size_t fn_field_count(void) { return sizeof offsets / sizeof offsets[0]; }
size_t fn_field_offset(size_t i) { return offsets[i]; }

FactNormArgs fn_last;
int fn_runs = 0;

static int check(const FactNormArgs* a, int res, int w, int b) {
  if (a->rows <= 0 || a->cols <= 0) return FACT_NORM_ERR_SHAPE;
  if ((a->residual != 0) != res || (a->weight != 0) != w || (a->bias != 0) != b || (a->sum && !res))
    return FACT_NORM_ERR_OPERAND;
  const void* p[] = {a->x, a->out, res ? a->residual : a->x, a->sum ? a->sum : a->x};
  for (int i = 0; i < 4; ++i) if ((uintptr_t)p[i] % 16) return FACT_NORM_ERR_STRIDE;
  if (a->x_row_stride % 4 || a->out_row_stride % 4 || (res && a->residual_row_stride % 4) ||
      (a->sum && a->sum_row_stride % 4)) return FACT_NORM_ERR_STRIDE;
  return 0;
}

static int run(const FactNormArgs* a, int layer, int res, int w, int b) {
  int rc = check(a, res, w, b);
  if (rc) return rc;
  fn_last = *a; ++fn_runs;
  const float *X = a->x, *R = a->residual, *W = a->weight, *B = a->bias;
  float *O = a->out, *S = a->sum;
  for (int64_t r = 0; r < a->rows; ++r) {
    double mu = 0, var = 0;
    float s[4096];
    if (a->cols > 4096) return FACT_NORM_ERR_SHAPE;
    for (int64_t j = 0; j < a->cols; ++j) {
      s[j] = X[r * a->x_row_stride + j] + (res ? R[r * a->residual_row_stride + j] : 0.0f);
      if (S) S[r * a->sum_row_stride + j] = s[j];
      mu += s[j];
    }
    mu = layer ? mu / a->cols : 0.0;
    for (int64_t j = 0; j < a->cols; ++j) var += (s[j] - mu) * (s[j] - mu);
    const double rstd = 1.0 / sqrt(var / a->cols + a->eps);
    for (int64_t j = 0; j < a->cols; ++j)
      O[r * a->out_row_stride + j] = (float)((s[j] - mu) * rstd * (w ? W[j] : 1.0) + (b ? B[j] : 0.0));
  }
  return 0;
}

#define KERNEL(name, layer, res, w, b)                                                         \
  int name##_can_implement(const FactNormArgs* a) { return check(a, res, w, b); }               \
  size_t name##_workspace_bytes(const FactNormArgs* a) { (void)a; return 0; }                   \
  int name##_run(const FactNormArgs* a, void* ws, size_t n, void* s) {                          \
    (void)ws; (void)n; (void)s; return run(a, layer, res, w, b); }                              \
  const char* name##_name(void) { return #name; }

KERNEL(fn_ln_rwb, 1, 1, 1, 1)
KERNEL(fn_ln_nwb, 1, 0, 1, 1)
KERNEL(fn_rms_rwn, 0, 1, 1, 0)
KERNEL(fn_rms_nwn, 0, 0, 1, 0)
