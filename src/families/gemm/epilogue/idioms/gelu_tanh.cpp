// GELU's tanh approximation written out, as minGPT's NewGELU:
//   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  -> gelu_tanh(x)
// (Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016, eq. for the tanh
// approximation; PyTorch's F.gelu(approximate="tanh")). x^3 may be pow(x, 3) or x * x * x.
// The factored argument of HuggingFace's FastGELUActivation and Megatron's gelu_impl,
// sqrt(2/pi) * x * (1 + 0.044715 * x * x), is the same function.
#include <cmath>

#include "families/gemm/epilogue/idioms/idioms.h"

namespace fact::discover::idioms {

Idiom gelu_tanh_written_out() {
  const PatternExpr x = capture("x");
  const PatternExpr cube = any_of({
      op({"aten.pow.Tensor_Scalar"}, {x, number(3.0, 0.0)}),  // exactly 3: x ** 3.000002 is NaN for x < 0
      op(mul_ops(), {op(mul_ops(), {x, x}), x}).commutative(),
  });
  const PatternExpr poly = op(add_ops(), {x, op(mul_ops(), {cube, number(0.044715)}).commutative()}).commutative();
  const PatternExpr c = number(std::sqrt(2.0 / M_PI)), k = number(0.044715);
  const PatternExpr expanded = op(mul_ops(), {poly, c}).commutative();
  // 0.044715 * x * x, in any grouping, or 0.044715 * x ** 2.
  const PatternExpr kx2 = any_of({
      op(mul_ops(), {op(mul_ops(), {x, k}).commutative(), x}).commutative(),
      op(mul_ops(), {op(mul_ops(), {x, x}), k}).commutative(),
      op(mul_ops(), {op({"aten.pow.Tensor_Scalar"}, {x, number(2.0, 0.0)}), k}).commutative(),
  });
  const PatternExpr factored = op(mul_ops(), {op(mul_ops(), {x, c}).commutative(), one_plus(kx2)}).commutative();
  const PatternExpr arg = any_of({expanded, factored});
  return {"gelu_tanh_written_out",
          "0.5 * x * (1 + torch.tanh(sqrt(2/pi) * (x + 0.044715 * x**3))): F.gelu(approximate='tanh'), minGPT's NewGELU, "
          "HF FastGELU",
          "gelu_tanh", half_x_times(x, one_plus(op({"aten.tanh.default"}, {arg}))),
          "tests/families/gemm/epilogue/test_idioms.cpp, tests/golden/discover/epilogue_newgelu_written_out"};
}

}  // namespace fact::discover::idioms
