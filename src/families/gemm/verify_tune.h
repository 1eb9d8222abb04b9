// Verification (docs/00-design.md §5) and tuning (docs/00-design.md §6) of GEMM candidates on the GPU.
#pragma once
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/gemm/candidates.h"
#include "engine/harness.h"

namespace fact::realize {

/// The bound on max|d - ref| / max|ref| a correct kernel meets for this problem: input
/// rounding of the MMA type (tf32 truncates to 10 mantissa bits: 2^-10; bf16 2^-8, also for
/// fp32 inputs under the bf16 policy, which are rounded to bf16 in the staging copy or in
/// cuBLAS; fp16 2^-11; fp32 2^-24), twice for the product, four-fold margin; plus the output
/// dtype's rounding; plus fp32 accumulation over K (8 * 2^-24 * sqrt(K), random-sign
/// growth). Sources (docs/06-verification.md): Higham 2002, §2.2 and §3.1, for the rounded
/// products; Higham and Mary 2019 for the random-walk growth.
double gemm_tolerance(const GemmProblem& p, Precision policy);

/// Bytes per second an ATen elementwise kernel moves: 90 % of the H200's measured copy
/// bandwidth, 4.23 TB/s (docs/perf-notes.md, "Ceilings").
constexpr double kAtenPassBandwidth = 0.9 * 4.23e12;

/// Milliseconds the tail of a fused problem takes as eager ATen ops: one kernel per node,
/// each reading and writing D once (external inputs are small next to D or read once
/// either way), at kAtenPassBandwidth.
double aten_tail_ms(const GemmProblem& p);

/// What a GEMM check reads back after a compare kernel: *stats_device copied into `st`
/// (synchronizing), o's max and Frobenius relative errors updated (`max_rel` is this draw's),
/// and the reason every GEMM output fails whatever its reference (an all-zero reference,
/// NaN/Inf where the reference is finite, one constant value over more than one of its
/// `elements`), or "".
std::string read_compare_stats(const CompareStats* stats_device, int64_t elements, GpuContext& gpu,
                               CandidateOutcome& o, CompareStats& st, double& max_rel);

/// Verifies every candidate on several draws (normal, normal with another seed, uniform
/// [0,1), large magnitude, small magnitude) against the float64 reference, with D poisoned
/// (NaN) before each run; then times the survivors alternating round by round, with an L2
/// flush before each trial, after `warmup` runs each, over `trials` rounds.
/// A fused tail (p.fused()) is applied to the float64 GEMM in float64; each element must
/// lie within epilogue_error_bound of it, with delta = tolerance x max |acc|. A draw whose
/// reference cannot tell right from wrong (TailCheck::examine) is skipped and logged, and
/// while a branch of the tail has been seen one way only, draws at other scales of acc
/// follow. With no informative draw at all, every candidate is quarantined.
/// A vendor candidate of a fused problem is verified as the vendor GEMM plus its tail pass.
/// With the generated tail kernel (its companion), that is what the runtime runs when it
/// wins, and its time stands. Without (the tail kernel did not build), the pass is FACT's
/// interpreter while the runtime would run the tail as ATen ops, one kernel per node, so its
/// times become the measured GEMM (less the separately measured interpreting pass) plus
/// aten_tail_ms (`note` says so).
/// `verification`, when given, receives {"draws": [{"draw", "scale", "informative",
/// "reason"?}], "unexercised": "...", "unreachable"?: "...", "tail_pass_ms": ...,
/// "aten_tail_ms": ...}.
/// Throws fact::Error only when the GPU itself fails (allocation, reference).
std::vector<CandidateOutcome> verify_and_tune(const GemmProblem& p, Precision policy,
                                              std::vector<std::unique_ptr<GemmCandidate>>& candidates,
                                              GpuContext& gpu, int warmup = 5, int trials = 30,
                                              bool verbose = false, nlohmann::json* verification = nullptr);

}  // namespace fact::realize
