// Checked int64 arithmetic for sizes, strides and extents read from files a user hands FACT
// (graphs, plans, registry exports): an overflow is a fact::Error naming what was computed,
// never undefined behaviour (docs/10-bad-inputs.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

namespace fact {

/// a * b. Throws fact::Error "`what`: overflows int64" when the product does not fit.
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw Error(std::string(what) + ": overflows int64");
  return r;
}

/// a + b. Throws fact::Error "`what`: overflows int64" when the sum does not fit.
inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw Error(std::string(what) + ": overflows int64");
  return r;
}

/// No tensor on a GPU spans 2^48 bytes (256 TiB). The readers refuse a size, stride or
/// extent past it (graph.cpp's check_type, the plan problems, a symbol's sizes), which keeps
/// every offset and byte count FACT computes from them exact in int64.
inline constexpr int64_t kMaxSpanBytes = int64_t(1) << 48;

/// Throws fact::Error "`what`: spans N elements of B bytes, more than 2^48 bytes" when
/// `elements` x `element_bytes` (> 0) passes kMaxSpanBytes.
inline void check_span_bytes(int64_t elements, int64_t element_bytes, std::string_view what) {
  if (elements > kMaxSpanBytes / element_bytes)
    throw Error(std::string(what) + ": spans " + std::to_string(elements) + " elements of " +
                std::to_string(element_bytes) + " bytes, more than 2^48 bytes");
}

/// Throws fact::Error "`what` = S passes 2^48" when stride or size `v` passes kMaxSpanBytes
/// (past it, no tensor on a GPU holds two elements that far apart).
inline void check_below_span(int64_t v, std::string_view what) {
  if (v > kMaxSpanBytes) throw Error(std::string(what) + " = " + std::to_string(v) + " passes 2^48");
}

}  // namespace fact
