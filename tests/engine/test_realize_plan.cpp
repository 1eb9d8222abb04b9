// factc realize on plans it cannot fully read: errors name the file, bad patterns are skipped.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_io.h"
#include "engine/realize.h"
#include "realize_options_util.h"

namespace fs = std::filesystem;
using nlohmann::json;
using fact::test::options_for;

TEST(RealizePlan, PatternWithoutProblemIsSkippedNotFatal) {
  const fs::path dir = fs::temp_directory_path() / "fact-realize-plan-1";
  fs::remove_all(dir);
  json plan{{"format", "fact.plan"}, {"version", 1},
            {"patterns", {{{"id", "p0"}, {"rule", "gemm"}}, {{"id", "p1"}, {"rule", "gemm"}, {"problem", {{"kind", "conv"}}}}}}};
  EXPECT_EQ(fact::realize::run_realize(options_for(dir, plan)), 0);
  const json r = json::parse(fact::read_file(dir / "realized.json"));
  ASSERT_EQ(r.at("patterns").size(), 2u);
  EXPECT_TRUE(r["patterns"][0]["winner"].is_null());
  EXPECT_NE(r["patterns"][0]["cutlass_unavailable"].get<std::string>().find("no \"problem\""), std::string::npos);
  EXPECT_NE(r["patterns"][1]["cutlass_unavailable"].get<std::string>().find("kind is not 'gemm'"), std::string::npos);
  EXPECT_TRUE(r["gpu"].is_null());
  fs::remove_all(dir);
}

TEST(RealizePlan, WrongVersionIsAnError) {
  const fs::path dir = fs::temp_directory_path() / "fact-realize-plan-2";
  fs::remove_all(dir);
  json plan{{"format", "fact.plan"}, {"version", 9}, {"patterns", json::array()}};
  try {
    fact::realize::run_realize(options_for(dir, plan));
    FAIL() << "expected an error";
  } catch (const fact::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported plan version 9"), std::string::npos);
  }
  fs::remove_all(dir);
}

