// The rope family's host side of verification (docs/06-verification.md, "Rope"): the draws,
// the rows verified, the float64 reference of one row and each element's error bound. No
// GPU: tests/families/rope/ runs all of it on the CPU.
//
// The bound (one definition, used by verification and tested on the CPU). The kernel computes
// in fp32 (u = 2^-24) p = fl(r s), y = fma(x, c, p) for each element, with r the rotated
// partner (±x[j ± H] or ±x[j ± 1]), then rounds y once to the element type (u_out: fp32
// 2^-24, bf16 2^-8, fp16 2^-11; Higham, "Accuracy and Stability of Numerical Algorithms",
// 2nd ed., §2.2, with the fma rounding once):
//   y = (x c + r s (1 + d1)) (1 + d2),  |d1|, |d2| <= u
//   |y - ref| <= u |r s| + u (|x c| + |r s|) + u^2 |r s| <= gamma(2) (|x c| + |r s|)
//   |out - ref| <= gamma(2) (|x c| + |r s|) (1 + u_out) + u_out |ref| + out_abs
// with gamma(k) = k u / (1 - k u) and out_abs half the element type's smallest subnormal
// (fp16 2^-25, bf16 2^-134, fp32 2^-150) plus 2^-149 for the fp32 products' underflow; the
// whole times a margin of 2.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gpu_kernels.h"
#include "engine/host_elements.h"
#include "families/rope/problem.h"

namespace fact::realize {

/// What a correct kernel may lose on one element.
struct RopeErrorTerms {
  double u;        // fp32's unit roundoff, 2^-24
  double u_out;    // the element type's
  double out_abs;  // absolute rounding near zero
  double margin;   // multiplies the sum (2)
};

/// The terms of a problem (see the header comment).
RopeErrorTerms rope_error_terms(const RopeProblem& p);

/// The bound on |out - ref| for an element with reference terms xc = x c and rs = r s.
double rope_element_bound(const RopeErrorTerms& e, double xc, double rs);

/// One draw: how x and the cos/sin tables are filled (device fill_random), and whether a
/// relative error over it measures the kernel (the moderate ones).
struct RopeDraw {
  std::string name;
  Distribution dist;
  double x_scale;
  bool moderate;
};

/// normal (x, cos, sin normal), uniform01 (all uniform [0, 1)), large (x normal x 1e3, x 1e2
/// for fp16), small (x normal x 1e-4); cos and sin are normal outside uniform01, not only
/// |values| <= 1, so a kernel that swaps or drops a term shows on every draw.
std::vector<RopeDraw> rope_draws(DType dtype);

/// The float64 reference of one row of `p` and each element's bound; x, cos and sin hold
/// the row's head_dim elements as the kernel reads them.
struct RopeRowReference {
  std::vector<double> out, bound;
};
RopeRowReference rope_reference_row(const RopeProblem& p, const std::vector<float>& x, const std::vector<float>& cos,
                                    const std::vector<float>& sin);

/// The rows verified, as flat row indices < p.rows(): all up to 64, else the first, the last
/// and 62 others drawn without repetition (seeded: the same rows every run).
std::vector<int64_t> rope_sample_rows(int64_t rows);

/// (i0, i1, i2) of flat row `r` of `p` (i2 fastest).
std::array<int64_t, 3> rope_row_index(const RopeProblem& p, int64_t r);

/// The element offset of row `r` in a tensor with leading strides `s`.
int64_t rope_row_offset(const RopeProblem& p, const RopeStrides& s, int64_t r);

}  // namespace fact::realize
