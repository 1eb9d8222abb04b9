#include "families/gemm/vetted.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_format.h"
#include "engine/embedded_templates.h"

using nlohmann::json;

namespace fact::realize {

namespace {

DType element_of(const std::string& mma) {
  if (mma == "tf32" || mma == "3xtf32") return DType::f32;
  if (mma == "bf16") return DType::bf16;
  if (mma == "f16") return DType::f16;
  throw Error("vetted example: unknown mma '" + mma + "'");
}

Layout layout_of(const std::string& s) {
  if (s == "row") return Layout::Row;
  if (s == "col") return Layout::Col;
  throw Error("vetted example: unknown layout '" + s + "'");
}

bool same_config(const GemmConfig& a, const GemmConfig& b) {
  return a.tile_m == b.tile_m && a.tile_n == b.tile_n && a.tile_k == b.tile_k &&
         a.cluster_m == b.cluster_m && a.cluster_n == b.cluster_n && a.schedule == b.schedule &&
         a.scheduler == b.scheduler;
}

}  // namespace

std::vector<VettedExample> parse_vetted(const std::string& text) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || doc.value("format", "") != "fact.vetted" || integer_or(doc, "version", 0) != 1) {
    throw Error("vetted examples: not a fact.vetted version 1 document");
  }
  std::vector<VettedExample> out;
  for (const auto& e : doc.value("examples", json::array())) {
    try {
      VettedExample v;
      v.name = e.at("name");
      const std::string mma = e.at("mma");
      v.family = {mma, element_of(mma), layout_of(e.at("layout_a")), layout_of(e.at("layout_b")), e.at("bias")};
      // Optional: which operands are staged ("", "A", "B", "AB"; 3xTF32 stages both) and
      // whether D is written without TMA.
      const std::string stage = e.value("stage", mma == "3xtf32" ? "AB" : "");
      if (stage != "" && stage != "A" && stage != "B" && stage != "AB") throw Error("stage '" + stage + "'");
      v.family.stage_a = stage.find('A') != std::string::npos;
      v.family.stage_b = stage.find('B') != std::string::npos;
      v.family.split = mma == "3xtf32" ? 3 : 1;
      v.family.align1_d = e.value("align1_d", false);
      v.m = e.at("m");
      v.n = e.at("n");
      v.k = e.at("k");
      v.l = e.value("l", int64_t{1});
      const json& c = e.at("config");
      const std::string schedule = c.at("schedule"), scheduler = c.at("scheduler");
      if (schedule != "coop" && schedule != "pingpong") throw Error("schedule '" + schedule + "'");
      if (scheduler != "persistent" && scheduler != "streamk") throw Error("scheduler '" + scheduler + "'");
      v.config = {c.at("tile")[0], c.at("tile")[1], c.at("tile")[2], c.at("cluster")[0], c.at("cluster")[1],
                  schedule == "coop" ? Schedule::Cooperative : Schedule::Pingpong,
                  scheduler == "persistent" ? TileScheduler::Persistent : TileScheduler::StreamK};
      v.median_ms = e.value("median_ms", 0.0);
      out.push_back(v);
    } catch (const std::exception& ex) {
      throw Error("vetted example " + e.value("name", std::string("?")) + ": " + ex.what());
    }
  }
  return out;
}

const std::vector<VettedExample>& shipped_vetted() {
  static const std::vector<VettedExample> examples = parse_vetted(embedded::kVettedGemmSm90a);
  return examples;
}

std::optional<VettedExample> nearest_vetted(const std::vector<VettedExample>& examples,
                                            const GemmFamilyKey& f, const GemmProblem& p) {
  auto dist = [](int64_t a, int64_t b) { return std::abs(std::log2(double(a) / double(b))); };
  std::optional<VettedExample> best;
  double best_d = std::numeric_limits<double>::infinity();
  // A fused tail does not change which mainloop configuration suits the shape: the
  // examples are matched on the family without it.
  GemmFamilyKey want = f;
  want.epilogue_tree = nullptr;
  want.epilogue_broadcast = nullptr;
  for (const auto& v : examples) {
    GemmFamilyKey same = v.family;
    same.element = f.element;
    if (!(same == want)) continue;
    const double d = dist(v.m, p.m) + dist(v.n, p.n) + dist(v.k, p.k) + dist(v.l, p.l);
    if (d < best_d) {
      best_d = d;
      best = v;
    }
  }
  return best;
}

void seed_choices(std::vector<GemmKernelChoice>& choices, const GemmFamilyKey& family, const GemmConfig& config) {
  GemmKernelChoice seed{family, config, 0.0};
  for (auto it = choices.begin(); it != choices.end(); ++it) {
    if (it->family == family && same_config(it->config, config)) {
      seed = *it;
      choices.erase(it);
      break;
    }
  }
  choices.insert(choices.begin(), seed);
}

}  // namespace fact::realize
