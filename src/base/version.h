// FACT's version and the schema versions of the files it reads and writes.
#pragma once

#include <string_view>

namespace fact {

inline constexpr std::string_view kVersion = "0.1.0";
inline constexpr int kGraphFormatVersion = 1;  // docs/02-graph-format.md: static sizes
inline constexpr int kSymbolicGraphFormatVersion = 2;  // docs/02: "symbols" and size expressions
inline constexpr int kPlanFormatVersion = 1;   // docs/03-rules.md
inline constexpr int kSymbolicPlanFormatVersion = 2;  // docs/03: a plan with "symbols"

}  // namespace fact
