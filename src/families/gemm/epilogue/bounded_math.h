/* FACT range-specialized fp32 math (docs/04-realization.md, "Ranges in the epilogue").
 *
 * Accurate fp32 functions for an argument that the epilogue's range analysis
 * (src/realize/evt_ranges.cpp) has proven to lie in a bounded interval. Without range
 * reduction they are a few fused multiply-adds where CUDA's general erff is about twenty
 * instructions and an exp: in a fused epilogue, which runs on the epilogue warps alone,
 * that difference is the tail's cost (docs/perf-notes.md, v9).
 *
 * This header is pasted verbatim into each generated translation unit that calls one of
 * its functions, and host tests include it: one definition for both sides. It includes
 * nothing beyond <math.h> (fmaf). */
#ifndef FACT_BOUNDED_MATH_H
#define FACT_BOUNDED_MATH_H
#include <math.h>

#if defined(__CUDACC__)
#define FACT_BOUNDED_FN __host__ __device__ __forceinline__
#else
#define FACT_BOUNDED_FN inline
#endif

/* The largest |z| fact_erf_bounded is accurate for. */
#define FACT_ERF_BOUNDED_LIMIT 1.0

/* erf(z) for |z| <= 1, in fp32: z * (c0 + t * Q(t)) with t = z^2, Q of degree 5 (Horner,
 * fmaf), c0 = 2/sqrt(pi) split into its fp32 value and the remainder so the leading term
 * rounds once. Coefficients: a relative least-squares fit of (erf(z)/z - c0)/t in t on
 * 20000 Chebyshev nodes of [0, 1], each rounded to fp32. Error against float64 erf, over
 * every fp32 value of [-1, 1]: at most 1.455 ulp (at |z| = 0.9972855); at most 0.56 ulp for
 * 1e-37 <= |z| < 1e-2, and up to 1 ulp below that, where z * s underflows
 * (tests/realize/test_bounded_math.cpp checks 1.5 ulp on a 4M-point grid); CUDA's erff is
 * documented at 2 ulp. Odd: fact_erf_bounded(-z) == -fact_erf_bounded(z) (erf(-0) gives
 * +0). Outside |z| <= 1 the result is wrong (no range reduction; 1.08 at 2, 48 at 3): only
 * call it where the bound is proven. NaN in, NaN out. When pasted into a kernel, <math.h>
 * has already come in through CUTLASS's headers, so the include below is a no-op there. */
FACT_BOUNDED_FN float fact_erf_bounded(float z) {
  const float t = z * z;
  float q = 7.919117342680693e-05f;
  q = fmaf(q, t, -0.0008031139150261879f);
  q = fmaf(q, t, 0.005190899129956961f);
  q = fmaf(q, t, -0.026855312287807465f);
  q = fmaf(q, t, 0.11283627152442932f);
  q = fmaf(q, t, -0.37612631916999817f);
  const float s = fmaf(t, q, -5.8635382771399236e-08f);  /* + (2/sqrt(pi) - its fp32 value) */
  return fmaf(z, 1.128379225730896f, z * s);             /* fp32(2/sqrt(pi)) * z + z * s */
}

#endif /* FACT_BOUNDED_MATH_H */
