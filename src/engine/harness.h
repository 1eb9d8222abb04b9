// The verify/tune harness every family uses (docs/00-design.md §5, §6): a candidate's
// outcome, preparing a candidate, recording its times.
#pragma once
#include <exception>
#include <string>

#include "engine/gpu_context.h"
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

}  // namespace fact::realize
