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

/// Evaluates `prog` for one element: `acc` the GEMM result, `inputs[i]` the value of
/// external input ci at this element (already broadcast). NaN on a malformed program.
FACT_HD inline double eval_epilogue(const EpilogueProgram& prog, double acc, const double* inputs) {
  double st[EpilogueProgram::kMaxStack];
  int sp = 0;
  for (int i = 0; i < prog.size; ++i) {
    const EpiInstr in = prog.code[i];
    if (in.op <= EpiOp::input) {
      if (sp == EpilogueProgram::kMaxStack) return NAN;
      st[sp++] = in.op == EpiOp::acc ? acc : in.op == EpiOp::scalar ? in.value : inputs[int(in.value)];
      continue;
    }
    if (in.op <= EpiOp::min) {
      if (sp < 2) return NAN;
      const double b = st[--sp], a = st[sp - 1];
      double r = 0;
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
    if (sp < 1) return NAN;
    const double x = st[sp - 1], c = in.value;
    double r = x;
    switch (in.op) {
      case EpiOp::relu: r = x > 0 ? x : (x != x ? x : 0.0); break;
      case EpiOp::gelu: r = 0.5 * x * (1.0 + ::erf(x * 0.70710678118654752440)); break;
      case EpiOp::gelu_tanh: r = 0.5 * x * (1.0 + ::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))); break;
      case EpiOp::silu: r = x / (1.0 + ::exp(-x)); break;
      case EpiOp::sigmoid: r = 1.0 / (1.0 + ::exp(-x)); break;
      case EpiOp::tanh: r = ::tanh(x); break;
      case EpiOp::neg: r = -x; break;
      case EpiOp::erf: r = ::erf(x); break;
      case EpiOp::mish: r = x * ::tanh(::log1p(::exp(x))); break;
      case EpiOp::leaky_relu: r = x > 0 ? x : c * x; break;
      case EpiOp::clamp_lo: r = (x != x || x > c) ? x : c; break;
      case EpiOp::clamp_hi: r = (x != x || x < c) ? x : c; break;
      case EpiOp::pow: r = ::pow(x, c); break;
      default: return NAN;
    }
    st[sp - 1] = r;
  }
  return sp == 1 ? st[0] : NAN;
}

#ifndef FACT_NO_JSON
/// Compiles discovery's expression tree ({"op", "args"} / {"acc"} / {"scalar"} /
/// {"input": "cN"}) into a program. Throws fact::Error naming an unknown op or a tree that
/// does not fit kMaxInstr / kMaxStack.
EpilogueProgram compile_epilogue(const nlohmann::json& tree);
#endif

}  // namespace fact::realize
