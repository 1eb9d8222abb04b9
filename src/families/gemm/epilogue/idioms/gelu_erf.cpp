// GELU written out with erf: 0.5 * x * (1 + erf(x / sqrt(2))) -> gelu(x) (PyTorch's
// F.gelu, approximate="none"). x / sqrt(2) may be written as x * (1 / sqrt(2)).
#include <cmath>

#include "families/gemm/epilogue/idioms/idioms.h"

namespace fact::discover::idioms {

Idiom gelu_erf_written_out() {
  const PatternExpr x = capture("x");
  const PatternExpr scaled = any_of({
      op(div_ops(), {x, number(std::sqrt(2.0))}),
      op(mul_ops(), {x, number(1.0 / std::sqrt(2.0))}).commutative(),
  });
  return {"gelu_erf_written_out", "0.5 * x * (1 + torch.erf(x / sqrt(2))): F.gelu", "gelu",
          half_x_times(x, one_plus(op({"aten.erf.default"}, {scaled}))),
          "tests/families/gemm/epilogue/test_idioms.cpp, tests/golden/discover/epilogue_gelu_erf_written_out"};
}

}  // namespace fact::discover::idioms
