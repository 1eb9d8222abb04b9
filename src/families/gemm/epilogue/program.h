// A float64 evaluator of an epilogue expression tree (docs/03-rules.md, "Epilogues"): the
// reference a fused GEMM + tail is verified against (docs/06-verification.md). The tree is
// compiled on the host into a small postfix program that the same code evaluates on the
// host and, under nvcc, on the device (FACT_HD): one definition of each op's meaning.
//
// Op definitions follow PyTorch's: gelu = 0.5x(1 + erf(x/sqrt 2)); gelu_tanh =
// 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))); silu = x * sigmoid(x); mish =
// x * tanh(log1p(exp(x))); hardtanh / clamp propagate NaN; leaky_relu(x, s) = x if x > 0
// else s*x.
#pragma once
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "engine/host_device.h"

#ifndef FACT_NO_JSON
#include <string>
#include <nlohmann/json.hpp>
#endif

namespace fact::realize {

enum class EpiOp : uint8_t {
  acc, scalar, input,                               // leaves: push
  add, sub, mul, div, max, min,                     // binary: pop 2, push 1
  relu, gelu, gelu_tanh, silu, sigmoid, tanh, neg, erf, mish, exp,  // unary
  leaky_relu, clamp_lo, clamp_hi, pow               // unary with a constant (value)
};

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

/// True for the ops whose result depends on which side of a breakpoint x lies (relu,
/// leaky_relu, clamp_lo, clamp_hi): the branches verification must see both ways.
FACT_HD inline bool epilogue_op_branches(EpiOp op) {
  return op == EpiOp::relu || op == EpiOp::leaky_relu || op == EpiOp::clamp_lo || op == EpiOp::clamp_hi;
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
    if (in.op <= EpiOp::input) {
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
    if (in.op <= EpiOp::min) {
      if (sp < 2) return T(NAN);
      const T b = st[--sp], a = st[sp - 1];
      T r = 0;
      switch (in.op) {
        case EpiOp::add: r = a + b; break;
        case EpiOp::sub: r = a - b; break;
        case EpiOp::mul: r = a * b; break;
        case EpiOp::div: r = a / b; break;
        case EpiOp::max: r = (a != a || a > b) ? a : b; break;
        case EpiOp::min: r = (a != a || a < b) ? a : b; break;
        default: break;
      }
      st[sp - 1] = r;
      seen(r);
      continue;
    }
    if (sp < 1) return T(NAN);
    const T x = st[sp - 1], c = T(in.value), one = T(1), half = T(0.5);
    T r = x;
    switch (in.op) {
      case EpiOp::relu: r = x > 0 ? x : (x != x ? x : T(0)); break;
      case EpiOp::gelu: r = half * x * (one + erf(x * T(0.70710678118654752440))); break;
      case EpiOp::gelu_tanh: r = half * x * (one + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))); break;
      case EpiOp::silu: r = x / (one + exp(-x)); break;
      case EpiOp::sigmoid: r = one / (one + exp(-x)); break;
      case EpiOp::tanh: r = tanh(x); break;
      case EpiOp::neg: r = -x; break;
      case EpiOp::erf: r = erf(x); break;
      case EpiOp::mish: r = x * tanh(log1p(exp(x))); break;
      case EpiOp::exp: r = exp(x); break;
      case EpiOp::leaky_relu: r = x > 0 ? x : c * x; break;
      case EpiOp::clamp_lo: r = (x != x || x > c) ? x : c; break;
      case EpiOp::clamp_hi: r = (x != x || x < c) ? x : c; break;
      case EpiOp::pow: r = pow(x, c); break;
      default: return T(NAN);
    }
    if (sides && epilogue_op_branches(in.op) && x == x) {
      const bool through = in.op == EpiOp::clamp_hi ? x < c : in.op == EpiOp::clamp_lo ? x > c : x > 0;
      const int bit = 2 * i + (through ? 0 : 1);
      sides[bit / 32] |= 1u << (bit % 32);
    }
    st[sp - 1] = r;
    seen(r);
  }
  return sp == 1 ? st[0] : T(NAN);
}

/// The interior minimum of the unary ops that are not monotone (x* where the slope changes
/// sign), NaN for monotone ones: gelu -0.751792, gelu_tanh -0.752461, silu -1.278465,
/// mish -1.192431 (located numerically to 1e-6), leaky_relu 0.
FACT_HD inline double epilogue_critical_point(EpiOp op) {
  switch (op) {
    case EpiOp::gelu: return -0.751792;
    case EpiOp::gelu_tanh: return -0.752461;
    case EpiOp::silu: return -1.278465;
    case EpiOp::mish: return -1.192431;
    case EpiOp::leaky_relu: return 0.0;
    default: return NAN;
  }
}

/// Encloses the range of the tail over acc in [lo, hi] by interval arithmetic on `prog`
/// (Moore, "Interval Analysis", 1966): add/sub/mul/div of intervals (a divisor interval
/// holding 0 gives [-inf, inf]), and each unary op over its interval from its values at
/// both ends and at its interior critical point (every op here is monotone on each side of
/// at most one such point; pow by its ends, and 0 for an even power across 0; a negative
/// power across 0 is unbounded). A value
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
    if (in.op <= EpiOp::input) {
      if (sp == EpilogueProgram::kMaxStack) return;
      const double v = in.op == EpiOp::scalar ? in.value : in.op == EpiOp::input ? inputs[int(in.value)] : 0.0;
      const double vh = in.op == EpiOp::input && inputs_hi ? inputs_hi[int(in.value)] : v;
      sl[sp] = in.op == EpiOp::acc ? lo : v;
      sh[sp] = in.op == EpiOp::acc ? hi : vh;
      ++sp;
      continue;
    }
    if (in.op <= EpiOp::min) {
      if (sp < 2) return;
      --sp;
      const double al = sl[sp - 1], ah = sh[sp - 1], bl = sl[sp], bh = sh[sp];
      double rl = -INFINITY, rh = INFINITY;
      switch (in.op) {
        case EpiOp::add: rl = al + bl; rh = ah + bh; break;
        case EpiOp::sub: rl = al - bh; rh = ah - bl; break;
        case EpiOp::mul: {
          const double p[4] = {al * bl, al * bh, ah * bl, ah * bh};
          rl = fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
          rh = fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
          break;
        }
        case EpiOp::div:
          if (bl > 0 || bh < 0) {
            const double p[4] = {al / bl, al / bh, ah / bl, ah / bh};
            rl = fmin(fmin(p[0], p[1]), fmin(p[2], p[3]));
            rh = fmax(fmax(p[0], p[1]), fmax(p[2], p[3]));
          }
          break;
        case EpiOp::max: rl = fmax(al, bl); rh = fmax(ah, bh); break;
        case EpiOp::min: rl = fmin(al, bl); rh = fmin(ah, bh); break;
        default: break;
      }
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
    const double c = epilogue_critical_point(in.op);
    if (c == c && xl < c && c < xh) {
      const double fc = eval_epilogue<double>(one, c, inputs);
      rl = fmin(rl, fc);
      rh = fmax(rh, fc);
    }
    if (in.op == EpiOp::pow && xl < 0 && xh > 0) rl = fmin(rl, 0.0);
    if (in.op == EpiOp::pow && in.value < 0 && xl <= 0 && xh >= 0) rl = -INFINITY, rh = INFINITY;  // a pole at 0
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
inline std::string epilogue_input_name(size_t i) { return "c" + std::to_string(i); }

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
#endif

}  // namespace fact::realize
