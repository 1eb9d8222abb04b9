// The verify/tune harness every family uses (docs/00-design.md §5, §6; docs/06-verification.md):
// a candidate over the family's argument struct, its outcome, the standard draws, NaN
// poisoning, error statistics, quarantine with reasons, alternating timing and the record of
// times. A family's verify_and_tune brings what only it knows: its inputs, its float64
// reference and its comparison (families/gemm/verify_tune.cpp, families/attention/verify_tune.cpp).
#pragma once
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "engine/cuda_check.h"
#include "engine/device_buffer.h"
#include "engine/gpu_context.h"
#include "engine/gpu_kernels.h"
#include "engine/timing.h"

namespace fact::realize {

/// A runnable candidate of a family whose kernels take `Args` (FactGemmArgs,
/// FactAttentionArgs: the family's abi.h).
template <class Args>
class Candidate {
 public:
  using Arguments = Args;
  virtual ~Candidate() = default;
  virtual const std::string& name() const = 0;
  virtual const char* impl() const = 0;  // "cutlass" (a FACT kernel, linked by compose) | "vendor"
  /// False for a candidate that is timed only: it computes no output to verify (e.g. the
  /// attention vendor lower bound); note() says what its time is.
  virtual bool verifiable() const { return true; }
  virtual std::string note() const { return {}; }
  /// A generated kernel the candidate runs besides its own work ("" for none): a vendor
  /// GEMM's tail kernel (the GEMM family). realized.json records its build and compose
  /// links it when the candidate wins.
  virtual std::string companion() const { return {}; }
  /// Checks the candidate can run `args` and allocates what it needs; returns "" when it
  /// can, else the reason it cannot (the candidate is then quarantined). Throws fact::Error
  /// when the GPU fails.
  virtual std::string prepare(const Args& args, GpuContext& gpu) = 0;
  /// Launches on gpu.stream(). Throws fact::Error with the kernel's return code on failure.
  virtual void run(const Args& args, GpuContext& gpu) = 0;
  virtual size_t workspace_bytes() const { return 0; }
};

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
  std::string companion;    // Candidate::companion()
  bool verified = true;     // false: a time only (a lower bound computing no output), no error figures
};

/// Quarantines `o` with `reason`.
inline void quarantine(CandidateOutcome& o, std::string reason) {
  o.status = "quarantined";
  o.reason = std::move(reason);
}

/// Records one candidate's trial times (time_alternating's) in its outcome.
inline void record_times(CandidateOutcome& o, const TrialStats& t) {
  o.trials = t.trials;
  o.min_ms = t.min_ms;
  o.max_ms = t.max_ms;
  o.median_ms = t.median_ms;
}

/// Prepares one candidate for `args` and records it in `o`: a non-empty reason from
/// prepare() quarantines it, and o.workspace_bytes is read either way; an exception from
/// prepare() or workspace_bytes() quarantines it with the exception's message, and then the
/// function returns false (true otherwise).
template <class Candidate, class Args>
bool prepare_candidate(Candidate& c, const Args& args, GpuContext& gpu, CandidateOutcome& o) {
  try {
    const std::string why = c.prepare(args, gpu);
    if (!why.empty()) quarantine(o, why);
    o.workspace_bytes = c.workspace_bytes();
    return true;
  } catch (const std::exception& e) {
    quarantine(o, e.what());
    return false;
  }
}

/// One outcome per candidate, named as the candidate, each prepared for `args`
/// (prepare_candidate); a prepare that threw may leave a CUDA error behind, which is cleared.
template <class Args>
std::vector<CandidateOutcome> prepare_outcomes(std::vector<std::unique_ptr<Candidate<Args>>>& cands, const Args& args,
                                               GpuContext& gpu) {
  std::vector<CandidateOutcome> out(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    out[i].kernel = cands[i]->name();
    out[i].impl = cands[i]->impl();
    out[i].verified = cands[i]->verifiable();
    out[i].note = cands[i]->note();
    out[i].companion = cands[i]->companion();
    if (!prepare_candidate(*cands[i], args, gpu, out[i])) cudaGetLastError();
  }
  return out;
}

