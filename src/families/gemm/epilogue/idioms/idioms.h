// Factories of the epilogue idioms, one per file in this folder; idiom_list.cpp lists
// them. Shared building blocks of their patterns are declared here too.
#pragma once

#include "families/gemm/epilogue/idiom.h"

namespace fact::discover::idioms {

Idiom silu_written_out();       // silu.cpp
Idiom gelu_tanh_written_out();  // gelu_tanh.cpp
Idiom gelu_erf_written_out();   // gelu_erf.cpp

// ATen ops of one arithmetic operator, tensor and scalar overloads.
inline std::vector<std::string> add_ops() { return {"aten.add.Tensor", "aten.add.Scalar"}; }
inline std::vector<std::string> mul_ops() { return {"aten.mul.Tensor", "aten.mul.Scalar"}; }
inline std::vector<std::string> div_ops() { return {"aten.div.Tensor", "aten.div.Scalar"}; }

/// The ways 0.5 * x * f is written: (0.5 * x) * f, (x / 2) * f, (x * f) * 0.5,
/// x * (0.5 * f), (x * f) / 2, each product in either order (half_x_times.cpp).
std::vector<PatternExpr> half_x_times(const PatternExpr& x, const PatternExpr& f);

/// 1 + f, in either order, with no alpha or alpha = 1.
PatternExpr one_plus(const PatternExpr& f);

}  // namespace fact::discover::idioms
