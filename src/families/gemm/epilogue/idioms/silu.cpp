// Swish written out: x * sigmoid(x), in either order, or x / (1 + exp(-x)) -> silu(x).
#include "families/gemm/epilogue/idioms/idioms.h"

namespace fact::discover::idioms {

Idiom silu_written_out() {
  const PatternExpr x = capture("x");
  return {"silu_written_out", "x * torch.sigmoid(x) (either order), x / (1 + torch.exp(-x)): F.silu, Swish", "silu",
          {op(mul_ops(), {x, op({"aten.sigmoid.default"}, {x})}).commutative(),
           op(div_ops(), {x, one_plus(op({"aten.exp.default"}, {op({"aten.neg.default"}, {x})}))})},
          "tests/families/gemm/epilogue/test_idioms.cpp, tests/golden/discover/epilogue_g_*, epilogue_h_*"};
}

}  // namespace fact::discover::idioms