/// One draw of the inputs: a distribution times a scale. `moderate`: neither peaky nor
/// cancelling to near zero (a family may hold such draws to a tighter check).
struct Draw {
  const char* name;
  Distribution dist;
  double scale;
  bool moderate = true;
};

/// The standard draws: normal, normal with another seed, uniform [0, 1) (the moderate
/// ones), then normal x `large` and normal x `small`.
inline std::vector<Draw> standard_draws(double large, double small) {
  return {{"normal", Distribution::Normal, 1.0, true},
          {"normal-2", Distribution::Normal, 1.0, true},
          {"uniform01", Distribution::Uniform01, 1.0, true},
          {"large", Distribution::Normal, large, false},
          {"small", Distribution::Normal, small, false}};
}

/// Fills `out` with NaN in fp32, fp16 and bf16 (every byte 0xff) on `stream`: an element a
/// kernel leaves unwritten reads as NaN.
inline void poison_nan(DeviceBuffer& out, cudaStream_t stream) {
  FACT_CUDA(cudaMemsetAsync(out.get(), 0xff, out.bytes(), stream));
}

/// max|err| / max|ref| and ||err|| / ||ref|| (infinite for an all-zero reference).
struct RelativeErrors {
  double max_rel, fro_rel;
};
inline RelativeErrors relative_errors(double max_abs_err, double max_abs_ref, double sum_sq_err, double sum_sq_ref) {
  return {max_abs_ref > 0 ? max_abs_err / max_abs_ref : INFINITY,
          sum_sq_ref > 0 ? std::sqrt(sum_sq_err / sum_sq_ref) : INFINITY};
}

/// Runs every candidate still "ok" and verifiable on the current draw: `output` poisoned with
/// NaN, the candidate run, its launch checked, then `check(i, outcome)` compares (the
/// family's reference and error model) and returns "" or why it fails, which quarantines it
/// as "verification failed on draw '<name>': <why>". A run that throws quarantines it as
/// "run failed: <message>" and clears the CUDA error.
template <class Args, class Check>
void verify_draw(std::vector<std::unique_ptr<Candidate<Args>>>& cands, std::vector<CandidateOutcome>& out,
                 const Args& args, GpuContext& gpu, const Draw& draw, DeviceBuffer& output, Check&& check) {
  for (size_t i = 0; i < cands.size(); ++i) {
    auto& o = out[i];
    if (o.status != "ok" || !cands[i]->verifiable()) continue;
    try {
      poison_nan(output, gpu.stream());
      cands[i]->run(args, gpu);
      FACT_CUDA_LAUNCH();
      const std::string why = check(i, o);
      if (!why.empty()) quarantine(o, fmt::format("verification failed on draw '{}': {}", draw.name, why));
    } catch (const std::exception& e) {
      quarantine(o, std::string("run failed: ") + e.what());
      cudaGetLastError();
    }
  }
}

/// Tuning: every candidate still "ok" alternates with the others round by round
/// (time_alternating: `warmup` runs each, then `trials` rounds, an L2 flush before each
/// trial), after `before_timing` (e.g. fresh inputs) ran. `extra` (timed in the same rounds,
/// last, only when some candidate is timed) are timed too; their stats come back, the
/// candidates' go into their outcomes.
template <class Args>
std::vector<TrialStats> time_survivors(std::vector<std::unique_ptr<Candidate<Args>>>& cands,
                                       std::vector<CandidateOutcome>& out, const Args& args, GpuContext& gpu,
                                       int warmup, int trials, const std::function<void()>& before_timing,
                                       std::vector<std::function<void()>> extra = {}) {
  std::vector<size_t> live;
  for (size_t i = 0; i < cands.size(); ++i)
    if (out[i].status == "ok") live.push_back(i);
  std::vector<std::function<void()>> timed;
  for (size_t i : live) timed.push_back([&, i] { cands[i]->run(args, gpu); });
  if (!live.empty())
    for (auto& f : extra) timed.push_back(std::move(f));
  before_timing();
  const std::vector<TrialStats> times = time_alternating(timed, gpu, warmup, trials);
  for (size_t j = 0; j < live.size(); ++j) record_times(out[live[j]], times[j]);
  return std::vector<TrialStats>(times.begin() + std::ptrdiff_t(live.size()), times.end());
}

}  // namespace fact::realize
