// libFuzzer entry point of one target (tests/fuzz/targets.h), chosen at compile time by
// FACT_FUZZ_TARGET (its index in targets()). Built with clang's -fsanitize=fuzzer when CMake
// is configured with -DFACT_SANITIZE=ON; run as in .ci/fuzz.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fact::fuzz::targets().at(FACT_FUZZ_TARGET).run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
