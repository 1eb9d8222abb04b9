// Verification (docs/00-design.md §5) and tuning (docs/00-design.md §6) of GEMM candidates on the GPU.
#pragma once
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/gemm/candidates.h"
#include "engine/timing.h"

namespace fact::realize {

/// One candidate's outcome. status: "ok" (verified and timed), "quarantined" (reason says
/// why: cannot implement, threw, or failed verification on a named draw).
struct CandidateOutcome {
  std::string kernel, impl, status = "ok", reason;
  double max_rel_err = 0;   // max over draws of max|d - ref| / max|ref|
  double fro_rel_err = 0;   // max over draws of ||d - ref|| / ||ref||
  double tolerance = 0;     // the policy's bound on max_rel_err for this K
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int trials = 0;
  size_t workspace_bytes = 0;
  std::string note;         // how the time was formed, when it is not the run's alone
  bool verified = true;     // false: a time only (a lower bound computing no output), no error figures
};

/// Records one candidate's trial times (time_alternating's) in its outcome.
inline void record_times(CandidateOutcome& o, const TrialStats& t) {
  o.trials = t.trials;
  o.min_ms = t.min_ms;
  o.max_ms = t.max_ms;
  o.median_ms = t.median_ms;
}

/// Prepares one candidate (GEMM or attention) for `args` and records it in `o`: a non-empty
/// reason from prepare() quarantines it, and o.workspace_bytes is read either way; an
/// exception from prepare() or workspace_bytes() quarantines it with the exception's message,
/// and then the function returns false (true otherwise).
template <class Candidate, class Args>
bool prepare_candidate(Candidate& c, const Args& args, GpuContext& gpu, CandidateOutcome& o) {
  try {
    const std::string why = c.prepare(args, gpu);
    if (!why.empty()) {
      o.status = "quarantined";
      o.reason = why;
    }
    o.workspace_bytes = c.workspace_bytes();
    return true;
  } catch (const std::exception& e) {
    o.status = "quarantined";
    o.reason = e.what();
    return false;
  }
}

/// The bound on max|d - ref| / max|ref| a correct kernel meets for this problem: input
/// rounding of the MMA type (tf32 truncates to 10 mantissa bits: 2^-10; bf16 2^-8; fp16
/// 2^-11; fp32 2^-24), twice for the product, four-fold margin; plus the output dtype's
/// rounding; plus fp32 accumulation over K (8 * 2^-24 * sqrt(K), random-sign growth).
double gemm_tolerance(const GemmProblem& p, Precision policy);

/// Bytes per second an ATen elementwise kernel moves: 90 % of the H200's measured copy
/// bandwidth, 4.23 TB/s (docs/perf-notes.md, "Ceilings").
constexpr double kAtenPassBandwidth = 0.9 * 4.23e12;

/// Milliseconds the tail of a fused problem takes as eager ATen ops: one kernel per node,
/// each reading and writing D once (external inputs are small next to D or read once
/// either way), at kAtenPassBandwidth.
double aten_tail_ms(const GemmProblem& p);

/// The unit roundoff of storing in `d`: 2^-24 (fp32), 2^-11 (fp16), 2^-8 (bf16).
double unit_roundoff(DType d);

/// Verifies every candidate on several draws (normal, normal with another seed, uniform
/// [0,1), large magnitude, small magnitude) against the float64 reference, with D poisoned
/// (NaN) before each run; then times the survivors alternating round by round, with an L2
/// flush before each trial, after `warmup` runs each, over `trials` rounds.
/// A fused tail (p.fused()) is applied to the float64 GEMM in float64; each element must
/// lie within epilogue_error_bound of it, with delta = tolerance x max |acc|. A draw whose
/// reference cannot tell right from wrong (TailCheck::examine) is skipped and logged, and
/// while a branch of the tail has been seen one way only, draws at other scales of acc
/// follow. With no informative draw at all, every candidate is quarantined.
/// A vendor candidate of a fused problem is verified as the vendor GEMM plus FACT's tail
/// pass; what the runtime runs when the vendor path wins is the tail as ATen ops, one kernel
/// per node, so its times become the measured GEMM (less the separately measured tail
/// pass) plus aten_tail_ms (`note` says so).
/// `verification`, when given, receives {"draws": [{"draw", "scale", "informative",
/// "reason"?}], "unexercised": "...", "unreachable"?: "...", "tail_pass_ms": ...,
/// "aten_tail_ms": ...}.
/// Throws fact::Error only when the GPU itself fails (allocation, reference).
std::vector<CandidateOutcome> verify_and_tune(const GemmProblem& p, Precision policy,
                                              std::vector<std::unique_ptr<GemmCandidate>>& candidates,
                                              GpuContext& gpu, int warmup = 5, int trials = 30,
                                              bool verbose = false, nlohmann::json* verification = nullptr);

}  // namespace fact::realize
