// The precision policy of a run (docs/00-design.md §4): how fp32 matmul-like ops are computed.
// fp32: fp32-accurate; tf32: TF32 tensor cores with fp32 accumulation; bf16: bf16 operands
// with fp32 accumulation (only when asked for). Shared by discovery and realization.
#pragma once

#include <string>
#include <string_view>

namespace fact {

enum class Precision { fp32, tf32, bf16 };

/// "fp32" | "tf32" | "bf16".
std::string_view precision_name(Precision p);

/// Parses a policy name. Throws fact::Error naming the bad value.
Precision precision_from_name(std::string_view name);

}  // namespace fact
