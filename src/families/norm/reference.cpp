#include "families/norm/reference.h"

#include <cmath>
#include <cstring>
#include <random>

#include "base/error.h"

namespace fact::realize {

namespace {

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float float_of(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

float round_bf16(float v) {
  if (std::isnan(v)) return v;
  uint32_t b = bits_of(v);
  b += 0x7fffu + ((b >> 16) & 1u);
  return float_of(b & 0xffff0000u);
}

// fp16: round to 11 significant bits at the value's binade, with fp16's subnormal step 2^-24
// and overflow to infinity beyond 65520 (the rounding boundary of 65504).
float round_f16(float v) {
  if (std::isnan(v) || std::isinf(v)) return v;
  const double a = std::fabs(double(v));
  if (a >= 65520.0) return std::copysign(INFINITY, v);
  int e = 0;
  std::frexp(a, &e);                        // a = m 2^e, m in [0.5, 1)
  const int step = std::max(e - 11, -24);   // ulp exponent
  const double q = std::nearbyint(a * std::ldexp(1.0, -step)) * std::ldexp(1.0, step);
  return float(std::copysign(q, double(v)));
}

}  // namespace

float round_to(DType d, float v) {
  switch (d) {
    case DType::f32: return v;
    case DType::bf16: return round_bf16(v);
    case DType::f16: return round_f16(v);
    default: break;  // no kernel computes in another dtype
  }
  return v;
}

std::vector<NormDraw> norm_draws() {
  return {{"normal", true},   {"uniform01", true}, {"large", false},     {"small", false},
          {"offset", false},  {"constant", false}, {"near-range", false}};
}

std::vector<float> norm_draw_row(const std::string& draw, int64_t cols, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<float> row(static_cast<size_t>(cols));
  const double range = dtype == DType::f16 ? std::ldexp(1.0, 13) : std::ldexp(1.0, 120);
  for (auto& v : row) {
    double x;
    if (draw == "normal") x = normal(rng);
    else if (draw == "uniform01") x = uniform(rng);
    else if (draw == "large") x = normal(rng) * (dtype == DType::f16 ? 1e2 : 1e3);
    else if (draw == "small") x = normal(rng) * 1e-4;
    else if (draw == "offset") x = (dtype == DType::f16 ? 1e2 : 1e3) + normal(rng) * 0.1;
    else if (draw == "constant") x = 3.25;
    else if (draw == "near-range") x = normal(rng) * range;
    else throw Error("norm verification: unknown draw '" + draw + "'");
    v = round_to(dtype, float(x));
  }
  return row;
}

std::vector<float> norm_draw_param(int64_t cols, DType dtype, uint64_t seed, bool bias) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> v(static_cast<size_t>(cols));
  for (auto& x : v) x = round_to(dtype, float((bias ? 0.0 : 1.0) + 0.1 * normal(rng)));
  return v;
}

NormErrorTerms norm_error_terms(const NormProblem& p) {
  NormErrorTerms e{};
  e.u = std::ldexp(1.0, -24);
  e.u_out = p.out_dtype == DType::f32 ? std::ldexp(1.0, -24) : p.out_dtype == DType::bf16 ? std::ldexp(1.0, -8)
                                                                                        : std::ldexp(1.0, -11);
  e.out_abs = p.out_dtype == DType::f16 ? std::ldexp(1.0, -25) : 0.0;
  e.margin = 2.0;
  e.layer = p.norm == NormKind::layer ? 1 : 0;
  return e;
}

NormRowReference norm_reference_row(const NormProblem& p, const std::vector<float>& x, const std::vector<float>& residual,
                                    const std::vector<float>& weight, const std::vector<float>& bias) {
  const size_t n = x.size();
  NormRowReference r;
  r.sum.resize(n);
  for (size_t j = 0; j < n; ++j) r.sum[j] = residual.empty() ? x[j] : round_to(p.dtype, x[j] + residual[j]);
  double mu = 0, abs_sum = 0;
  for (float s : r.sum) {
    mu += s;
    abs_sum += std::fabs(double(s));
  }
  mu = p.norm == NormKind::layer ? mu / double(n) : 0.0;
  double var = 0;
  for (float s : r.sum) var += (s - mu) * (s - mu);
  var /= double(n);
  const double eps = double(float(p.eps));
  r.facts = {double(n), abs_sum / double(n), var, eps};
  const NormErrorTerms e = norm_error_terms(p);
  const double rstd = 1.0 / std::sqrt(var + eps);
  r.out.resize(n);
  r.bound.resize(n);
  for (size_t j = 0; j < n; ++j) {
    const double c = double(r.sum[j]) - mu, y = c * rstd;
    const double w = weight.empty() ? 1.0 : weight[j];
    const double out = y * w + (bias.empty() ? 0.0 : bias[j]);
    r.out[j] = out;
    r.bound[j] = norm_element_bound(e, r.facts, c, y, w, out);
  }
  return r;
}

std::vector<int64_t> norm_sample_rows(int64_t rows) {
  std::vector<int64_t> out;
  if (rows <= 64) {
    for (int64_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  for (int s = 0; s < 64; ++s) out.push_back(int64_t(std::llround(double(s) * double(rows - 1) / 63.0)));
  return out;
}

}  // namespace fact::realize

namespace fact::realize {

namespace {

uint16_t f16_bits(float v) {
  const uint32_t sign = (bits_of(v) >> 16) & 0x8000u;
  const double a = std::fabs(double(v));
  if (std::isnan(v)) return 0x7e00;
  if (a >= 65520.0) return uint16_t(sign | 0x7c00u);
  if (a < std::ldexp(1.0, -14)) return uint16_t(sign | uint32_t(std::nearbyint(a * std::ldexp(1.0, 24))));
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  uint32_t mant = uint32_t(std::nearbyint((m * 2.0 - 1.0) * 1024.0));
  int exp = e - 1 + 15;
  if (mant == 1024) {
    mant = 0;
    ++exp;
  }
  return uint16_t(sign | (uint32_t(exp) << 10) | mant);
}

float f16_value(uint16_t h) {
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0x1f) return mant ? NAN : float(sign * INFINITY);
  if (exp == 0) return float(sign * std::ldexp(double(mant), -24));
  return float(sign * std::ldexp(1024.0 + mant, exp - 25));
}

}  // namespace

std::vector<uint8_t> encode_elements(DType d, const std::vector<float>& values) {
  const size_t e = dtype_bytes(d);
  std::vector<uint8_t> out(values.size() * e);
  for (size_t i = 0; i < values.size(); ++i) {
    if (d == DType::f32) {
      std::memcpy(&out[i * 4], &values[i], 4);
    } else {
      const uint16_t h = d == DType::bf16 ? uint16_t(bits_of(round_bf16(values[i])) >> 16) : f16_bits(values[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

float decode_element(DType d, const void* data, int64_t i) {
  const auto* b = static_cast<const uint8_t*>(data);
  if (d == DType::f32) {
    float v;
    std::memcpy(&v, b + i * 4, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, b + i * 2, 2);
  return d == DType::bf16 ? float_of(uint32_t(h) << 16) : f16_value(h);
}

}  // namespace fact::realize
