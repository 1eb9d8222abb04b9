// A float64 evaluator of an epilogue expression tree (docs/03-rules.md, "Epilogues"): the
// reference a fused GEMM + tail is verified against (docs/06-verification.md). The tree is
// compiled on the host into a small postfix program that the same code evaluates on the
// host and, under nvcc, on the device (FACT_HD): one definition of each op's meaning.
//
// Each op's meaning is its row of the op table (op_table.h), whose definitions follow
// PyTorch's: gelu = 0.5x(1 + erf(x/sqrt 2)); gelu_tanh = 0.5x(1 + tanh(sqrt(2/pi)(x +
// 0.044715x^3))); silu = x * sigmoid(x); mish = x * tanh(log1p(exp(x))); hardtanh / clamp
// propagate NaN; leaky_relu(x, s) = x if x > 0 else s*x.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "engine/host_device.h"
#include "families/gemm/epilogue/op_table.h"

#ifndef FACT_NO_JSON
#include <string>
#include <nlohmann/json.hpp>
#endif

namespace fact::realize {

// The instructions: the leaves, then the table's rows (op_table.h) in its order, binary
// ones (pop 2, push 1) before unary ones (on the top of the stack, with a constant `value`).
#define FACT_EPI_ENUM_BINARY(name, ...) name,
#define FACT_EPI_ENUM_UNARY(name, ...) name,
#define FACT_EPI_NONE(...)  // a row macro for the kinds of row a stage does not read
enum class EpiOp : uint8_t {
  acc, scalar, input,  // leaves: push
  FACT_EPILOGUE_OPS(FACT_EPI_ENUM_BINARY, FACT_EPI_ENUM_UNARY, FACT_EPI_NONE, FACT_EPI_NONE)
};
#undef FACT_EPI_ENUM_BINARY
#undef FACT_EPI_ENUM_UNARY

// The table's promise that its binary rows come first, so that the binary instructions are
// those after `input` up to the last of them.
#define FACT_EPI_KIND_BINARY(...) 0,
#define FACT_EPI_KIND_UNARY(...) 1,
FACT_HD constexpr bool epilogue_binary_rows_first() {
  constexpr int kind[] = {FACT_EPILOGUE_OPS(FACT_EPI_KIND_BINARY, FACT_EPI_KIND_UNARY, FACT_EPI_NONE, FACT_EPI_NONE)};
  for (unsigned i = 1; i < sizeof kind / sizeof kind[0]; ++i)
    if (kind[i] < kind[i - 1]) return false;
  return true;
}
static_assert(epilogue_binary_rows_first(), "op_table.h: a BINARY row after a UNARY row");
#define FACT_EPI_COUNT(...) +1
/// The number of binary instructions.
constexpr int kEpiBinaryOps = 0 FACT_EPILOGUE_OPS(FACT_EPI_COUNT, FACT_EPI_NONE, FACT_EPI_NONE, FACT_EPI_NONE);
#undef FACT_EPI_KIND_BINARY
#undef FACT_EPI_KIND_UNARY
#undef FACT_EPI_COUNT

/// True for a leaf (acc, scalar, input): it pushes.
FACT_HD constexpr bool epilogue_leaf(EpiOp op) { return op <= EpiOp::input; }
/// True for a binary instruction: it pops two values and pushes one.
FACT_HD constexpr bool epilogue_binary(EpiOp op) {
  return !epilogue_leaf(op) && int(op) <= int(EpiOp::input) + kEpiBinaryOps;
}

struct EpiInstr {
  EpiOp op;
  double value;  // the scalar / slope / bound / exponent; the input slot for `input`
};

/// A postfix program of at most kMaxInstr instructions and stack depth kMaxStack.
struct EpilogueProgram {
  static constexpr int kMaxInstr = 64, kMaxStack = 16;
  EpiInstr code[kMaxInstr];
  int size = 0;
};

/// The table's `branch` of a unary op: 0 when its result has one formula everywhere; +1 /
/// -1 when it depends on which side of its breakpoint x lies, x passing through when x >
/// the breakpoint / x < it (relu, leaky_relu, clamp_lo: +1; clamp_hi: -1).
#define FACT_EPI_BRANCH(name, aten, form, eval, evt, cost, critical, branch, ...) \
  case EpiOp::name: return branch;
FACT_HD inline int epilogue_branch_direction(EpiOp op) {
  switch (op) {
    FACT_EPILOGUE_OPS(FACT_EPI_NONE, FACT_EPI_BRANCH, FACT_EPI_NONE, FACT_EPI_NONE)
    default: return 0;
  }
}
#undef FACT_EPI_BRANCH

/// True for the ops whose result depends on which side of a breakpoint x lies: the
/// branches verification must see both ways.
FACT_HD inline bool epilogue_op_branches(EpiOp op) { return epilogue_branch_direction(op) != 0; }

/// The breakpoint of a branching instruction (the table's `point`: 0, or its constant c).
#define FACT_EPI_POINT(name, aten, form, eval, evt, cost, critical, branch, point, ...) \
  case EpiOp::name: return point;
FACT_HD inline double epilogue_breakpoint(EpiInstr in) {
  [[maybe_unused]] const double c = in.value;
  switch (in.op) {
    FACT_EPILOGUE_OPS(FACT_EPI_NONE, FACT_EPI_POINT, FACT_EPI_NONE, FACT_EPI_NONE)
    default: return 0.0;
  }
}
#undef FACT_EPI_POINT

/// The interior minimum of the unary ops that are not monotone (x* where the slope changes
/// sign; the table's `critical`), NaN for monotone ones.
#define FACT_EPI_CRITICAL(name, aten, form, eval, evt, cost, critical, ...) \
  case EpiOp::name: return critical;
FACT_HD inline double epilogue_critical_point(EpiOp op) {
  switch (op) {
    FACT_EPILOGUE_OPS(FACT_EPI_NONE, FACT_EPI_CRITICAL, FACT_EPI_NONE, FACT_EPI_NONE)
    default: return NAN;
  }
}
#undef FACT_EPI_CRITICAL

/// [*rl, *rh]: the smallest and largest of four products or quotients (an interval product).
FACT_HD inline void epilogue_corners(double p0, double p1, double p2, double p3, double* rl, double* rh) {
  *rl = fmin(fmin(p0, p1), fmin(p2, p3));
  *rh = fmax(fmax(p0, p1), fmax(p2, p3));
}

/// Evaluates `prog` for one element in T (double for the reference, float for a tail pass
/// after a vendor GEMM): `acc` the GEMM result, `inputs[i]` the value of external input ci
/// at this element (already broadcast). NaN on a malformed program. When `sides` is given
/// (EpilogueProgram::kMaxInstr * 2 bits), instruction i of a branching op sets bit 2i when
/// x passes through (x > 0, x > the lower bound, x < the upper bound) and bit 2i + 1 when
/// the other side is taken. When `peak` is given, it is raised to the largest finite
/// |value| the evaluation holds: operands, scalars, intermediates and the result.
template <class T>
FACT_HD inline T eval_epilogue(const EpilogueProgram& prog, T acc, const T* inputs, uint32_t* sides = nullptr,
                               T* peak = nullptr) {
  T st[EpilogueProgram::kMaxStack];
  int sp = 0;
  auto seen = [peak](T v) {
    if (peak && v == v && v - v == v - v && (v < 0 ? -v : v) > *peak) *peak = v < 0 ? -v : v;
  };
  // On the device a program that is a compile-time constant (the tail kernel's,
  // tail_codegen.h) is unrolled into straight-line code: nvcc unrolls a `#pragma unroll`
  // loop fully when its trip count is constant and leaves it alone otherwise (CUDA C++
  // Programming Guide, "#pragma unroll"), so the interpreting passes are unchanged. The
  // input slot is chosen by comparisons rather than an index, which would keep `inputs` in
  // local memory even when the slot is a constant.
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < prog.size; ++i) {
    const EpiInstr in = prog.code[i];
    if (epilogue_leaf(in.op)) {
      if (sp == EpilogueProgram::kMaxStack) return T(NAN);
      st[sp++] = in.op == EpiOp::acc      ? acc
                 : in.op == EpiOp::scalar ? T(in.value)
                 : in.value < 0.5         ? inputs[0]
                 : in.value < 1.5         ? inputs[1]
                 : in.value < 2.5         ? inputs[2]
                                          : inputs[3];
      seen(st[sp - 1]);
      continue;
    }
    if (epilogue_binary(in.op)) {
      if (sp < 2) return T(NAN);
      const T b = st[--sp], a = st[sp - 1];
      T r = 0;
#define FACT_EPI_EVAL(name, aten, eval, ...) \
  case EpiOp::name: r = eval; break;
      switch (in.op) {
        FACT_EPILOGUE_OPS(FACT_EPI_EVAL, FACT_EPI_NONE, FACT_EPI_NONE, FACT_EPI_NONE)
        default: break;
      }
#undef FACT_EPI_EVAL
      st[sp - 1] = r;
      seen(r);
      continue;
    }
    if (sp < 1) return T(NAN);
    const T x = st[sp - 1], c = T(in.value), one = T(1), half = T(0.5);
    T r = x;
#define FACT_EPI_EVAL(name, aten, form, eval, ...) \
  case EpiOp::name: r = eval; break;
    switch (in.op) {
      FACT_EPILOGUE_OPS(FACT_EPI_NONE, FACT_EPI_EVAL, FACT_EPI_NONE, FACT_EPI_NONE)
      default: return T(NAN);
    }
#undef FACT_EPI_EVAL
    if (sides && epilogue_op_branches(in.op) && x == x) {
      const T point = T(epilogue_breakpoint(in));
      const bool through = epilogue_branch_direction(in.op) > 0 ? x > point : x < point;
      const int bit = 2 * i + (through ? 0 : 1);
      sides[bit / 32] |= 1u << (bit % 32);
    }
    st[sp - 1] = r;
    seen(r);
  }
  return sp == 1 ? st[0] : T(NAN);
}

