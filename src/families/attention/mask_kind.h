// The mask kinds of fused attention: the plan's problem.mask strings are the contract
// between discovery (src/families/attention/rule.cpp writes them) and realization
// (src/families/attention/problem.cpp reads them), and the numbers are the kernels'
// {{MASK}} (docs/03-rules.md, "The attention rule"). Shared by discovery and realization.
#pragma once

#include <optional>
#include <string_view>

namespace fact {

/// How the mask removes or weights keys (the kernels' {{MASK}} number in parentheses):
/// none (0); causal (1): key j takes part iff j <= i; additive (2): a tensor of Q's dtype
/// added to the scaled logits; keep (3): a uint8 tensor, nonzero = takes part (SDPA's bool
/// attn_mask); drop (4): a uint8 tensor, nonzero = removed (masked_fill(mask, -inf)).
enum class MaskKind { none = 0, causal = 1, additive = 2, keep = 3, drop = 4 };

/// "none" | "causal" | "additive" | "keep" | "drop" (the plan's spelling).
std::string_view mask_name(MaskKind m);

/// The kind a plan spells `name` (exactly as mask_name writes it); nullopt for any other string.
std::optional<MaskKind> mask_from_name(std::string_view name);

/// True for the kinds that read a mask tensor (additive, keep, drop).
bool mask_has_tensor(MaskKind m);

}  // namespace fact
