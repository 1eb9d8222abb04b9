#include "families/gemm/epilogue/idioms/idioms.h"

namespace fact::discover::idioms {

std::vector<PatternExpr> half_x_times(const PatternExpr& x, const PatternExpr& f) {
  const PatternExpr half = number(0.5, 0.0), two = number(2.0, 0.0);
  return {
      op(mul_ops(), {op(mul_ops(), {x, half}).commutative(), f}).commutative(),
      op(mul_ops(), {op(div_ops(), {x, two}), f}).commutative(),
      op(mul_ops(), {op(mul_ops(), {x, f}).commutative(), half}).commutative(),
      op(mul_ops(), {x, op(mul_ops(), {f, half}).commutative()}).commutative(),
      op(div_ops(), {op(mul_ops(), {x, f}).commutative(), two}),
  };
}

PatternExpr one_plus(const PatternExpr& f) {
  // alpha scales the second operand: 1 + f only with alpha absent or 1.
  return op(add_ops(), {f, number(1.0, 0.0)})
      .commutative()
      .allowing("alpha")
      .where([](const graph::Node& n) {
        const graph::Arg* a = n.kwarg("alpha");
        return !a || a->number() == 1.0;
      });
}

}  // namespace fact::discover::idioms
