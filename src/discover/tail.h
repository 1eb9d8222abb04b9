// The elementwise tail after a pattern's output that its kernel's epilogue could compute
// (docs/03-rules.md, "Epilogues"): what a plan pattern holds of it, and the answer of a
// rule's tail search (Rule::find_tail). The search itself belongs to the family whose
// kernels fuse tails (the GEMM's: src/families/gemm/epilogue/epilogue.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fact::discover {

/// One fusable tail.
struct Epilogue {
  std::vector<std::string> nodes;  // the tail's nodes, graph order
  std::string output;              // the value the fused kernel writes instead of acc
  /// Canonical expression, e.g. "relu(mul(sub(acc, 2.0), 1.5))"; external tensors are
  /// c0, c1, ... in order of first use.
  std::string expr;
  nlohmann::ordered_json tree;     // the same as JSON: {"op": ..., "args": [...]},
                                   // {"acc": true}, {"scalar": v}, {"input": "c0"}
  std::vector<std::pair<std::string, std::string>> inputs;  // "c0" -> graph value
  std::vector<std::string> broadcast;  // per input: "n" (a row vector along N), "m" (a
                                       // column along M), "mn" (D's shape), "scalar"
  int64_t saved_bytes = 0;  // what the ATen tail moves beyond reading its external inputs
};

/// The result of looking for a tail after the kernel output `acc`: the largest
/// fusable tail, or none with `stop` saying why the first candidate op could not join
/// (empty when `acc` has no elementwise consumer at all).
struct EpilogueSearch {
  std::optional<Epilogue> epilogue;
  std::string stop;
};

}  // namespace fact::discover
