/* A host-memory stand-in for generated rope kernels (tests/python): the ABI of
 * src/families/rope/abi.h with float32 x/cos/sin/out, the ABI's formula evaluated in double
 * and written with out's own strides. Like a real kernel, can_implement wants 16-byte
 * aligned pointers and leading strides that are multiples of 4 elements (for dims of size
 * > 1). fr_last holds the arguments of the latest successful run.
 * Symbols: fr_half (rotate_half), fr_pairs (interleaved pairs). */
#include <stddef.h>
#include <stdint.h>
#include "rope/abi.h"

#define OFF(f) offsetof(FactRopeArgs, f)
static const size_t offsets[] = {OFF(n0), OFF(n1), OFF(n2), OFF(head_dim), OFF(x), OFF(x_stride0),
                                 OFF(x_stride1), OFF(x_stride2), OFF(cos), OFF(cos_stride0),
                                 OFF(cos_stride1), OFF(cos_stride2), OFF(sin), OFF(sin_stride0),
                                 OFF(sin_stride1), OFF(sin_stride2), OFF(out), OFF(out_stride0),
                                 OFF(out_stride1), OFF(out_stride2), OFF(flags)};
size_t fr_sizeof_args(void) { return sizeof(FactRopeArgs); }
size_t fr_field_count(void) { return sizeof offsets / sizeof offsets[0]; }
size_t fr_field_offset(size_t i) { return offsets[i]; }

FactRopeArgs fr_last;
int fr_runs = 0;

static int steps(int64_t n, int64_t s) { return n <= 1 || s % 4 == 0; }

static int check(const FactRopeArgs* a) {
  if (a->n0 <= 0 || a->n1 <= 0 || a->n2 <= 0 || a->head_dim <= 0 || a->head_dim % 8) return FACT_ROPE_ERR_SHAPE;
  if (!a->x || !a->cos || !a->sin || !a->out) return FACT_ROPE_ERR_OPERAND;
  const void* p[] = {a->x, a->cos, a->sin, a->out};
  for (int i = 0; i < 4; ++i) if ((uintptr_t)p[i] % 16) return FACT_ROPE_ERR_STRIDE;
  const int64_t s[4][3] = {{a->x_stride0, a->x_stride1, a->x_stride2},
                           {a->cos_stride0, a->cos_stride1, a->cos_stride2},
                           {a->sin_stride0, a->sin_stride1, a->sin_stride2},
                           {a->out_stride0, a->out_stride1, a->out_stride2}};
  for (int i = 0; i < 4; ++i)
    if (!steps(a->n0, s[i][0]) || !steps(a->n1, s[i][1]) || !steps(a->n2, s[i][2])) return FACT_ROPE_ERR_STRIDE;
  return 0;
}

static int run(const FactRopeArgs* a, int pairs) {
  int rc = check(a);
  if (rc) return rc;
  fr_last = *a; ++fr_runs;
  const int64_t d = a->head_dim, h = d / 2;
  for (int64_t i0 = 0; i0 < a->n0; ++i0)
    for (int64_t i1 = 0; i1 < a->n1; ++i1)
      for (int64_t i2 = 0; i2 < a->n2; ++i2) {
        const float* x = (const float*)a->x + i0 * a->x_stride0 + i1 * a->x_stride1 + i2 * a->x_stride2;
        const float* c = (const float*)a->cos + i0 * a->cos_stride0 + i1 * a->cos_stride1 + i2 * a->cos_stride2;
        const float* s = (const float*)a->sin + i0 * a->sin_stride0 + i1 * a->sin_stride1 + i2 * a->sin_stride2;
        float* o = (float*)a->out + i0 * a->out_stride0 + i1 * a->out_stride1 + i2 * a->out_stride2;
        for (int64_t j = 0; j < d; ++j) {
          double r;
          if (pairs) r = j % 2 == 0 ? -(double)x[j + 1] : (double)x[j - 1];
          else r = j < h ? -(double)x[j + h] : (double)x[j - h];
          o[j] = (float)((double)x[j] * c[j] + r * s[j]);
        }
      }
  return 0;
}

#define KERNEL(name, pairs)                                                                     \
  int name##_can_implement(const FactRopeArgs* a) { return check(a); }                          \
  size_t name##_workspace_bytes(const FactRopeArgs* a) { (void)a; return 0; }                   \
  int name##_run(const FactRopeArgs* a, void* ws, size_t n, void* s) {                          \
    (void)ws; (void)n; (void)s; return run(a, pairs); }                                         \
  const char* name##_name(void) { return #name; }

KERNEL(fr_half, 0)
KERNEL(fr_pairs, 1)
