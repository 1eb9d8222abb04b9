// The epilogue op table (docs/03-rules.md, "Epilogues"; docs/04-realization.md, "Adding an
// epilogue op"): every op an epilogue tail may compute is one row here, and every stage
// reads its row — discovery (its ATen ops and how their arguments are read, epilogue.cpp),
// the program and its host/device and interval evaluation (program.h/.cpp), the EVT
// generator (evt_codegen.cpp), the GEMM cost model (space.cpp), the range rewrites
// (ranges.cpp) and verification's branch coverage (tail_verify.cpp). Adding an op is one
// row; an op whose EVT is a rewrite into other ops (leaky_relu, pow) also names it in
// evt_codegen.cpp's desugar.
//
// An X-macro: FACT_EPILOGUE_OPS(BINARY, UNARY, CLAMP, CODEGEN) expands each row through the
// macro of its kind; a stage defines the four (and ATEN) to read the columns it needs. The
// BINARY and UNARY rows, in this order, are the instructions EpiOp numbers (program.h):
// every BINARY row comes before every UNARY row.
//
// BINARY(name, aten, eval, range, evt, evt_body, cost): an instruction that pops b, then a,
// and pushes the result.
//   aten      ATEN(op, kind, meaning) per ATen op discovery reads as this op (kind:
//             EpilogueOpKind, how its arguments are read); empty: only a rewrite makes it
//   eval      the result in T (float64 for the reference, fp32 on the device) of a and b
//   range     a statement setting [rl, rh], the result's interval, from a in [al, ah] and
//             b in [bl, bh] (Moore, "Interval Analysis", 1966); left at [-inf, inf] where
//             nothing is known (a divisor interval holding 0)
//   evt       the CUTLASS functor of its EVT node; evt_body: nullptr for CUTLASS's own,
//             else the expression of (a, b) a Fact* functor of that name computes
//   cost      fp32 instructions per element (space.cpp: about 20 a transcendental, else 1)
// UNARY(name, aten, form, eval, evt, cost, critical, branch, point, label, range, rule): an
// instruction on the top of the stack x, with the instruction's constant c.
//   form      EPI_X: the tree op is name(x); EPI_X_C: name(x, c) with c a scalar;
//             EPI_INSTR: no tree op of its own (a CLAMP row lowers to it)
//   eval      the result in T of x and c (one, half: T(1), T(0.5))
//   evt       the fp32 expression of x its EVT functor computes (CUDA's accurate math
//             functions, as PyTorch's fp32 kernels), or nullptr: desugar rewrites it
//   critical  the interior extremum where the slope changes sign (located numerically to
//             1e-6), NAN for a monotone op: the interval of an op is its values at the ends
//             and there
//   branch    0: one formula everywhere; +1 / -1: the result depends on which side of
//             `point` x lies, x passing through when x > point / x < point (verification
//             checks that its draws take both sides, under `label`)
//   range     a statement adjusting [rl, rh] from x in [xl, xh] beyond ends and critical
//             point ({} for none)
//   rule      what code generation does where the argument's range allows (ranges.cpp):
//             EPI_KEEP nothing; EPI_DROP the op goes when x never takes the side other than
//             passing through; EPI_BOUNDED(variant, scale, note): the CODEGEN op `variant`
//             when |x| * scale is within fact_erf_bounded's limit
// CLAMP(name, aten, cost, rule): a tree op name(x, lo, hi) with scalar or absent (null)
//   bounds, lowered to clamp_lo then clamp_hi, its EVT max then min; EPI_DROP drops a bound
//   x never crosses.
// CODEGEN(name, evt): an op of generated code only, that a range rule names.
#pragma once

