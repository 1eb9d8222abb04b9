// GELU's tanh approximation written out, as minGPT's NewGELU:
//   0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  -> gelu_tanh(x)
// (Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016, eq. for the tanh
// approximation; PyTorch's F.gelu(approximate="tanh")). x^3 may be pow(x, 3) or x * x * x.
#include <cmath>

#include "discover/idioms/idioms.h"

namespace fact::discover::idioms {

Idiom gelu_tanh_written_out() {
  const PatternExpr x = capture("x");
  const PatternExpr cube = any_of({
      op({"aten.pow.Tensor_Scalar"}, {x, number(3.0, 0.0)}),  // exactly 3: x ** 3.000002 is NaN for x < 0
      op(mul_ops(), {op(mul_ops(), {x, x}), x}).commutative(),
  });
  const PatternExpr poly = op(add_ops(), {x, op(mul_ops(), {cube, number(0.044715)}).commutative()}).commutative();
  const PatternExpr arg = op(mul_ops(), {poly, number(std::sqrt(2.0 / M_PI))}).commutative();
  return {"gelu_tanh_written_out",
          "0.5 * x * (1 + torch.tanh(sqrt(2/pi) * (x + 0.044715 * x**3))): F.gelu(approximate='tanh'), minGPT's NewGELU",
          "gelu_tanh", half_x_times(x, one_plus(op({"aten.tanh.default"}, {arg}))),
          "tests/discover/test_idioms.cpp, tests/golden/discover/epilogue_newgelu_written_out"};
}

}  // namespace fact::discover::idioms
