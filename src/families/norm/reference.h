// The norm family's host side of verification (docs/06-verification.md, "Norm"): the rows
// each draw writes and the float64 reference of one row with each element's bound (the
// element types' host conversions are engine/host_elements.h). No GPU: tests/families/norm/
// runs all of it on the CPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/host_elements.h"  // round_to, encode_elements, decode_element
#include "families/norm/bound.h"
#include "families/norm/problem.h"

namespace fact::realize {

/// One draw of the rows verified: a name, how it fills a row, and whether a relative
/// error over it measures the kernel (the moderate ones) or cancellation.
struct NormDraw {
  std::string name;
  bool moderate;
};

/// The draws: normal, uniform [0, 1), large (normal x 1e3), small (normal x 1e-4),
/// offset (1e3 + normal x 0.1: mean >> std), constant (every element 3.25: variance 0, eps
/// decides), near-range (normal x 2^120 for fp32 and bf16, x 2^13 for fp16: squares beyond
/// the dtype's range).
std::vector<NormDraw> norm_draws();

/// Fills one row of `cols` elements of `dtype` (as floats, already rounded to it) for
/// draw `draw` (a norm_draws name) from `seed`. Residual rows use the same draw with another
/// seed, scaled by 0.5. Throws fact::Error for an unknown draw.
std::vector<float> norm_draw_row(const std::string& draw, int64_t cols, DType dtype, uint64_t seed);

/// Weight and bias as the draws use them: weight 1 + normal x 0.1, bias normal x 0.1,
/// rounded to `dtype`.
std::vector<float> norm_draw_param(int64_t cols, DType dtype, uint64_t seed, bool bias);

/// The error terms of a problem (bound.h): u = 2^-24, u_out of out_dtype (f32 2^-24, bf16
/// 2^-8, f16 2^-11), out_abs 2^-25 for f16, margin 2.
NormErrorTerms norm_error_terms(const NormProblem& p);

/// The float64 reference of one row and each element's bound. `x` and `residual` (empty
/// without one) hold the row's elements as the kernel reads them; weight/bias are empty
/// when absent. The sum is float(x) + float(residual) rounded to p.dtype (eager's add);
/// LayerNorm / RMSNorm of it in float64 with eps = float(p.eps).
struct NormRowReference {
  std::vector<float> sum;       // what the sum output must hold, bit for bit
  std::vector<double> out, bound;
  NormRowFacts facts;
};
NormRowReference norm_reference_row(const NormProblem& p, const std::vector<float>& x, const std::vector<float>& residual,
                                    const std::vector<float>& weight, const std::vector<float>& bias);

/// The rows verified of `rows`: all up to 64, else 64 spread evenly, the first and the
/// last included.
std::vector<int64_t> norm_sample_rows(int64_t rows);

}  // namespace fact::realize
