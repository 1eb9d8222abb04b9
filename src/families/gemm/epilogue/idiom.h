// Epilogue idioms: composite functions written out as elementwise ops (x * sigmoid(x),
// minGPT's NewGELU), recognized by a pattern (discover/pattern.h) and computed as the one
// op they are. docs/03-rules.md, "Idioms".
//
// Recognizing an idiom changes only the tail's expression: Swish written out reads x once
// instead of twice (with x = acc + bias, the bias is loaded once), and the fused kernel
// evaluates silu(x) with one accurate fp32 function instead of a chain of rounded ops.
// The matched nodes stay in the tail (the epilogue replaces them all), and single use is
// the tail's own rule: a value inside the idiom read by another op of the tail keeps its
// expression there.
#pragma once

#include <string_view>
#include <vector>

#include "discover/pattern.h"

namespace fact::discover {

struct Idiom {
  std::string_view name;     // "silu_written_out": `factc rules` row
  std::string_view meaning;  // the PyTorch it stands for
  std::string_view op;       // the epilogue op (expression name) it becomes: "silu"
  std::vector<PatternExpr> forms;  // alternatives; each binds the argument as capture "x"
  std::string_view tests;
};

/// The idioms FACT ships, one per file in discover/idioms/, in the order they are tried.
const std::vector<Idiom>& epilogue_idioms();

}  // namespace fact::discover
