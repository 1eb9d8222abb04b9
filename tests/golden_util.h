// Golden-file helpers shared by the tests. FACT_UPDATE_GOLDEN=1 rewrites expected files
// instead of comparing; review the diff of the golden files before committing.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/file_io.h"

namespace fact::test {

inline std::filesystem::path test_dir() { return FACT_TEST_DIR; }

inline bool update_golden() {
  const char* e = std::getenv("FACT_UPDATE_GOLDEN");
  return e && std::string(e) == "1";
}

/// Expects `actual` to equal the contents of `golden`; rewrites it when updating.
inline void expect_golden(const std::filesystem::path& golden, const std::string& actual) {
  if (update_golden()) {
    write_file(golden, actual);
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(golden)) << golden << " is missing (FACT_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(read_file(golden), actual) << "golden file: " << golden;
}

/// Stems of the files in `dir` ending in `ext`, sorted ("mm_row_row" for mm_row_row.txt).
inline std::vector<std::string> golden_stems(const std::filesystem::path& dir, const std::string& ext) {
  std::vector<std::string> stems;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ext) stems.push_back(e.path().stem().string());
  std::sort(stems.begin(), stems.end());
  return stems;
}

/// A gtest parameter name from a file stem (letters, digits and '_' only).
inline std::string param_name(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace fact::test
