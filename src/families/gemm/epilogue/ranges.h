// Range analysis of an epilogue tree for code generation (docs/04-realization.md, "Ranges in
// the epilogue"). Every leaf but a scalar — the GEMM result, the bias, a tail input — may
// hold any value; each node's interval follows by the interval arithmetic verification
// uses (eval_epilogue_range, epilogue_program.h). Where an interval proves an op does
// nothing or needs less, the generated tail says so:
//   - a clamp / hardtanh bound the argument never crosses is dropped (both bounds: the op
//     goes), and relu of an argument that is never negative goes — judged by
//     epilogue_branch_reach, as verification judges which branch sides can occur;
//   - erf of an argument within |z| <= 1, and gelu of one within |x| <= sqrt(2), use
//     fact_erf_bounded (bounded_math.h) instead of CUDA's erff ("erf_bounded",
//     "gelu_bounded": ops of generated code only).
// Each rewrite is exact in real arithmetic (NaN still propagates), with a margin of 1e-5
// (relative, at least 1e-5 absolute) between the interval and the bound for fp32 rounding
// of the argument. It does not cover an fp32 argument that cancellation or overflow puts far
// from its real value (erf((x + 3e7) - 3e7) of a bounded x): there the unrewritten fp32 tail
// is as far from float64, and verification, which still checks the kernel against the tree
// as discovered, rejects both.
#pragma once
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "families/gemm/epilogue/program.h"

namespace fact::realize {

/// The interval [lo, hi] that subtree `t` (discovery's form: {"acc"}, {"scalar"},
/// {"input"}, {"op", "args"}) can take over every value of acc and of its inputs;
/// [-inf, inf] where nothing is known. Throws fact::Error for a tree compile_epilogue
/// rejects.
std::pair<double, double> epilogue_tree_range(const nlohmann::json& t);

/// Which ways branching instruction `i` of `prog` (epilogue_op_branches) can go for any
/// acc and inputs, judged with the rewrites' margin: `through` x > 0 / x > the lower bound /
/// x < the upper bound, `other` the opposite; [lo, hi] the interval of its argument.
struct BranchReach {
  bool through = true, other = true;
  double lo = -INFINITY, hi = INFINITY;
};
/// One entry per instruction of `prog` (all-reachable for those that do not branch).
std::vector<BranchReach> epilogue_branch_reach(const EpilogueProgram& prog);

/// `tree` rewritten as above; `notes` (when given) gets one line per rewrite, e.g.
/// "hardtanh: the argument lies in [-0.107, 0.841]; the op is dropped". A tree that
/// compile_epilogue rejects is returned unchanged. A clamp whose lower bound exceeds its
/// upper one (torch.clamp: the upper bound everywhere) keeps its upper bound.
nlohmann::json simplify_epilogue_by_range(const nlohmann::json& tree, std::vector<std::string>* notes = nullptr);

}  // namespace fact::realize
