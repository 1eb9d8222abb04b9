// The CUDA toolchain and CUTLASS headers realization builds with, and what identifies them
// in cache keys (docs/00-design.md §3: a key names nvcc's version, the flags and CUTLASS's version).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace fact::realize {

struct Toolchain {
  std::string nvcc;                      // path or name of nvcc
  std::string nvcc_version;              // e.g. "13.0.88"
  std::string nvcc_version_text;         // full `nvcc --version` output (hashed into keys)
  std::filesystem::path cutlass_dir;     // holds include/ and tools/util/include/
  std::string cutlass_version;           // e.g. "4.2.0"
  std::vector<std::string> compile_flags;  // everything but -I, -c, -o and the source

  /// Full nvcc command line compiling `source` into `object`.
  std::vector<std::string> compile_command(const std::filesystem::path& source,
                                           const std::filesystem::path& object) const;
  /// Command line linking objects into a shared library (cudart shared, so the library
  /// uses the CUDA runtime already loaded in the process, e.g. PyTorch's).
  std::vector<std::string> link_command(const std::vector<std::filesystem::path>& objects,
                                        const std::filesystem::path& library) const;
  /// The compile flags as one string, as cache and registry keys hash them.
  std::string flags_text() const;
  /// The part of every cache key that comes from the toolchain.
  std::string key_text() const;
};

/// Finds the toolchain. nvcc: `nvcc_override`, else $FACT_NVCC, else $CUDA_HOME/bin/nvcc,
/// else /usr/local/cuda/bin/nvcc, else `nvcc` on PATH. CUTLASS: `cutlass_override`, else
/// $FACT_CUTLASS_DIR, else <dir of factc>/../.deps/cutlass, else <source dir>/.deps/cutlass.
/// Throws fact::Error when nvcc does not run or the CUTLASS headers are missing, naming
/// what was searched.
Toolchain find_toolchain(const std::string& nvcc_override, const std::string& cutlass_override);

}  // namespace fact::realize
