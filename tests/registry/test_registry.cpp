// The tuning registry: exact-key hits, misses on any other GPU/toolchain/policy, export and
// import, and a damaged database file rebuilt rather than fatal.
#include <gtest/gtest.h>

#include "base/error.h"
#include "base/file_io.h"
#include "registry/registry.h"

namespace fs = std::filesystem;
using namespace fact::registry;
using nlohmann::json;

namespace {

RecordKey h200_key() {
  const json problem = {{"kind", "gemm"}, {"m", 4096}, {"n", 4096}, {"k", 4096}, {"l", 1},
                        {"dtype_a", "float32"}, {"layout_a", "row"}, {"layout_b", "row"}};
  return {problem.dump(), "NVIDIA H200", "9.0", "13.0", "13.0", "13.0.88", "4.2.0", "-O3 -DNDEBUG", "tf32"};
}

TuningRecord record(const RecordKey& k, const std::string& winner, double ms) {
  TuningRecord r;
  r.key = k;
  r.winner = winner;
  r.winner_impl = "cutlass";
  r.median_ms = ms;
  r.candidates = json::array({{{"kernel", winner}, {"median_ms", ms}}});
  return r;
}

struct RegistryTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() /
                 ("fact-registry-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  void SetUp() override { fs::remove_all(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

}  // namespace

TEST_F(RegistryTest, SameKeyHitsAndPersistsAcrossOpens) {
  {
    Registry reg(dir / "r.sqlite3");
    reg.put(record(h200_key(), "cutlass3x_sm90a_tf32_rrr_128x256x32_2x1x1_coop_persistent_lincomb", 0.367));
  }
  Registry reg(dir / "r.sqlite3");
  auto hit = reg.get(h200_key());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->winner, "cutlass3x_sm90a_tf32_rrr_128x256x32_2x1x1_coop_persistent_lincomb");
  EXPECT_DOUBLE_EQ(hit->median_ms, 0.367);
  EXPECT_EQ(hit->candidates.size(), 1u);
  EXPECT_FALSE(hit->created.empty());
}

TEST_F(RegistryTest, AnotherArchToolkitCutlassOrPolicyIsAMiss) {
  Registry reg(dir / "r.sqlite3");
  reg.put(record(h200_key(), "k", 1.0));
  auto other = [&](auto change) {
    RecordKey k = h200_key();
    change(k);
    return reg.get(k).has_value();
  };
  EXPECT_FALSE(other([](RecordKey& k) { k.cc = "8.0"; k.gpu = "NVIDIA A100-SXM4-80GB"; }));
  EXPECT_FALSE(other([](RecordKey& k) { k.nvcc = "12.8.93"; }));
  EXPECT_FALSE(other([](RecordKey& k) { k.cutlass = "4.1.0"; }));
  EXPECT_FALSE(other([](RecordKey& k) { k.policy = "fp32"; }));
  EXPECT_FALSE(other([](RecordKey& k) { k.driver = "12.8"; }));
  EXPECT_FALSE(other([](RecordKey& k) { k.flags = "-O2"; }));
  EXPECT_TRUE(other([](RecordKey&) {}));
}

TEST_F(RegistryTest, FieldsCannotRunIntoEachOther) {
  RecordKey a = h200_key(), b = h200_key();
  a.gpu = "NVIDIA H20";
  a.cc = "09.0";
  b.gpu = "NVIDIA H200";
  b.cc = "9.0";
  EXPECT_NE(a.digest(), b.digest());
}

TEST_F(RegistryTest, ExportThenImportReproducesTheRecords) {
  json exported;
  {
    Registry reg(dir / "a.sqlite3");
    reg.put(record(h200_key(), "k1", 1.0));
    RecordKey k2 = h200_key();
    k2.policy = "bf16";
    reg.put(record(k2, "k2", 2.0));
    exported = reg.export_json();
  }
  ASSERT_EQ(exported.size(), 2u);
  Registry other(dir / "b.sqlite3");
  EXPECT_EQ(other.import_json(exported), 2);
  auto hit = other.get(h200_key());
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->winner, "k1");
  EXPECT_THROW(other.import_json(json::object()), fact::Error);
  EXPECT_THROW(other.import_json(json::array({{{"gpu", "x"}}})), fact::Error);
}

TEST_F(RegistryTest, AFileWithOneBadRecordImportsNothing) {
  json exported;
  {
    Registry reg(dir / "a.sqlite3");
    reg.put(record(h200_key(), "k1", 1.0));
    exported = reg.export_json();
  }
  exported.push_back({{"gpu", "x"}});  // a later record without its other fields
  Registry other(dir / "b.sqlite3");
  try {
    other.import_json(exported);
    FAIL() << "a bad record was imported";
  } catch (const fact::Error& e) {
    EXPECT_NE(std::string(e.what()).find("record #1"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(other.list().empty());
}

TEST_F(RegistryTest, CorruptDatabaseIsMovedAsideAndRebuilt) {
  fs::create_directories(dir);
  fact::write_file(dir / "r.sqlite3", std::string(4096, 'x'));
  Registry reg(dir / "r.sqlite3");
  EXPECT_TRUE(reg.rebuilt());
  EXPECT_TRUE(fs::exists(dir / "r.sqlite3.corrupt"));
  reg.put(record(h200_key(), "k", 1.0));
  EXPECT_TRUE(reg.get(h200_key()).has_value());
}

TEST_F(RegistryTest, ADirectoryGivenAsTheDatabaseIsNeverMovedOrReplaced) {
  const fs::path cache = dir / "cache";
  fs::create_directories(cache / "kernels");
  fact::write_file(cache / "kernels" / "keep.so", "user data");
  try {
    Registry reg(cache);
    FAIL() << "a directory was opened as a registry database";
  } catch (const fact::Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find((cache / "registry.sqlite3").string()), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_directory(cache));
  EXPECT_EQ(fact::read_file(cache / "kernels" / "keep.so"), "user data");
  EXPECT_FALSE(fs::exists(dir / "cache.corrupt"));
}