/// Encloses the range of the tail over acc in [lo, hi] by interval arithmetic on `prog`
/// (Moore, "Interval Analysis", 1966): a binary op by its table row's `range` (a divisor
/// interval holding 0 gives [-inf, inf]), and each unary op over its interval from its values
/// at both ends and at its interior critical point (every op here is monotone on each side of
/// at most one such point), then its row's own `range` rule (pow: 0 for an even power across
/// 0; a negative power across 0 is unbounded). A value
/// used twice (x * sigmoid(x)) is treated as independent, so the enclosure may be wider
/// than the true range, never narrower (up to rounding). Writes [*out_lo, *out_hi].
/// `inputs` are points, or with `inputs_hi` the intervals [inputs[i], inputs_hi[i]]. An
/// infinite end is evaluated at the largest finite double (silu(-inf) is the limit 0, not
/// -inf / inf), and a bound that comes out NaN (inf - inf; a product whose every corner is
/// 0 * inf — fmin/fmax skip a single NaN corner) makes that interval [-inf, inf]. With
/// `count` >= 0 only the first `count` instructions run, and the interval written is the
/// top of the stack then: the argument of instruction `count`.
FACT_HD inline void eval_epilogue_range(const EpilogueProgram& prog, double lo, double hi, const double* inputs,
                                        double* out_lo, double* out_hi, const double* inputs_hi = nullptr,
                                        int count = -1) {
  double sl[EpilogueProgram::kMaxStack], sh[EpilogueProgram::kMaxStack];
  int sp = 0;
  *out_lo = -INFINITY;
  *out_hi = INFINITY;
  const int n = count < 0 || count > prog.size ? prog.size : count;
  for (int i = 0; i < n; ++i) {
    const EpiInstr in = prog.code[i];
    if (epilogue_leaf(in.op)) {
      if (sp == EpilogueProgram::kMaxStack) return;
      const double v = in.op == EpiOp::scalar ? in.value : in.op == EpiOp::input ? inputs[int(in.value)] : 0.0;
      const double vh = in.op == EpiOp::input && inputs_hi ? inputs_hi[int(in.value)] : v;
      sl[sp] = in.op == EpiOp::acc ? lo : v;
      sh[sp] = in.op == EpiOp::acc ? hi : vh;
      ++sp;
      continue;
    }
    if (epilogue_binary(in.op)) {
      if (sp < 2) return;
      --sp;
      const double al = sl[sp - 1], ah = sh[sp - 1], bl = sl[sp], bh = sh[sp];
      double rl = -INFINITY, rh = INFINITY;
#define FACT_EPI_RANGE(name, aten, eval, range, ...) \
  case EpiOp::name: range break;
      switch (in.op) {
        FACT_EPILOGUE_OPS(FACT_EPI_RANGE, FACT_EPI_NONE, FACT_EPI_NONE, FACT_EPI_NONE)
        default: break;
      }
#undef FACT_EPI_RANGE
      if (rl != rl || rh != rh) rl = -INFINITY, rh = INFINITY;  // inf - inf; 0 * inf in every product
      sl[sp - 1] = rl;
      sh[sp - 1] = rh;
      continue;
    }
    if (sp < 1) return;
    // One instruction applied to a point, through the scalar evaluator.
    EpilogueProgram one;
    one.size = 2;
    one.code[0] = {EpiOp::acc, 0.0};
    one.code[1] = in;
    const double xl = sl[sp - 1], xh = sh[sp - 1];
    const double fl = eval_epilogue<double>(one, fmax(xl, -DBL_MAX), inputs);
    const double fh = eval_epilogue<double>(one, fmin(xh, DBL_MAX), inputs);
    double rl = fmin(fl, fh), rh = fmax(fl, fh);
    const double crit = epilogue_critical_point(in.op);
    if (crit == crit && xl < crit && crit < xh) {
      const double fc = eval_epilogue<double>(one, crit, inputs);
      rl = fmin(rl, fc);
      rh = fmax(rh, fc);
    }
    [[maybe_unused]] const double c = in.value;
#define FACT_EPI_RANGE(name, aten, form, eval, evt, cost, critical, branch, point, label, range, ...) \
  case EpiOp::name: range break;
    switch (in.op) {  // the op's own rule beyond its ends and critical point
      FACT_EPILOGUE_OPS(FACT_EPI_NONE, FACT_EPI_RANGE, FACT_EPI_NONE, FACT_EPI_NONE)
      default: break;
    }
#undef FACT_EPI_RANGE
    if (fl != fl || fh != fh) rl = -INFINITY, rh = INFINITY;
    if (rl <= -DBL_MAX) rl = -INFINITY;  // evaluated at the largest double: unbounded
    if (rh >= DBL_MAX) rh = INFINITY;
    sl[sp - 1] = rl;
    sh[sp - 1] = rh;
  }
  if (count < 0 ? sp == 1 : sp >= 1) {
    *out_lo = sl[sp - 1];
    *out_hi = sh[sp - 1];
  }
}

