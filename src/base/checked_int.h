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

}  // namespace fact
