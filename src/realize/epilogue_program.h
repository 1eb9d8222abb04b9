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
#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define FACT_HD __host__ __device__
#else
#define FACT_HD
#endif

#ifndef FACT_NO_JSON
#include <string>
#include <nlohmann/json.hpp>
#endif

namespace fact::realize {

enum class EpiOp : uint8_t {
  acc, scalar, input,                               // leaves: push
  add, sub, mul, div, max, min,                     // binary: pop 2, push 1
  relu, gelu, gelu_tanh, silu, sigmoid, tanh, neg, erf, mish,  // unary
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
/// the other side is taken.
template <class T>
FACT_HD inline T eval_epilogue(const EpilogueProgram& prog, T acc, const T* inputs, uint32_t* sides = nullptr) {
  T st[EpilogueProgram::kMaxStack];
  int sp = 0;
  for (int i = 0; i < prog.size; ++i) {
    const EpiInstr in = prog.code[i];
    if (in.op <= EpiOp::input) {
      if (sp == EpilogueProgram::kMaxStack) return T(NAN);
      st[sp++] = in.op == EpiOp::acc ? acc : in.op == EpiOp::scalar ? T(in.value) : inputs[int(in.value)];
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
  }
  return sp == 1 ? st[0] : T(NAN);
}

/// The error a correct fused kernel may show at one element, in absolute terms: how far the
/// tail's output moves when its GEMM input moves by `delta` (the GEMM's own tolerance),
/// sampled at acc +- delta and +- delta/2 (a tail is monotone or nearly so at that scale),
/// plus fp32 evaluation of the tail: 64 units in the last place of the magnitudes involved
/// (`inputs` holds the four slots c0..c3), plus rounding the result to D's dtype
/// (`out_unit` |result|, its unit roundoff: 2^-8 for bf16, where a saturated tail's slope
/// is zero but its stored value still rounds).
FACT_HD inline double epilogue_error_bound(const EpilogueProgram& prog, double acc, const double* inputs,
                                           double delta, double out_unit) {
  const double r0 = eval_epilogue<double>(prog, acc, inputs);
  double spread = 0;
  const double steps[4] = {-1.0, -0.5, 0.5, 1.0};
  for (double s : steps) {
    const double r = eval_epilogue<double>(prog, acc + s * delta, inputs);
    spread = fmax(spread, fabs(r - r0));
  }
  double mag = fabs(r0) + fabs(acc);
  for (int i = 0; i < 4; ++i) mag += fabs(inputs[i]);
  return spread + 64.0 * 5.9604644775390625e-08 * mag + out_unit * fabs(r0);  // 2^-24
}

#ifndef FACT_NO_JSON
/// Compiles discovery's expression tree ({"op", "args"} / {"acc"} / {"scalar"} /
/// {"input": "cN"}) into a program. Throws fact::Error naming an unknown op or a tree that
/// does not fit kMaxInstr / kMaxStack.
EpilogueProgram compile_epilogue(const nlohmann::json& tree);
#endif

}  // namespace fact::realize
