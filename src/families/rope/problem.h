// The rope problem a plan pattern describes (rule "rope", docs/03-rules.md, "The rope rule";
// the kernels' C ABI is abi.h): rotary position embeddings applied to one tensor (q or k)
// seen as [n0, n1, n2, head_dim], with cos and sin tables that broadcast to it, in the
// half-split (rotate_half) or interleaved-pairs form.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/checked_int.h"
#include "engine/kernel_dtype.h"

namespace fact::realize {

enum class RopeForm { half, pairs };

/// Strides of the three leading dims, in elements (the last dim is unit stride).
using RopeStrides = std::array<int64_t, 3>;

struct RopeProblem {
  RopeForm form = RopeForm::half;
  std::array<int64_t, 3> dims{1, 1, 1};  // n0, n1, n2: x's shape without its last dim, padded to 3
  int64_t head_dim = 2;                  // the rotated (last) dim, even
  DType dtype = DType::f32;              // x, cos and sin
  DType out_dtype = DType::f32;          // out: dtype, or bf16 for fp32 x whose output is narrowed
                                         // (the plan's "out_dtype", discover/narrow.h)
  RopeStrides x{}, cos{}, sin{}, out{};

  /// n0 * n1 * n2. Throws fact::Error past int64 (rope_problem_from_json checks it once).
  int64_t rows() const {
    return checked_mul(checked_mul(dims[0], dims[1], "rope problem: rows"), dims[2], "rope problem: rows");
  }
  /// Elements the allocation of a tensor with strides `s` spans: the offset of its last
  /// element + 1. Throws fact::Error past int64 (rope_problem_from_json checks each once).
  int64_t extent(const RopeStrides& s) const {
    int64_t last = head_dim;
    for (int i = 0; i < 3; ++i)
      last = checked_add(last, checked_mul(dims[size_t(i)] - 1, s[size_t(i)], "rope problem: extent"),
                         "rope problem: extent");
    return last;
  }
};

/// "half" | "pairs".
std::string rope_form_name(RopeForm f);

/// Reads a plan pattern's "problem" object of kind "rope": form ("half" | "pairs"), dims
/// (three positive integers), head_dim (a positive even integer), dtype ("float32" |
/// "bfloat16" | "float16"), optionally out_dtype (dtype when absent; "bfloat16" or "float16"
/// with a float32 dtype) and strides {"x", "cos", "sin", "out"}: three integers >= 0 each;
/// out's must map the [n0, n1, n2, head_dim] elements one to one (no two elements at one
/// address). Throws fact::Error naming the missing or bad field. A stride past 2^48
/// elements, an operand past 2^48 bytes (kMaxSpanBytes) and rows x head_dim past int64 are
/// refused the same way.
RopeProblem rope_problem_from_json(const nlohmann::json& j);

}  // namespace fact::realize
