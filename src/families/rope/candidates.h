// Runnable rope candidates: a generated kernel loaded from its shared library, and the
// vendor path's lower bound (what the ATen nodes cost at least: one pass over their bytes).
#pragma once
#include <memory>
#include <string>

#include "engine/harness.h"
#include "families/rope/abi.h"
#include "families/rope/problem.h"

namespace fact::realize {

/// FactRopeArgs for `p` on the given device operands, with the problem's strides.
FactRopeArgs make_rope_args(const RopeProblem& p, const void* x, const void* cos, const void* sin, void* out);

/// A runnable rope candidate (engine/harness.h).
using RopeCandidate = Candidate<FactRopeArgs>;

/// Loads `<symbol>_can_implement`, `_workspace_bytes` and `_run` from `library` (dlopen).
/// Throws fact::Error naming an unloadable library or a missing symbol.
std::unique_ptr<RopeCandidate> load_rope_candidate(const std::string& name, const std::string& library,
                                                   const std::string& symbol);

/// A return code of the rope ABI in words.
std::string rope_return_code_text(int rc);

/// The bytes the fused kernel moves at least: x read and out written once, cos and sin read
/// once each over their own extent (a broadcast table once, not once per row).
double rope_bytes(const RopeProblem& p);

/// The vendor path's lower bound (engine/copy_bound.h) over rope_bytes(p).
std::unique_ptr<RopeCandidate> make_rope_vendor_bound(const RopeProblem& p);

}  // namespace fact::realize
