// The content-addressed kernel cache: hits compile nothing, corrupt entries are rebuilt,
// failing and C7510 builds are quarantined with their reason. A fake nvcc (a shell script)
// stands in for the compiler so these run in milliseconds.
#include <gtest/gtest.h>

#include <fstream>

#include "base/file_io.h"
#include "engine/build.h"

namespace fs = std::filesystem;
using namespace fact::realize;

namespace {

// A fake nvcc: writes "object:<source>" to the -o path; with FAIL in the source it exits 1,
// with WARN it prints the C7510 warning; `-shared` links by copying the object. It counts
// its invocations in <dir>/calls.
fs::path make_fake_nvcc(const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path script = dir / "fake-nvcc";
  std::ofstream(script) << R"SH(#!/bin/sh
echo x >> ")SH" << (dir / "calls").string() << R"SH("
out=""; src=""; shared=0; prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  [ "$a" = "-shared" ] && shared=1
  case "$a" in *.cu) src="$a";; *.o) [ "$prev" != "-o" ] && src="$a";; esac
  prev="$a"
done
grep -q FAIL "$src" && { echo "error: FAIL"; exit 1; }
grep -q KILL "$src" && kill -9 $$
grep -q WARN "$src" && echo "ptxas warning : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized"
if [ $shared = 1 ]; then cp "$src" "$out"; else echo "object:$(cat "$src")" > "$out"; fi
exit 0
)SH";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

int calls(const fs::path& dir) {
  std::ifstream in(dir / "calls");
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

struct CacheTest : ::testing::Test {
  fs::path root = fs::temp_directory_path() / ("fact-cache-test-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Toolchain tc;
  void SetUp() override {
    fs::remove_all(root);
    tc.nvcc = make_fake_nvcc(root / "bin").string();
    tc.nvcc_version_text = "fake 1.0";
    tc.cutlass_dir = root;
    tc.cutlass_version = "0.0.0";
    tc.compile_flags = {"-O3", "-DNDEBUG"};
  }
  void TearDown() override { fs::remove_all(root); }
};

}  // namespace

TEST_F(CacheTest, SecondBuildIsACacheHitAndCompilesNothing) {
  std::vector<BuildRequest> reqs{{"k1", "good kernel one"}, {"k2", "good kernel two"}};
  auto first = build_kernels(reqs, tc, root / "cache", 2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_TRUE(first[0].ok && first[1].ok);
  EXPECT_FALSE(first[0].cached);
  EXPECT_EQ(calls(root / "bin"), 4);  // compile + link each
  auto second = build_kernels(reqs, tc, root / "cache", 2);
  EXPECT_TRUE(second[0].cached && second[1].cached);
  EXPECT_EQ(calls(root / "bin"), 4);
  EXPECT_EQ(second[0].key, first[0].key);
  EXPECT_NE(first[0].key, first[1].key);
}

TEST_F(CacheTest, JobsBeyondTheKernelCountStartOneWorkerPerKernel) {
  // --jobs 100000 once started 100000 threads and aborted when the system refused one.
  std::vector<BuildRequest> reqs{{"k1", "good kernel one"}, {"k2", "good kernel two"}};
  auto results = build_kernels(reqs, tc, root / "cache", 100000000);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].ok && results[1].ok);
  EXPECT_EQ(calls(root / "bin"), 4);
  EXPECT_TRUE(build_kernels({}, tc, root / "cache", 100000000).empty());
}

TEST_F(CacheTest, AnotherToolchainIsAMiss) {
  std::vector<BuildRequest> reqs{{"k1", "good kernel"}};
  auto a = build_kernels(reqs, tc, root / "cache", 1);
  tc.nvcc_version_text = "fake 2.0";
  auto b = build_kernels(reqs, tc, root / "cache", 1);
  EXPECT_NE(a[0].key, b[0].key);
  EXPECT_FALSE(b[0].cached);
}

TEST_F(CacheTest, CorruptEntryIsRebuilt) {
  std::vector<BuildRequest> reqs{{"k1", "good kernel"}};
  auto a = build_kernels(reqs, tc, root / "cache", 1);
  fact::write_file(a[0].object, "garbage");
  auto b = build_kernels(reqs, tc, root / "cache", 1);
  EXPECT_TRUE(b[0].ok);
  EXPECT_FALSE(b[0].cached);
  EXPECT_TRUE(b[0].rebuilt_corrupt);
  EXPECT_EQ(fact::read_file(b[0].object), "object:good kernel\n");
}

TEST_F(CacheTest, FailingBuildIsQuarantinedWithItsReasonAndRemembered) {
  std::vector<BuildRequest> reqs{{"bad", "FAIL here"}, {"good", "fine"}};
  auto r = build_kernels(reqs, tc, root / "cache", 2);
  EXPECT_FALSE(r[0].ok);
  EXPECT_NE(r[0].reason.find("nvcc failed (exit 1)"), std::string::npos);
  EXPECT_TRUE(r[1].ok);
  const int before = calls(root / "bin");
  auto again = build_kernels(reqs, tc, root / "cache", 2);
  EXPECT_TRUE(again[0].cached);
  EXPECT_FALSE(again[0].ok);
  EXPECT_EQ(calls(root / "bin"), before);
}

TEST_F(CacheTest, KilledCompilerIsNotCachedAndIsRetried) {
  auto r = build_kernels({{"oom", "KILL"}}, tc, root / "cache", 1);
  EXPECT_FALSE(r[0].ok);
  EXPECT_NE(r[0].reason.find("killed"), std::string::npos);
  auto again = build_kernels({{"oom", "KILL"}}, tc, root / "cache", 1);
  EXPECT_FALSE(again[0].cached);
  EXPECT_EQ(calls(root / "bin"), 2);
}

TEST_F(CacheTest, C7510WarningQuarantines) {
  auto r = build_kernels({{"slow", "WARN"}}, tc, root / "cache", 1);
  EXPECT_FALSE(r[0].ok);
  EXPECT_NE(r[0].reason.find("C7510"), std::string::npos);
}

TEST(WgmmaWarning, DetectsC7510C7519AndC7520) {
  EXPECT_TRUE(has_wgmma_serialization_warning("ptxas warning : (C7510) Potential Performance Loss"));
  EXPECT_FALSE(has_wgmma_serialization_warning("ptxas info : Used 168 registers"));
  EXPECT_FALSE(has_wgmma_serialization_warning("ptxas info : (C7515) Potential Performance Loss"));
  EXPECT_EQ(wgmma_serialization_warning("ptxas info : (C7519) Potential Performance Loss: wgmma.mma_async"), "C7519");
  EXPECT_EQ(wgmma_serialization_warning("ptxas info : (C7520) Potential Performance Loss: wgmma.mma_async"), "C7520");
  EXPECT_EQ(wgmma_serialization_warning("ptxas info : Used 240 registers"), "");
}
