// Runnable attention candidates: a generated kernel loaded from its shared library, and the
// vendor path's lower bound (the two batched GEMMs eager attention runs, on cuBLAS).
#pragma once
#include <memory>
#include <string>

#include "base/precision.h"
#include "families/attention/abi.h"
#include "families/attention/problem.h"
#include "engine/gpu_context.h"
#include "engine/harness.h"

namespace fact::realize {

/// FactAttentionArgs for `p` on the given device operands (mask null without a mask tensor),
/// with the flags and the window the runtime passes (FACT_ATTN_FLAG_EMPTY_ROW_ZERO for form "sdpa";
/// window = p.window) and an additive mask's prologue (mask_affine = 1, mask_rsub and
/// mask_scale its numbers cast to fp32 as ATen casts them; all 0 without one).
FactAttentionArgs make_attention_args(const AttentionProblem& p, const void* q, const void* k, const void* v,
                                      void* o, const void* mask);

/// A runnable attention candidate (engine/harness.h).
using AttentionCandidate = Candidate<FactAttentionArgs>;

/// Loads `<symbol>_can_implement`, `_workspace_bytes` and `_run` from `library` (dlopen).
/// Throws fact::Error naming an unloadable library or a missing symbol.
std::unique_ptr<AttentionCandidate> load_attention_candidate(const std::string& name, const std::string& library,
                                                             const std::string& symbol);

/// The vendor path's lower bound, named "vendor": what eager attention costs at least. It
/// copies Q, K and V into contiguous [batch * heads, seq, head_dim] tensors (K and V
/// repeated over the query heads of a group) at prepare(), untimed, and runs only the two
/// batched GEMMs on cuBLAS (cublasGemmStridedBatchedEx): S = scale * Q K^T
/// ([B*Hq, Tq, Tk]) then O = S V (S stands in for P). fp32 inputs (under tf32 or bf16:
/// eager's fp32 matmuls run TF32 under torch's "high"/"medium") use fp32 copies and
/// CUBLAS_COMPUTE_32F_FAST_TF32; bf16/fp16 inputs use copies of their dtype, S in that dtype
/// and CUBLAS_COMPUTE_32F (as eager's matmuls), under any policy, fp32 inputs under the fp32
/// policy CUBLAS_COMPUTE_32F. The softmax, mask and scale passes and the copies are not
/// charged. It computes no attention output: verifiable() is false.
std::unique_ptr<AttentionCandidate> make_attention_vendor_bound(const AttentionProblem& p, Precision policy);

/// The vendor lower bound's realized.json note; for a problem of form "sdpa" it adds that
/// eager's fused scaled_dot_product_attention kernels are not what the bound describes.
std::string attention_vendor_note(const AttentionProblem& p, Precision policy);

}  // namespace fact::realize
