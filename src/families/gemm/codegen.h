// Renders a CUTLASS kernel's translation unit from the family template.
#pragma once
#include <map>
#include <string>

#include "engine/kernel_template.h"
#include "families/gemm/space.h"

namespace fact::realize {

/// The complete .cu source of one kernel: the sm90 GEMM template with the family's types
/// and the configuration substituted, and the C ABI (kernel_abi.h) pasted in, so the text
/// alone determines the object (it is hashed into the cache key).
/// Throws fact::Error if a template placeholder is left unfilled.
/// The placeholders a configuration fills in a sm90 GEMM template (the GEMM's and SwiGLU's):
/// TILE_M/N/K, CLUSTER_M/N, SCHEDULE ("cooperative" | "pingpong") and KERNEL_SCHEDULE.
std::map<std::string, std::string> config_placeholders(const GemmConfig& config);

std::string render_gemm_sm90(const GemmFamilyKey& family, const GemmConfig& config);

}  // namespace fact::realize
