// Epilogues through views that keep the element order (docs/03-rules.md, "Epilogues"):
// GPT-2's Conv1D is addmm then view(B, T, N), and the elementwise tail (NewGELU) comes after
// the view.
#pragma once

#include <string>

#include "families/gemm/epilogue/epilogue.h"

namespace fact::discover {

/// find_epilogue(graph, acc); when that finds no tail and acc (a contiguous [M, N] GEMM
/// output) is read only by a view/reshape to a contiguous shape [.., N] whose leading dims
/// split M, the tail after the view, with the view as its first node (the kernel writes the
/// same elements in the same order; a vector along M is the view's [.., 1]).
EpilogueSearch find_epilogue_through_views(const graph::GraphIndex& graph, const std::string& acc);

}  // namespace fact::discover
