// Realization's use of the tuning registry (src/registry): the key of a pattern's tuning
// on this GPU and toolchain, replaying a stored result, and recording a new one.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "engine/build.h"
#include "engine/gpu_context.h"
#include "registry/registry.h"

namespace fact::realize {

/// The registry key of tuning `problem` (the plan's problem object) on `gpu` with `tc`
/// under `policy`: every field that can change the answer (docs/00-design.md §3).
registry::RecordKey tuning_key(const nlohmann::json& problem, const GpuInfo& gpu,
                               const Toolchain& tc, Precision policy);

/// Sets a realized.json CUTLASS candidate's build fields from `b`: "key", "cached", and for a
/// successful build "object", "library" and "symbol" (b.symbol, or kernel_symbol of the name
/// when empty; all three removed when the build failed).
void set_build_fields(nlohmann::json& candidate, const BuildResult& b);

/// Sets the build fields of a CUTLASS candidate named `<kernel>[+options]` (candidate_kernel)
/// from the build of `<kernel>` in `built`; they are removed when `<kernel>` was not built
/// in this run. What the options mean is its family's (PatternRealization::candidate_fields).
void set_candidate_build_fields(nlohmann::json& candidate, const std::map<std::string, BuildResult>& built);

/// Fills a realized.json pattern entry (`out`: candidates, winner, winner_impl, tune_s 0,
/// registry "hit") from a stored record. The object/library paths of CUTLASS candidates
/// come from this run's builds (`built`, by kernel name), not from the record; the fields its
/// family added to a candidate (candidate_fields) are the record's. Returns
/// false, leaving `out` unchanged, when the record's CUTLASS winner was not built now or
/// was built from other source (its recorded build key differs: never verified), or when
/// one of `kernels` (this run's CUTLASS kernels and companions for the pattern) was never timed or run by the
/// record (another tuning budget or space, or it failed to build then), or when the
/// winner's companion kernel (a vendor GEMM's tail kernel) was not built now or from other
/// source: the caller then tunes afresh. Companions' build fields come from this run too.
bool replay_record(const registry::TuningRecord& record,
                   const std::map<std::string, BuildResult>& built,
                   const std::vector<std::string>& kernels, nlohmann::json& out);

/// The record of a finished tuning: `out` is the pattern's realized.json entry with a
/// winner. Paths are left in, but replay_record never trusts them.
registry::TuningRecord make_record(const registry::RecordKey& key, const nlohmann::json& out);

}  // namespace fact::realize
