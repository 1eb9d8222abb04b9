// SwiGLU as one GEMM (docs/03-rules.md and docs/04-realization.md, "SwiGLU"):
//   D = silu(A · Wgᵀ) * (A · Wuᵀ)        A: M x K, Wg, Wu: H x K, D: M x H
// computed as the M x 2H GEMM A · Wᵀ over the gate/up weight W interleaved in blocks of
// kSwigluInterleave rows (W[16b + r] = Wg[8b + r], W[16b + 8 + r] = Wu[8b + r], r < 8), with
// an epilogue that pairs each gate column with its up column in registers and writes
// silu(g)·u. The plan problem is the GEMM's (n = 2H, ldd = D's row stride) with
// "swiglu": {"gate": {"output", "b"}, "up": {"output", "b"}, "hidden": H, "interleave": 8}.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/gemm/space.h"
#include "families/gemm/swiglu_layout.h"

namespace fact::realize {

/// A SwiGLU problem: `gemm` is the M x 2H GEMM over the interleaved weight (n = 2H,
/// ldd = 2H, no bias: what the tuning space and the vendor GEMM are ranked and run on),
/// `hidden` = H and `ldd` = D's row stride (elements).
struct SwigluProblem {
  GemmProblem gemm;
  int64_t hidden = 0, ldd = 0;
  double flops() const { return gemm.flops(); }
};

/// Whether a plan problem is a SwiGLU one (has "swiglu").
bool is_swiglu_problem(const nlohmann::json& problem);

/// Reads a SwiGLU plan problem. Throws fact::Error naming what is wrong: no "swiglu", an
/// interleave other than 8, n != 2 * hidden, hidden not a multiple of 8, a bias, l != 1,
/// alpha != 1, beta != 0, A not row-major or B not a column-major [2H, K] weight (ldb = K),
/// ldd < hidden.
SwigluProblem swiglu_problem_from_json(const nlohmann::json& problem);

/// The GEMM families a SwiGLU kernel can be: those of gemm_families(p.gemm) that read A
/// row-major and B column-major as given (no staging, no 3xTF32, no transposed problem):
/// tf32 for fp32 inputs under the tf32 policy, bf16, f16. Empty with `why` set otherwise
/// (the vendor path then runs it).
std::vector<GemmFamilyKey> swiglu_families(const SwigluProblem& p, Precision policy, std::string& why);

/// The kernels to build: gemm_kernel_choices over `families` restricted to the persistent
/// tile scheduler (the SwiGLU kernel has no stream-K), at most `budget` (0 = all).
std::vector<GemmKernelChoice> swiglu_kernel_choices(const std::vector<GemmFamilyKey>& families,
                                                    const SwigluProblem& p, int sm_count, int budget);

/// The procedural name: the GEMM's with the epilogue token "swiglu8", e.g.
/// cutlass3x_sm90a_bf16_rcr_128x256x64_1x1x1_coop_persistent_swiglu8.
std::string swiglu_kernel_name(const GemmFamilyKey& family, const GemmConfig& config);

/// The complete .cu source of one SwiGLU kernel (templates/swiglu_sm90.cu.in with the
/// FactGemmArgs ABI pasted in). Throws fact::Error for a family it does not implement or a
/// placeholder left unfilled.
std::string render_swiglu_sm90(const GemmFamilyKey& family, const GemmConfig& config);

}  // namespace fact::realize
