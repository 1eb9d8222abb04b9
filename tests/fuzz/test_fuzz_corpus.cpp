// Every file of the fuzzers' corpus (tests/fuzz/corpus/<target>/: seeds from the tests and
// every input a fuzzer once crashed on) goes through its target in the ordinary test run,
// so a finding fixed stays fixed without a fuzzer build.
#include <gtest/gtest.h>

#include <filesystem>

#include "../golden_util.h"
#include "targets.h"

namespace fs = std::filesystem;

TEST(FuzzCorpus, EveryCorpusFileGetsAnAnswerNotACrash) {
  for (const auto& t : fact::fuzz::targets()) {
    const fs::path dir = fact::test::test_dir() / "fuzz" / "corpus" / t.name;
    ASSERT_TRUE(fs::is_directory(dir)) << dir;
    int files = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      ++files;
      const std::string data = fact::read_file(e.path());
      EXPECT_NO_THROW(t.run(data)) << e.path();
    }
    EXPECT_GE(files, 3) << dir;
  }
}
