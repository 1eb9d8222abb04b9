#include "discover/idioms/idioms.h"

namespace fact::discover::idioms {

std::vector<PatternExpr> half_x_times(const PatternExpr& x, const PatternExpr& f) {
  const PatternExpr half = number(0.5);
  return {
      op(mul_ops(), {op(mul_ops(), {x, half}).commutative(), f}).commutative(),
      op(mul_ops(), {op(mul_ops(), {x, f}).commutative(), half}).commutative(),
      op(mul_ops(), {x, op(mul_ops(), {f, half}).commutative()}).commutative(),
      op(div_ops(), {op(mul_ops(), {x, f}).commutative(), number(2.0)}),
  };
}

PatternExpr one_plus(const PatternExpr& f) { return op(add_ops(), {f, number(1.0)}).commutative(); }

}  // namespace fact::discover::idioms
