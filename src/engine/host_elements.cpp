#include "engine/host_elements.h"

#include <cmath>
#include <cstring>

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

float round_to(DType d, float v) {
  switch (d) {
    case DType::f32: return v;
    case DType::bf16: return round_bf16(v);
    case DType::f16: return round_f16(v);
    default: break;  // no kernel computes in another dtype
  }
  return v;
}


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
