// Verification (docs/00-design.md §5) and tuning (§6) of fused-attention candidates on the
// GPU (docs/06-verification.md, "Attention").
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/attention/bound.h"
#include "families/attention/candidates.h"
#include "families/attention/space.h"
#include "engine/harness.h"
#include "engine/kernel_dtype.h"

namespace fact::realize {

/// The error terms of a family (attention_bound.h), with u the MMA type's rounding as
/// gemm_tolerance takes it (tf32 2^-10: the template rounds Q and P to nearest but passes K
/// and V as raw fp32 bits, which the tensor cores truncate; bf16 2^-8; fp16 2^-11; 3xtf32
/// 2^-21: two tf32 parts leave 2^-22, the dropped small x small product 2^-22 more): fp32
/// inputs round Q, K and V (u_qk = 2u, u_v = u); bf16/fp16 inputs are exact operands
/// (u_qk = u_v = 0; the template scales S in fp32, not Q). P is rounded: u_p = u. O's
/// rounding: unit_roundoff of its dtype, plus 2^-25 absolute for fp16 (subnormals). fp16
/// math stores P as fp16 (p_subnormal). Margin 2.
AttentionErrorTerms attention_error_terms(const AttentionFamily& family);

/// The fp32 policy's limit on max |O - ref| / max |ref| for a fp32-accurate (3xtf32) kernel,
/// checked on the draws whose softmax is neither peaky nor a near-zero average (normal,
/// normal-2, uniform01), on top of the element bounds: 16 2^-24 (1 + sqrt(D) + sqrt(Tk)) +
/// 2^-24, in the spirit of gemm_tolerance's fp32 rule (8 u_in + u_out + 8 2^-24 sqrt(K)) for
/// two chained products. E.g. D 96, Tk 512: 3.2e-5 (measured: 3xtf32 9.2e-7, eager fp32
/// 3.0e-7, tf32 6.7e-4; docs/perf-notes.md v6). The element bounds alone, worst cases, would
/// pass a tf32-accurate kernel.
double attention_fp32_tolerance(const AttentionProblem& p);

/// The (batch, head) pairs verified against the float64 reference, as b * heads + h: all
/// when batch * heads <= 64, else 32 spread evenly over the range, the first and the last
/// included.
std::vector<int64_t> attention_sample_pairs(int64_t batch, int64_t heads);

/// Elements of padding poisoned before and after O's allocation: a kernel that writes
/// outside O's elements (there, or in the padding between strided rows) fails.
constexpr int64_t kAttentionGuardElements = 256;

/// Verifies every verifiable candidate on five draws of Q, K and V (normal, normal with
/// another seed, uniform [0, 1), large x30 — a peaky softmax — and small x1e-4, x1e-2 for
/// fp16), filled over the whole extent their strides span, with a fresh mask per draw
/// (attention_kernels.h, fill_attention_mask: some keys removed and, when the mask has a
/// row stride and seq_q >= 2, one row per (batch, head) with every key removed), and O
/// poisoned with NaN before each run (its guards too). Per draw and candidate: on the sampled
/// heads every element within its bound of the float64 reference (NaN where every key is
/// removed), the reference not constant along its rows and the output not constant along
/// every row; over the whole of O, every element written (finite), rows with every key
/// removed NaN, nothing written outside O's elements. Then times the survivors and the
/// unverifiable ones (the vendor bound) alternating round by round (time_alternating).
/// `family` is the FACT kernels' family (null: vendor-only, nothing is verified).
/// A candidate's `tolerance` is the largest element bound relative to max |ref| over its
/// draws (so a passing candidate's max_rel_err never exceeds it). A 3xtf32 (fp32 policy)
/// kernel must also meet attention_fp32_tolerance on the moderate draws. `verification`,
/// when given, receives {"draws": [{"draw", "scale", "dead_rows", "nan_rows_sampled",
/// "dead_rows_total"}], "sampled_heads", "heads", "worst_bound_ratio": {kernel: max |o - ref|
/// / bound}, "fp32_tolerance" (3xtf32 only)}. Throws fact::Error only when the GPU itself
/// fails (allocation, reference).
std::vector<CandidateOutcome> verify_and_tune_attention(const AttentionProblem& p, const AttentionFamily* family,
                                                        std::vector<std::unique_ptr<AttentionCandidate>>& candidates,
                                                        GpuContext& gpu, int warmup = 5, int trials = 30,
                                                        bool verbose = false, nlohmann::json* verification = nullptr);

}  // namespace fact::realize
