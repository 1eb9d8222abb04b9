// Runnable norm candidates: a generated kernel loaded from its shared library, and the
// vendor path's lower bound (what the ATen nodes cost at least: one pass over their bytes).
#pragma once
#include <memory>
#include <string>

#include "engine/harness.h"
#include "families/norm/abi.h"
#include "families/norm/problem.h"

namespace fact::realize {

/// FactNormArgs for `p` on the given device operands (null for an absent one); the output
/// and the sum are contiguous [rows, cols] (row stride cols), as the runtime allocates them.
FactNormArgs make_norm_args(const NormProblem& p, const void* x, const void* residual, const void* weight,
                            const void* bias, void* out, void* sum);

/// A runnable norm candidate (engine/harness.h).
using NormCandidate = Candidate<FactNormArgs>;

/// Loads `<symbol>_can_implement`, `_workspace_bytes` and `_run` from `library` (dlopen).
/// Throws fact::Error naming an unloadable library or a missing symbol.
std::unique_ptr<NormCandidate> load_norm_candidate(const std::string& name, const std::string& library,
                                                   const std::string& symbol);

/// A return code of the norm ABI in words.
std::string norm_return_code_text(int rc);

/// The vendor path's lower bound, named "vendor": one device-to-device copy of half the
/// bytes the fused kernel moves (a copy reads and writes each byte), which no ATen norm,
/// add or cast can beat. It computes no output: verifiable() is false, and it wins only
/// when no kernel verified (fact optimize then times the ATen nodes in the module).
std::unique_ptr<NormCandidate> make_norm_vendor_bound(const NormProblem& p);

/// The bytes the fused kernel moves: x (and the residual) read, the output (and the sum)
/// written, weight and bias read once.
double norm_bytes(const NormProblem& p);

}  // namespace fact::realize