// A fuzz finding (tests/fuzz/corpus/plan/plan_version_is_a_string.json): an envelope field of
// the wrong type is the reader's error naming the field, not the JSON library's type_error.
TEST(RealizePlan, EnvelopeFieldsOfTheWrongTypeAreErrors) {
  const std::vector<std::pair<json, std::string>> cases{
      {{{"format", "fact.plan"}, {"version", "1"}, {"patterns", json::array()}}, "plan: unsupported plan version \"1\""},
      {{{"format", "fact.plan"}, {"version", 1.0}, {"patterns", json::array()}}, "plan: unsupported plan version 1.0"},
      {{{"format", "fact.plan"}, {"patterns", json::array()}}, "plan: unsupported plan version null"},
      {{{"format", 1}, {"version", 1}, {"patterns", json::array()}}, "plan is not a FACT plan"},
      {{{"format", "fact.plan"}, {"version", 2}, {"patterns", json::object()}}, "plan: missing \"patterns\" list"}};
  for (const auto& [plan, expected] : cases) {
    std::map<std::string, fact::realize::BuildRequest> requests;
    try {
      fact::realize::plan_candidates(plan, fact::Precision::tf32, 2, std::nullopt, requests);
      ADD_FAILURE() << "expected an error for " << plan.dump();
    } catch (const fact::Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

TEST(RealizePlan, MalformedProblemsAreSkippedWithTheFieldNamed) {
  const fs::path dir = fs::temp_directory_path() / "fact-realize-plan-3";
  fs::remove_all(dir);
  auto problem = [](json changes) {
    json p{{"kind", "gemm"}, {"m", 64}, {"n", 64}, {"k", 64}, {"l", 1}, {"dtype_a", "float32"},
           {"dtype_b", "float32"}, {"dtype_d", "float32"}, {"layout_a", "row"}, {"layout_b", "row"},
           {"lda", 64}, {"ldb", 64}, {"ldd", 64}, {"bias", nullptr}, {"alpha", 1.0}, {"beta", 0.0}};
    for (auto& [k, v] : changes.items()) p[k] = v;
    return p;
  };
  json plan{{"format", "fact.plan"}, {"version", 1},
            {"patterns", {{{"id", "p0"}, {"rule", "gemm"}, {"problem", problem({{"lda", 32}})}},
                          {{"id", "p1"}, {"rule", "gemm"}, {"problem", problem({{"k", 64.5}})}},
                          {{"id", "p2"}, {"rule", "gemm"}, {"problem", problem({{"l", 2}, {"batch_stride_d", 0}})}},
                          {{"id", "p3"}, {"rule", "gemm"}, {"problem", problem({{"batch_stride_a", -1}, {"l", 2}, {"batch_stride_d", 4096}})}},
                          // Sizes past what a 64-bit extent holds, and past CUTLASS's 32-bit sizes.
                          {{"id", "p4"}, {"rule", "gemm"}, {"problem", problem({{"l", 2}, {"ldd", int64_t(1) << 60}})}},
                          {{"id", "p5"}, {"rule", "gemm"}, {"problem", problem({{"ldb", int64_t(1) << 58}})}},
                          {{"id", "p6"}, {"rule", "gemm"}, {"problem", problem({{"m", int64_t(1) << 31}})}},
                          // An operand past 2^48 bytes, and an extent past int64 from strides below 2^48.
                          {{"id", "p7"}, {"rule", "gemm"}, {"problem", problem({{"m", 1 << 20}, {"lda", int64_t(1) << 40}})}},
                          {{"id", "p8"}, {"rule", "gemm"}, {"problem", problem({{"l", 2147483647}, {"batch_stride_a", int64_t(1) << 48},
                                                                                {"batch_stride_d", 4096}})}}}}};
  EXPECT_EQ(fact::realize::run_realize(options_for(dir, plan)), 0);
  const json r = json::parse(fact::read_file(dir / "realized.json"));
  auto why = [&](int i) { return r["patterns"][i]["cutlass_unavailable"].get<std::string>(); };
  EXPECT_NE(why(0).find("lda = 32 is smaller than the contiguous extent 64"), std::string::npos) << why(0);
  EXPECT_NE(why(1).find("'k' must be an integer"), std::string::npos) << why(1);
  EXPECT_NE(why(2).find("overlaps D's batches"), std::string::npos) << why(2);
  EXPECT_NE(why(3).find("negative batch stride"), std::string::npos) << why(3);
  EXPECT_NE(why(4).find("M * ldd: overflows int64"), std::string::npos) << why(4);
  EXPECT_NE(why(5).find("plan problem: ldb = 288230376151711744 passes 2^48"), std::string::npos) << why(5);
  EXPECT_NE(why(6).find("M=2147483648 N=64 K=64 L=1: a size exceeds the 32-bit range"), std::string::npos) << why(6);
  EXPECT_NE(why(7).find("plan problem: A: spans 1152920405095219264 elements of 4 bytes, more than 2^48 bytes"),
            std::string::npos) << why(7);
  EXPECT_NE(why(8).find("an operand's extent (L-1)*batch_stride + (rows-1)*ld + cols: overflows int64"),
            std::string::npos) << why(8);
  fs::remove_all(dir);
}

TEST(RealizePlan, APatternOfTheWrongTypeIsAnErrorNotACrash) {
  const fs::path dir = fs::temp_directory_path() / "fact-realize-plan-4";
  fs::remove_all(dir);
  json plan{{"format", "fact.plan"}, {"version", 1}, {"patterns", {{{"id", 7}, {"rule", "gemm"}}}}};
  try {
    fact::realize::run_realize(options_for(dir, plan));
    FAIL() << "expected an error";
  } catch (const fact::Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"id\" must be a string"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(RealizePlan, SharedKernelsAreChargedToTheFirstPatternThatAsks) {
  // q, k, v projections of one width: the same kernels; p3 another problem, one kernel cached.
  std::map<std::string, fact::realize::BuildResult> built;
  auto add = [&](const std::string& name, double s, bool cached) {
    fact::realize::BuildResult b;
    b.name = name, b.ok = true, b.seconds = s, b.cached = cached;
    built[name] = b;
  };
  add("k1", 40, false), add("k2", 30, false), add("k3", 50, false), add("k4", 45, true);
  const auto c = fact::realize::charge_compile(
      {{"p0", {"k1", "k2"}}, {"p1", {"k1", "k2"}}, {"p2", {"k2", "k1"}}, {"p3", {"k3", "k4", "k1"}}}, built);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_DOUBLE_EQ(c[0].seconds, 70);
  EXPECT_TRUE(c[0].shares_with.empty());
  EXPECT_DOUBLE_EQ(c[1].seconds, 0);
  EXPECT_EQ(c[1].shares_with, std::vector<std::string>{"p0"});
  EXPECT_DOUBLE_EQ(c[2].seconds, 0);
  EXPECT_DOUBLE_EQ(c[3].seconds, 50);  // k4 came from the cache, k1 is p0's
  EXPECT_EQ(c[3].shares_with, std::vector<std::string>{"p0"});
}

TEST(RealizePlan, AnAccumulatorOtherThanFloat32IsRefusedNotIgnored) {
  // A plan's dtype_acc float16 was once ignored: the kernels accumulated in float32 anyway.
  json problem{{"kind", "gemm"}, {"m", 64}, {"n", 64}, {"k", 64}, {"l", 1}, {"dtype_a", "float16"},
               {"dtype_b", "float16"}, {"dtype_d", "float16"}, {"layout_a", "row"}, {"layout_b", "row"},
               {"lda", 64}, {"ldb", 64}, {"ldd", 64}, {"bias", nullptr}, {"alpha", 1.0}, {"beta", 0.0}};
  auto plan_with = [&](json acc) {
    json p = problem;
    p["dtype_acc"] = acc;
    return json{{"format", "fact.plan"}, {"version", 1}, {"patterns", {{{"id", "p0"}, {"rule", "gemm"}, {"problem", p}}}}};
  };
  std::map<std::string, fact::realize::BuildRequest> requests;
  const auto f32 = fact::realize::plan_candidates(plan_with("float32"), fact::Precision::tf32, 2, std::nullopt, requests);
  ASSERT_EQ(f32.size(), 1u);
  EXPECT_FALSE(f32[0].kernels.empty());
  for (const json& acc : {json("float16"), json(16)}) {
    const auto r = fact::realize::plan_candidates(plan_with(acc), fact::Precision::tf32, 2, std::nullopt, requests);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].kernels.empty()) << acc;
    EXPECT_NE(r[0].unsupported.find("dtype_acc " + acc.dump() + " is not realized"), std::string::npos) << r[0].unsupported;
  }
}