/// The error a correct fused kernel may show at one element whose tail value at `acc` is
/// `r0`, with `peak` the largest |value| of that evaluation (both from one eval_epilogue
/// call, which the caller has already made), in absolute terms: how far
/// the tail's output can move when its GEMM input moves by up to `delta` (the GEMM's own
/// tolerance), enclosed by eval_epilogue_range over [acc - delta, acc + delta]; plus fp32
/// evaluation of the tail: 64 units in the last place of the magnitudes involved — the
/// tail's value at acc, the largest value in that range (the kernel's own GEMM value may
/// lie anywhere in the interval, and its fp32 result rounds at that magnitude: a tail that
/// saturates at tanh(1) = 0.7615942 rounds there even where the reference is 1e-4), acc,
/// the inputs (`inputs` holds the four slots c0..c3) and the largest intermediate or
/// scalar of the evaluation at acc (sigmoid(acc) - 0.5 rounds at 0.5 though it is near 0);
/// plus rounding the result to D's dtype
/// (`out_unit` |result|, its unit roundoff: 2^-8 for bf16, where a saturated tail's slope
/// is zero but its stored value still rounds).
FACT_HD inline double epilogue_error_bound(const EpilogueProgram& prog, double acc, double r0, double peak,
                                           const double* inputs, double delta, double out_unit) {
  double lo, hi;
  eval_epilogue_range(prog, acc - delta, acc + delta, inputs, &lo, &hi);
  const double spread = fmax(hi - r0, r0 - lo);
  const double reach = fmax(fabs(lo), fabs(hi));
  double mag = fabs(r0) + fmax(fabs(acc), peak) + (reach == reach && reach < INFINITY ? reach : 0.0);
  for (int i = 0; i < 4; ++i) mag += fabs(inputs[i]);
  return (spread == spread ? spread : INFINITY) + 64.0 * 5.9604644775390625e-08 * mag + out_unit * fabs(r0);  // 2^-24
}

