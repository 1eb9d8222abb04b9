// Runnable GEMM candidates: a generated CUTLASS kernel loaded from its shared library, the
// vendor path (cuBLAS under the policy), and the float64 reference (cuBLAS DGEMM).
#pragma once
#include <memory>
#include <string>

#include "engine/device_buffer.h"
#include "families/gemm/problem.h"
#include "families/gemm/space.h"
#include "engine/gpu_context.h"
#include "engine/harness.h"
#include "families/gemm/abi.h"

namespace fact::realize {

/// FactGemmArgs for `p` on the given device operands (bias may be null).
FactGemmArgs make_gemm_args(const GemmProblem& p, const void* a, const void* b, const void* bias,
                            void* d);

/// A runnable GEMM candidate (engine/harness.h).
using GemmCandidate = Candidate<FactGemmArgs>;

/// Loads `<symbol>_*` from `library` (dlopen, engine/library_candidate.h); every call passes
/// `runtime`'s scheduler options. Throws fact::Error naming a missing symbol.
std::unique_ptr<GemmCandidate> load_cutlass_candidate(const std::string& name,
                                                      const std::string& library,
                                                      const std::string& symbol,
                                                      const GemmRuntime& runtime = {});

/// cuBLAS (cublasGemmStridedBatchedEx) for `p` under `policy`: fp32 inputs use
/// CUBLAS_COMPUTE_32F (fp32), _FAST_TF32 (tf32) or _FAST_16BF (bf16); fp16/bf16 inputs use
/// CUBLAS_COMPUTE_32F. A bias is written into D first and added with beta.
std::unique_ptr<GemmCandidate> make_cublas_candidate(const GemmProblem& p, Precision policy);

/// cuBLASLt (cublasLtMatmul, its heuristic's first algorithm, up to 32 MiB of workspace)
/// for `p` under `policy`; a bias along N uses the fused CUBLASLT_EPILOGUE_BIAS (beta 1),
/// which is how PyTorch runs `linear`/`addmm` with a bias.
std::unique_ptr<GemmCandidate> make_cublaslt_candidate(const GemmProblem& p, Precision policy);

/// The vendor candidates' names under a policy: `library` + "_" + the policy for fp32
/// inputs, else the input dtype, e.g. "cublas_tf32", "cublaslt_bfloat16".
std::string vendor_candidate_name(const std::string& library, const GemmProblem& p, Precision policy);

/// The cuBLAS compute type a policy asks for: fp32 inputs use CUBLAS_COMPUTE_32F (fp32),
/// _FAST_TF32 (tf32) or _FAST_16BF (bf16); fp16 and bf16 inputs use CUBLAS_COMPUTE_32F.
cublasComputeType_t vendor_compute_type(const GemmProblem& p, Precision policy);

/// Float64 reference: d64 (same strides as D, already holding the bias broadcast or zeros)
/// = alpha * A64 * B64 + beta * d64, with cublasDgemmStridedBatched.
void reference_gemm(const GemmProblem& p, const double* a64, const double* b64, double* d64,
                    GpuContext& gpu);

}  // namespace fact::realize
