#include "families/rope/reference.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

namespace fact::realize {

RopeErrorTerms rope_error_terms(const RopeProblem& p) {
  RopeErrorTerms e{};
  e.u = std::ldexp(1.0, -24);
  const DType o = p.out_dtype;
  e.u_out = o == DType::f32 ? std::ldexp(1.0, -24) : o == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  const double subnormal_half = o == DType::f32 ? std::ldexp(1.0, -150)
                                : o == DType::bf16 ? std::ldexp(1.0, -134)
                                                   : std::ldexp(1.0, -25);
  e.out_abs = subnormal_half + std::ldexp(1.0, -149);
  e.margin = 2.0;
  return e;
}

double rope_element_bound(const RopeErrorTerms& e, double xc, double rs) {
  const double gamma2 = 2.0 * e.u / (1.0 - 2.0 * e.u);
  const double terms = std::fabs(xc) + std::fabs(rs);
  return e.margin * (gamma2 * terms * (1.0 + e.u_out) + e.u_out * std::fabs(xc + rs) + e.out_abs);
}

std::vector<RopeDraw> rope_draws(DType dtype) {
  return {{"normal", Distribution::Normal, 1.0, true},
          {"uniform01", Distribution::Uniform01, 1.0, true},
          {"large", Distribution::Normal, dtype == DType::f16 ? 1e2 : 1e3, false},
          {"small", Distribution::Normal, 1e-4, false}};
}

RopeRowReference rope_reference_row(const RopeProblem& p, const std::vector<float>& x, const std::vector<float>& cos,
                                    const std::vector<float>& sin) {
  const int64_t d = p.head_dim, h = d / 2;
  const RopeErrorTerms e = rope_error_terms(p);
  RopeRowReference r;
  r.out.resize(size_t(d));
  r.bound.resize(size_t(d));
  for (int64_t j = 0; j < d; ++j) {
    double rot;  // the rotated partner of element j
    if (p.form == RopeForm::half) rot = j < h ? -double(x[size_t(j + h)]) : double(x[size_t(j - h)]);
    else rot = j % 2 == 0 ? -double(x[size_t(j + 1)]) : double(x[size_t(j - 1)]);
    const double xc = double(x[size_t(j)]) * double(cos[size_t(j)]), rs = rot * double(sin[size_t(j)]);
    r.out[size_t(j)] = xc + rs;
    r.bound[size_t(j)] = rope_element_bound(e, xc, rs);
  }
  return r;
}

std::vector<int64_t> rope_sample_rows(int64_t rows) {
  std::vector<int64_t> out;
  if (rows <= 64) {
    for (int64_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  std::set<int64_t> picked{0, rows - 1};
  std::mt19937_64 rng(0x40be);
  std::uniform_int_distribution<int64_t> any(1, rows - 2);
  while (picked.size() < 64) picked.insert(any(rng));
  return {picked.begin(), picked.end()};
}

std::array<int64_t, 3> rope_row_index(const RopeProblem& p, int64_t r) {
  const int64_t i2 = r % p.dims[2], rest = r / p.dims[2];
  return {rest / p.dims[1], rest % p.dims[1], i2};
}

int64_t rope_row_offset(const RopeProblem& p, const RopeStrides& s, int64_t r) {
  const auto i = rope_row_index(p, r);
  return i[0] * s[0] + i[1] * s[1] + i[2] * s[2];
}

}  // namespace fact::realize