#ifndef FACT_NO_JSON
/// External inputs a tail reads, named c0 .. c3 in order of first use (the ABI's epi[4]).
constexpr int kMaxTailInputs = 4;

/// The name of external input `i`: "c0", "c1", ...
inline std::string epilogue_input_name(size_t i) {
  std::string name = "c";  // not "c" + std::to_string(i): GCC 12's -Wrestrict false positive (GCC bug 105329)
  return name += std::to_string(i);
}

/// The slot of an external input's name: 2 for "c2"; -1 for anything but c0 .. c3. The one
/// place a slot name is read.
inline int epilogue_input_slot(const std::string& name) {
  if (name.size() != 2 || name[0] != 'c' || name[1] < '0' || name[1] >= '0' + kMaxTailInputs) return -1;
  return name[1] - '0';
}

/// Compiles discovery's expression tree ({"op", "args"} / {"acc"} / {"scalar"} /
/// {"input": "cN"}) into a program. Throws fact::Error naming an unknown op or a tree that
/// does not fit kMaxInstr / kMaxStack.
EpilogueProgram compile_epilogue(const nlohmann::json& tree);

/// An op of discovery's trees as the host stages read its row of the op table (op_table.h):
/// the BINARY rows, the UNARY rows but the instruction-only ones (EPI_INSTR), the CLAMP rows.
struct EpilogueTreeOp {
  enum class Form { binary, x, x_c, bounds } form;  // operands: (a, b), (x), (x, scalar c), (x, lo, hi)
  EpiOp instr;   // the instruction it compiles to (bounds: clamp_lo, then clamp_hi)
  double cost;   // fp32 instructions per element (the GEMM cost model)
  enum class Range { keep, drop, bounded } range;  // its range rule (ranges.h)
  const char* variant = nullptr;  // bounded: the CODEGEN op it becomes
  double scale = 1.0;             // bounded: when |x| * scale is within fact_erf_bounded's limit
  const char* note = nullptr;     // bounded: what the rewrite's note says after the interval
};

/// The tree op called `name`, or nullptr for a name the table does not have.
const EpilogueTreeOp* epilogue_tree_op(const std::string& name);

/// The cost model's fp32 instructions per element of tree op `op` (the table's `cost`); 1
/// for a name the table does not have.
double epilogue_op_cost(const std::string& op);

/// What verification calls a branching instruction (the table's `label`, e.g. "clamp (lower
/// bound)"); "op" for one that does not branch.
const char* epilogue_branch_label(EpiOp op);
#endif

}  // namespace fact::realize
