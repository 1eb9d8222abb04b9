// Vetted examples: starting configurations per rule, MMA type, layouts and shape class,
// shipped as data (data/vetted/gemm_sm90a.json, embedded in factc at build time) and
// retrieved by nearest shape, so the tuning search tries a known-good configuration first
// and a small --tune-budget still builds it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "families/gemm/space.h"

namespace fact::realize {

struct VettedExample {
  std::string name;
  GemmFamilyKey family;          // mma, layouts, bias (element type follows mma)
  int64_t m, n, k, l;
  GemmConfig config;
  double median_ms;              // what it measured where it was vetted
};

/// Parses vetted examples (format "fact.vetted", version 1). Throws fact::Error naming
/// the bad entry.
std::vector<VettedExample> parse_vetted(const std::string& json_text);

/// The examples shipped with factc (data/vetted/*.json).
const std::vector<VettedExample>& shipped_vetted();

/// The example of the same family (mma, layouts, bias, staging; a fused tail is ignored)
/// nearest to `p` in shape: the
/// smallest sum of |log2| ratios of M, N, K and L. std::nullopt when no example shares
/// the family.
std::optional<VettedExample> nearest_vetted(const std::vector<VettedExample>& examples,
                                            const GemmFamilyKey& family, const GemmProblem& p);

/// Moves (`family`, `config`) to the front of `choices` (inserting it when absent): the
/// seed of the search.
void seed_choices(std::vector<GemmKernelChoice>& choices, const GemmFamilyKey& family, const GemmConfig& config);

}  // namespace fact::realize
