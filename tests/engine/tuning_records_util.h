// What the tuning-record tests (test_tuning_records.cpp, test_attention_records.cpp) share:
// the GPUs and toolchain their keys are made for, and a kernel this run has built.
#pragma once

#include <string>

#include "engine/build.h"
#include "engine/gpu_context.h"
#include "engine/toolchain.h"

namespace fact::test {

inline realize::GpuInfo h200() { return {"NVIDIA H200", 9, 0, 132, 60u << 20, "13.0", "13.0"}; }
inline realize::GpuInfo h100() { return {"NVIDIA H100 80GB HBM3", 9, 0, 132, 50u << 20, "13.0", "13.0"}; }
inline realize::GpuInfo a100() { return {"NVIDIA A100-SXM4-80GB", 8, 0, 108, 40u << 20, "13.0", "13.0"}; }

/// nvcc 13.0.88, CUTLASS 4.2.0, -O3 -DNDEBUG.
inline realize::Toolchain key_toolchain() {
  realize::Toolchain tc;
  tc.nvcc_version_text = "nvcc 13.0.88";
  tc.cutlass_version = "4.2.0";
  tc.compile_flags = {"-O3", "-DNDEBUG"};
  return tc;
}

/// Kernel `name` built by this run with build key `key`, at /here/kernel.o and /here/kernel.so.
inline realize::BuildResult built_here(const std::string& name, const std::string& key) {
  realize::BuildResult b;
  b.name = name;
  b.ok = true;
  b.key = key;
  b.object = "/here/kernel.o";
  b.library = "/here/kernel.so";
  return b;
}

}  // namespace fact::test