#define FACT_EPILOGUE_OPS(BINARY, UNARY, CLAMP, CODEGEN)                                                             \
  BINARY(add,                                                                                                        \
         ATEN("aten.add.Tensor", binary, "x + y (tensor or scalar; alpha scales y)")                                 \
             ATEN("aten.add.Scalar", binary, "x + c"),                                                               \
         a + b, { rl = al + bl; rh = ah + bh; }, "cutlass::plus", nullptr, 1)                                        \
  BINARY(sub,                                                                                                        \
         ATEN("aten.sub.Tensor", binary, "x - y (tensor or scalar; alpha scales y)")                                 \
             ATEN("aten.sub.Scalar", binary, "x - c"),                                                               \
         a - b, { rl = al - bh; rh = ah - bl; }, "cutlass::minus", nullptr, 1)                                       \
  BINARY(mul,                                                                                                        \
         ATEN("aten.mul.Tensor", binary, "x * y (tensor or scalar)") ATEN("aten.mul.Scalar", binary, "x * c"),        \
         a * b, epilogue_corners(al * bl, al * bh, ah * bl, ah * bh, &rl, &rh);, "cutlass::multiplies", nullptr, 1)  \
  BINARY(div,                                                                                                        \
         ATEN("aten.div.Tensor", binary, "x / y (tensor or scalar)") ATEN("aten.div.Scalar", binary, "x / c"),        \
         a / b, if (bl > 0 || bh < 0) epilogue_corners(al / bl, al / bh, ah / bl, ah / bh, &rl, &rh);,              \
         "cutlass::divides", nullptr, 1)                                                                             \
  BINARY(max, , (a != a || a > b) ? a : b, { rl = fmax(al, bl); rh = fmax(ah, bh); }, "FactMax",                    \
         "(a != a || a > b) ? a : b", 1)                                                                             \
  BINARY(min, , (a != a || a < b) ? a : b, { rl = fmin(al, bl); rh = fmin(ah, bh); }, "FactMin",                    \
         "(a != a || a < b) ? a : b", 1)                                                                             \
  UNARY(relu, ATEN("aten.relu.default", unary, "F.relu"), EPI_X, x > 0 ? x : (x != x ? x : T(0)),                     \
        "x > 0.0f ? x : (x != x ? x : 0.0f)", 1, NAN, +1, 0.0, "relu", {}, EPI_DROP)                                 \
  UNARY(leaky_relu, ATEN("aten.leaky_relu.default", leaky_relu, "F.leaky_relu(x, slope)"), EPI_X_C,                 \
        x > 0 ? x : c * x, nullptr, 1, 0.0, +1, 0.0, "leaky_relu", {}, EPI_KEEP)                                     \
  UNARY(gelu, ATEN("aten.gelu.default", gelu, "F.gelu (erf; approximate='tanh' -> gelu_tanh)"), EPI_X,               \
        half * x * (one + erf(x * T(0.70710678118654752440))), "0.5f * x * (1.0f + erff(x * 0.70710678118654752f))", \
        20, -0.751792, 0, 0.0, nullptr, {}, EPI_BOUNDED("gelu_bounded", M_SQRT1_2, "its erf is fact_erf_bounded"))  \
  UNARY(gelu_tanh, , EPI_X, half * x * (one + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))),      \
        "0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)))", 20, -0.752461, 0, 0.0,      \
        nullptr, {}, EPI_KEEP)                                                                                       \
  UNARY(silu,                                                                                                        \
        ATEN("aten.silu.default", unary,                                                                             \
             "F.silu (Swish); x * sigmoid(x) written out is the silu_written_out idiom"),                            \
        EPI_X, x / (one + exp(-x)), "x * __fdividef(1.0f, 1.0f + expf(-x))", 20, -1.278465, 0, 0.0, nullptr, {},    \
        EPI_KEEP)                                                                                                    \
  UNARY(sigmoid, ATEN("aten.sigmoid.default", unary, "torch.sigmoid"), EPI_X, one / (one + exp(-x)),                 \
        "__fdividef(1.0f, 1.0f + expf(-x))", 20, NAN, 0, 0.0, nullptr, {}, EPI_KEEP)                                 \
  UNARY(tanh, ATEN("aten.tanh.default", unary, "torch.tanh"), EPI_X, tanh(x), "tanhf(x)", 20, NAN, 0, 0.0, nullptr,  \
        {}, EPI_KEEP)                                                                                                \
  UNARY(mish, ATEN("aten.mish.default", unary, "F.mish"), EPI_X, x * tanh(log1p(exp(x))),                            \
        "x * tanhf(log1pf(expf(x)))", 20, -1.192431, 0, 0.0, nullptr, {}, EPI_KEEP)                                  \
  UNARY(neg, ATEN("aten.neg.default", unary, "-x"), EPI_X, -x, "-x", 1, NAN, 0, 0.0, nullptr, {}, EPI_KEEP)          \
  UNARY(erf, ATEN("aten.erf.default", unary, "torch.erf"), EPI_X, erf(x), "erff(x)", 20, NAN, 0, 0.0, nullptr, {},   \
        EPI_BOUNDED("erf_bounded", 1.0, "fact_erf_bounded instead of erff"))                                        \
  UNARY(exp, ATEN("aten.exp.default", unary, "torch.exp"), EPI_X, exp(x), "expf(x)", 20, NAN, 0, 0.0, nullptr, {},   \
        EPI_KEEP)                                                                                                    \
  CLAMP(hardtanh, ATEN("aten.hardtanh.default", hardtanh, "F.hardtanh(x, lo, hi)"), 1, EPI_DROP)                     \
  UNARY(clamp_lo, , EPI_INSTR, (x != x || x > c) ? x : c, nullptr, 1, NAN, +1, c, "clamp (lower bound)", {},         \
        EPI_KEEP)                                                                                                    \
  UNARY(clamp_hi, , EPI_INSTR, (x != x || x < c) ? x : c, nullptr, 1, NAN, -1, c, "clamp (upper bound)", {},         \
        EPI_KEEP)                                                                                                    \
  CLAMP(clamp, ATEN("aten.clamp.default", clamp, "torch.clamp with number bounds"), 1, EPI_DROP)                     \
  /* pow: 0 lies in the interval of an even power across 0; a negative power has a pole at 0. */                     \
  UNARY(pow, ATEN("aten.pow.Tensor_Scalar", pow, "x ** c"), EPI_X_C, pow(x, c), nullptr, 1, NAN, 0, 0.0, nullptr,    \
        {                                                                                                            \
          if (xl < 0 && xh > 0) rl = fmin(rl, 0.0);                                                                  \
          if (c < 0 && xl <= 0 && xh >= 0) { rl = -INFINITY; rh = INFINITY; }                                        \
        },                                                                                                           \
        EPI_KEEP)                                                                                                    \
  CODEGEN(erf_bounded, "fact_erf_bounded(x)")                                                                        \
  CODEGEN(gelu_bounded, "0.5f * x * (1.0f + fact_erf_bounded(x * 0.70710678118654752f))")
