// KernelLibrary: loading a kernel .so and its entry points, with errors that name them.
#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "engine/kernel_library.h"

namespace fact::realize {
namespace {

TEST(KernelLibrary, MissingLibraryAndSymbolAreNamed) {
  try {
    KernelLibrary lib("/nonexistent/kernel.so");
    FAIL() << "loaded a missing library";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load kernel library /nonexistent/kernel.so: "), std::string::npos);
  }
  const KernelLibrary libc("libc.so.6");  // any shared library serves for the lookups
  using Strlen = size_t (*)(const char*);
  EXPECT_EQ(libc.function<Strlen>("strlen", "")("abcd"), 4u);
  try {
    libc.function<void (*)()>("fact_k_0123456789abcdef", "_run");
    FAIL() << "found a missing symbol";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "kernel library lacks symbol fact_k_0123456789abcdef_run");
  }
}

}  // namespace
}  // namespace fact::realize
