// The options of a `factc realize` run the realize tests make without a GPU
// (test_realize_plan.cpp, test_attention_realize.cpp).
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "engine/realize.h"

namespace fact::test {

/// Writes `plan` to dir/plan.json (creating dir) and returns options realizing it into
/// dir/realized.json with its cache in dir/cache, no GPU, one build job.
inline realize::RealizeOptions options_for(const std::filesystem::path& dir, const nlohmann::json& plan) {
  std::filesystem::create_directories(dir);
  write_file(dir / "plan.json", plan.dump());
  realize::RealizeOptions o;
  o.plan = dir / "plan.json";
  o.output = dir / "realized.json";
  o.cache_dir = dir / "cache";
  o.no_gpu = true;
  o.jobs = 1;
  return o;
}

}  // namespace fact::test
