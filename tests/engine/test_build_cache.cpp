// The content-addressed kernel cache: hits compile nothing, corrupt entries are rebuilt,
// failing and C7510 builds are quarantined with their reason. A fake nvcc (a shell script)
// stands in for the compiler so these run in milliseconds.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "base/error.h"
#include "base/file_io.h"
#include "base/hash.h"
#include "engine/build.h"

namespace fs = std::filesystem;
using namespace fact::realize;

namespace {

// A fake nvcc: writes "object:<source>" to the -o path; with FAIL in the source, or "#error"
// in a header under an -I directory, it exits 1; with WARN it prints the C7510 warning;
// `-shared` links by copying the object. It counts its invocations in <dir>/calls.
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
  case "$a" in -I*) grep -rqs '#error' "${a#-I}" && { echo "error: #error in a header"; exit 1; };; esac
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
  // A CUTLASS tree of one header (and a copy of it at `name` with `header` as that header).
  fs::path make_tree(const std::string& name, const std::string& header) {
    const fs::path dir = root / name;
    fs::create_directories(dir / "include" / "cutlass");
    fact::write_file(dir / "include" / "cutlass" / "gemm.h", header);
    return dir;
  }
  void use_tree(const fs::path& dir) {
    tc.cutlass_dir = dir;
    tc.cutlass_headers_sha256 = cutlass_headers_sha256(dir);
  }
  void SetUp() override {
    fs::remove_all(root);
    tc.nvcc = make_fake_nvcc(root / "bin").string();
    tc.nvcc_version_text = "fake 1.0";
    use_tree(make_tree("cutlass", "// gemm\n"));
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

TEST_F(CacheTest, EachPartOfTheKeyChangedIsAMiss) {
  // The key hashes the source, nvcc's full version text, the flags, CUTLASS's version and
  // its header trees' content; changing any one alone must give another key.
  const BuildRequest req{"k1", "good kernel"};
  const std::string base = cache_key(req, tc);
  EXPECT_NE(cache_key({"k1", "good kernel "}, tc), base);
  auto changed = [&](auto edit) {
    Toolchain t = tc;
    edit(t);
    return cache_key(req, t);
  };
  EXPECT_NE(changed([](Toolchain& t) { t.nvcc_version_text = "fake 1.0\nBuild cuda_13.0.r13.0/compiler.2"; }), base);
  EXPECT_NE(changed([](Toolchain& t) { t.compile_flags.push_back("-lineinfo"); }), base);
  EXPECT_NE(changed([](Toolchain& t) { t.cutlass_version = "0.0.1"; }), base);
  EXPECT_NE(changed([&](Toolchain& t) { t.cutlass_headers_sha256 = cutlass_headers_sha256(make_tree("v2", "// v2\n")); }), base);
  // The tree's path plays no part: an identical copy elsewhere hits.
  EXPECT_EQ(changed([&](Toolchain& t) { t.cutlass_headers_sha256 = cutlass_headers_sha256(make_tree("copy", "// gemm\n")); }), base);
  EXPECT_EQ(changed([](Toolchain& t) { t.nvcc = "/elsewhere/nvcc"; }), base);
}

TEST_F(CacheTest, AnEditedHeaderTreeIsAMissAndItsFailureIsNotReusedForThePristineTree) {
  // Once the key held CUTLASS's version number only: a copy of the tree with "#error" in a
  // header still reported "from cache", and the failure built with it was then served to
  // the pristine tree as a quarantined candidate forever.
  const fs::path pristine = tc.cutlass_dir;
  std::vector<BuildRequest> reqs{{"k1", "good kernel"}};
  auto a = build_kernels(reqs, tc, root / "cache", 1);
  ASSERT_TRUE(a[0].ok);
  use_tree(make_tree("edited", "// gemm\n#error edited\n"));
  auto b = build_kernels(reqs, tc, root / "cache", 1);
  EXPECT_FALSE(b[0].cached);
  EXPECT_FALSE(b[0].ok);
  EXPECT_NE(b[0].reason.find("nvcc failed"), std::string::npos);
  use_tree(pristine);
  auto c = build_kernels(reqs, tc, root / "cache", 1);
  EXPECT_TRUE(c[0].ok);
  EXPECT_TRUE(c[0].cached);
  EXPECT_EQ(c[0].key, a[0].key);
  fs::remove_all(root / "cache");
  use_tree(root / "edited");
  build_kernels(reqs, tc, root / "cache", 1);  // the failure first, then the pristine tree
  use_tree(pristine);
  auto d = build_kernels(reqs, tc, root / "cache", 1);
  EXPECT_TRUE(d[0].ok);
  EXPECT_FALSE(d[0].cached);
}

TEST(HeaderTreeHash, ContentNamesAndPresenceChangeItPathsAndTimesDoNot) {
  const fs::path root = fs::temp_directory_path() / ("fact-tree-hash-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto tree = [&](const std::string& name, const std::string& file, const std::string& text) {
    fs::create_directories(root / name / "a");
    fact::write_file(root / name / "a" / file, text);
    fact::write_file(root / name / "top.h", "top\n");
    return root / name;
  };
  const std::string base = fact::sha256_tree(tree("t1", "x.h", "one"));
  EXPECT_EQ(fact::sha256_tree(tree("t2", "x.h", "one")), base);
  EXPECT_NE(fact::sha256_tree(tree("t3", "x.h", "two")), base);
  EXPECT_NE(fact::sha256_tree(tree("t4", "y.h", "one")), base);
  fact::write_file(root / "t2" / "a" / "extra.h", "");
  EXPECT_NE(fact::sha256_tree(root / "t2"), base);
  fs::last_write_time(root / "t1" / "top.h", fs::file_time_type::clock::now() - std::chrono::hours(5));
  EXPECT_EQ(fact::sha256_tree(root / "t1"), base);
  // A header tree reached through a directory symlink is hashed through it.
  fs::create_directory_symlink(root / "t3", root / "link");
  EXPECT_EQ(fact::sha256_tree(root / "link"), fact::sha256_tree(root / "t3"));
  EXPECT_THROW(fact::sha256_tree(root / "missing"), fact::Error);
  fs::remove_all(root);
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

TEST_F(CacheTest, AnEntryWhoseMetaIsDamagedIsRebuiltNotTakenAsAFailure) {
  // meta.json is the entry's record: empty, unparsable, with a status other than "ok" or
  // "quarantined", or with a key twice, it is corrupt and rebuilt, never served as a failure.
  std::vector<BuildRequest> reqs{{"k1", "good kernel"}};
  const fs::path meta = build_kernels(reqs, tc, root / "cache", 1)[0].object.parent_path() / "meta.json";
  for (const char* damaged : {"", "{\"status\": \"bogus\"}", "{\"status\": \"quarantined\", \"status\": \"ok\"}",
                              "{\"status\": 1}", "[]", "{\"stat"}) {
    fact::write_file(meta, damaged);
    auto r = build_kernels(reqs, tc, root / "cache", 1);
    EXPECT_TRUE(r[0].ok) << damaged;
    EXPECT_FALSE(r[0].cached) << damaged;
    EXPECT_TRUE(r[0].rebuilt_corrupt) << damaged;
  }
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
