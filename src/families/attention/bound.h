// The error a correct fused-attention kernel may make on one output element
// (docs/06-verification.md, "Attention"), evaluated by the float64 reference on the device
// and by tests on the host (FACT_HD): one definition.
//
// With s_j the exact scores of a row, p = softmax(s), O_d = sum_j p_j v_jd:
//  * scores: each kernel score is off by at most delta = |scale| A (u_qk + (2 D + 8) 2^-24)
//    + 4 2^-24 (M + 1), A = max_j sum_d |q_d k_jd| and M = max_j |additive mask| over the keys
//    that take part, less those whose score s_j is far below the max m (m - s_j >= 2^20 and
//    >= 2^-10 |m|: a torch.finfo.min padding key in a row with kept ones): their weight is 0
//    in float64 and, their kernel score being off by at most ~2^-12 (m - s_j), in the
//    kernel too (Q and K rounded to the MMA type, fp32 accumulation over D — truncating,
//    by up to three MMAs per k-step for 3xtf32 —, the kernel's
//    fp32 scale, mask and max subtraction, ex2.approx). Every weight then moves by a factor
//    within e^(+-2 delta) and, since both weight sets sum to 1, O_d moves by at most
//    (e^(2 delta) - 1) sum_j p_j |v_jd - c| for any c: c = v at the largest score (tight
//    for a peaky softmax), and never beyond the range of the v_jd averaged;
//  * P V: P and V rounded to the MMA type, fp32 accumulation over the keys and the online
//    softmax's rescales: (u_p + u_v + (2 Tk + 2 ceil(Tk / 32) + 8) 2^-24) sum_j p_j |v_jd|;
//  * fp16 P: values below 2^-14 are subnormal, off by up to 2^-25 each (relative to the row's
//    largest weight 1): keys x 2^-25 max_j |v_jd| / l, l = sum_j exp(s_j - max);
//  * the store: u_out |O_d| + out_abs.
// The sum times `margin`.
#pragma once
#include <cmath>
#include <cstdint>

#include "engine/host_device.h"

namespace fact::realize {

/// What a correct kernel may lose, by source (attention_error_terms derives them from the
/// family).
struct AttentionErrorTerms {
  double u_qk;     // relative rounding of Q and K to the MMA type, summed (0 for 16-bit inputs)
  double u_v;      // relative rounding of V to the MMA type (0 for 16-bit inputs)
  double u_p;      // relative rounding of P to the MMA type
  double u_out;    // relative rounding of O to its dtype
  double out_abs;  // absolute rounding of O near zero (fp16 subnormals: 2^-25; else 0)
  int32_t p_subnormal;  // 1: P is stored as fp16
  double margin;   // multiplies the sum
};

/// What the float64 reference knows about one output element (b, h, i, d) of a row whose
/// keys are not all removed.
struct AttentionElementFacts {
  double abs_scale;     // |scale|
  double head_dim, seq_k;
  double max_qk_abs;    // A: max_j sum_d |q_d k_jd| over the keys that take part
  double max_mask_abs;  // M: max_j |additive mask| over them, less those far below the max (0 without one)
  double keys;          // keys that take part
  double l;             // sum_j exp(s_j - max_j s_j)
  double w0;            // sum_j p_j |v_jd|
  double w1;            // sum_j p_j |v_jd - v_j*d|, j* the largest score's key
  double v_range;       // max_j v_jd - min_j v_jd
  double v_abs;         // max_j |v_jd|
  double o;             // the reference O_d
};

constexpr double kAttnU24 = 5.9604644775390625e-08;  // 2^-24, fp32's unit roundoff

/// delta: the most a kernel score may be off by (natural-log units).
FACT_HD inline double attention_score_error(const AttentionErrorTerms& e, const AttentionElementFacts& f) {
  return f.abs_scale * f.max_qk_abs * (e.u_qk + (2.0 * f.head_dim + 8.0) * kAttnU24) +
         4.0 * kAttnU24 * (f.max_mask_abs + 1.0);
}

/// The bound on |O_kernel - O_d| (see the header comment).
FACT_HD inline double attention_element_bound(const AttentionErrorTerms& e, const AttentionElementFacts& f) {
  const double delta = attention_score_error(e, f);
  const double scores = f.w1 > 0 ? fmin(expm1(2.0 * delta) * f.w1, f.v_range) : 0.0;
  const double pv = (e.u_p + e.u_v + (2.0 * f.seq_k + 2.0 * ceil(f.seq_k / 32.0) + 8.0) * kAttnU24) * f.w0;
  const double sub = e.p_subnormal ? f.keys * 2.98023223876953125e-08 * f.v_abs / f.l : 0.0;  // 2^-25 per key
  const double store = e.u_out * fabs(f.o) + e.out_abs;
  return e.margin * (scores + pv + sub + store);
}

}  // namespace fact::realize
