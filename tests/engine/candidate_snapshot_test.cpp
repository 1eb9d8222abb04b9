// The candidate snapshot: for every example under examples/ (its graph exported once into
// tests/golden/candidates/<example>.graph.json by export_graphs.py there), under every
// precision policy, the plan discovery makes and every candidate realization would build
// from it (the whole tuning space, no budget), rendered but not compiled, and after them the
// kernels those candidates run besides (a fused tail's tail kernel). Each is one line of
// tests/golden/candidates/candidates.txt:
//   <example> <policy> <pattern> <kernel name> <cache key>
// and a pattern without candidates one line "<example> <policy> <pattern> none: <reason>".
// The key is the content-addressed cache key (build.h cache_key) under a fixed toolchain,
// so an unchanged line means the same generated source, byte for byte. FACT_UPDATE_GOLDEN=1
// rewrites the list; its diff is the review of a change to generated kernels.
#include <gtest/gtest.h>

#include <map>

#include "../golden_util.h"
#include "discover/plan.h"
#include "graph/io.h"
#include "engine/realize.h"

namespace fact::realize {
namespace {

const std::filesystem::path kDir = test::test_dir() / "golden" / "candidates";

// Keys depend on the toolchain only through key_text(): a fixed one keeps the list
// independent of the machine's nvcc.
Toolchain snapshot_toolchain() {
  Toolchain tc;
  tc.nvcc_version_text = "candidate snapshot";
  tc.cutlass_version = "4.2.0";
  return tc;
}

std::vector<std::string> example_stems() {
  std::vector<std::string> stems;
  for (const auto& e : std::filesystem::directory_iterator(kDir)) {
    const std::string name = e.path().filename().string();
    const std::string ext = ".graph.json";
    if (name.size() > ext.size() && name.ends_with(ext)) stems.push_back(name.substr(0, name.size() - ext.size()));
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

std::string snapshot_lines(const std::string& stem, Precision policy) {
  const graph::Graph g = graph::load_graph(kDir / (stem + ".graph.json"));
  const discover::Plan plan = discover::make_plan(g, discover::builtin_rules(), policy);
  const nlohmann::json plan_json = nlohmann::json::parse(discover::plan_to_json_string(plan));
  std::map<std::string, BuildRequest> requests;
  const auto patterns = plan_candidates(plan_json, policy, 0, std::nullopt, requests);
  const Toolchain tc = snapshot_toolchain();
  const std::string prefix = stem + " " + std::string(precision_name(policy)) + " ";
  std::string out;
  for (const auto& p : patterns) {
    if (p.kernels.empty()) out += prefix + p.id + " none: " + p.unsupported + "\n";
    for (const auto* names : {&p.kernels, &p.companions}) {
      for (const auto& k : *names) out += prefix + p.id + " " + k + " " + cache_key(requests.at(k), tc) + "\n";
    }
  }
  return out;
}

TEST(CandidateSnapshot, EveryExampleEveryPolicy) {
  const auto stems = example_stems();
  ASSERT_GE(stems.size(), 30u) << "graphs missing from " << kDir;
  std::string all;
  for (const auto& stem : stems) {
    for (Precision policy : {Precision::tf32, Precision::fp32, Precision::bf16}) all += snapshot_lines(stem, policy);
  }
  test::expect_golden(kDir / "candidates.txt", all);
}

}  // namespace
}  // namespace fact::realize
