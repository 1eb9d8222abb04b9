// factc realize on attention patterns without a GPU: vendor-only patterns say why, malformed
// problems name the field, and GEMM patterns in the same plan are realized as before.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "engine/realize.h"
#include "../../engine/realize_options_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json attention(json changes = json::object()) {
  json p{{"kind", "attention"}, {"batch", 2}, {"heads", 4}, {"kv_heads", 4}, {"seq_q", 128}, {"seq_k", 128},
         {"head_dim", 96}, {"dtype", "float32"}, {"scale", 0.1020620726}, {"mask", "causal"},
         {"strides", {{"q", {147456, 96, 1152}}, {"k", {147456, 96, 1152}}, {"v", {147456, 96, 1152}},
                      {"o", {49152, 96, 384}}, {"mask", nullptr}}},
         {"output_layout", "bthd"}};
  for (auto& [k, v] : changes.items()) p[k] = v;
  return p;
}

json run(const std::string& name, const json& patterns, fact::Precision policy) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fact::realize::RealizeOptions o =
      fact::test::options_for(dir, json{{"format", "fact.plan"}, {"version", 1}, {"patterns", patterns}});
  o.policy = policy;
  EXPECT_EQ(fact::realize::run_realize(o), 0);
  const json r = json::parse(fact::read_file(dir / "realized.json"));
  fs::remove_all(dir);
  return r;
}

}  // namespace

TEST(AttentionRealize, VendorOnlyPatternsSayWhy) {
  json head80 = attention({{"head_dim", 80}, {"dtype", "bfloat16"}});  // bf16: its own math under any policy
  head80["strides"]["q"] = head80["strides"]["k"] = head80["strides"]["v"] = json{40960, 80, 320};
  head80["strides"]["o"] = json{40960, 80, 320};
  json unaligned = attention();
  unaligned["strides"]["k"] = {147456, 96, 1150};  // 4600 bytes between rows
  const json r = run("fact-attn-realize-1",
                     {{{"id", "p0"}, {"rule", "attention"}, {"problem", head80}},
                      {{"id", "p1"}, {"rule", "attention"}, {"problem", unaligned}}},
                     fact::Precision::fp32);
  ASSERT_EQ(r["patterns"].size(), 2u);
  const json& p0 = r["patterns"][0];
  EXPECT_EQ(p0["rule"], "attention");
  EXPECT_EQ(p0["problem"], head80);
  EXPECT_NE(p0["cutlass_unavailable"].get<std::string>().find("head dim 80 is not built"), std::string::npos);
  EXPECT_TRUE(p0["candidates"].empty());
  EXPECT_TRUE(p0["winner"].is_null());
  EXPECT_EQ(p0["compile_s"], 0.0);
  EXPECT_NE(r["patterns"][1]["cutlass_unavailable"].get<std::string>().find("strides.k: the row stride 1150"),
            std::string::npos) << r["patterns"][1].dump();
}

TEST(AttentionRealize, MalformedProblemsAreSkippedWithTheFieldNamed) {
  json bad = attention();
  bad["strides"]["v"] = {147456, 96};
  const json r = run("fact-attn-realize-2",
                     {{{"id", "p0"}, {"rule", "attention"}, {"problem", bad}},
                      {{"id", "p1"}, {"rule", "attention"}, {"problem", attention({{"kv_heads", 3}})}},
                      {{"id", "p2"}, {"rule", "gemm"}, {"problem", {{"kind", "conv"}}}}},
                     fact::Precision::tf32);
  auto why = [&](int i) { return r["patterns"][i]["cutlass_unavailable"].get<std::string>(); };
  EXPECT_NE(why(0).find("field 'strides.v' must be [batch, head, row] strides"), std::string::npos) << why(0);
  EXPECT_NE(why(1).find("field 'kv_heads' = 3 does not divide heads = 4"), std::string::npos) << why(1);
  EXPECT_NE(why(2).find("kind is not 'gemm'"), std::string::npos) << why(2);  // GEMM patterns as before
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(r["patterns"][i]["winner"].is_null());
}
