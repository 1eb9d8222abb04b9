// The pick of a family's tuning space: configurations ranked by their estimated seconds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace fact::realize {

// One configuration with its estimate (seconds, from the family's cost model) and its
// kernel name, the tie-break that makes the pick the same on every run.
template <typename Config>
struct RankedConfig {
  Config config;
  double seconds;
  std::string name;
};

// The `cap` configurations of `ranked` estimated fastest, fastest first (ties by name).
template <typename Config>
std::vector<Config> fastest_first(std::vector<RankedConfig<Config>> ranked, size_t cap) {
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.seconds != b.seconds ? a.seconds < b.seconds : a.name < b.name;
  });
  std::vector<Config> out;
  for (size_t i = 0; i < ranked.size() && i < cap; ++i) out.push_back(ranked[i].config);
  return out;
}

}  // namespace fact::realize
