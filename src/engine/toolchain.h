// The CUDA toolchain and CUTLASS headers realization builds with, and what identifies them
// in cache keys (docs/04-realization.md "Kernel cache": a key hashes the source, nvcc's full
// version text, the flags, CUTLASS's version and the content of its header tree).
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
  std::string cutlass_headers_sha256;    // cutlass_headers_sha256(cutlass_dir), hashed into keys
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
  /// The part of every cache key that comes from the toolchain: nvcc's full version text,
  /// CUTLASS's version, cutlass_headers_sha256 and the flags.
  std::string key_text() const;
};

/// SHA-256 (hex) of the CUTLASS header trees kernels compile against: sha256_tree of
/// <dir>/include and of <dir>/tools/util/include (the -I directories; "absent" for a missing
/// one). The whole trees are hashed rather than the headers one kernel includes (`nvcc -M`):
/// the key must be known before any compile, `nvcc -M` preprocesses all of CUTLASS for every
/// kernel, cache hits included, while the trees cost one read (about 0.2 s) and a superset
/// can never miss an included header. Computed once per directory per process (memoized by
/// its canonical path; thread-safe). Throws fact::Error when a file cannot be read.
std::string cutlass_headers_sha256(const std::filesystem::path& cutlass_dir);

/// Finds the toolchain. nvcc: `nvcc_override`, else $FACT_NVCC, else $CUDA_HOME/bin/nvcc,
/// else /usr/local/cuda/bin/nvcc, else `nvcc` on PATH. CUTLASS: `cutlass_override`, else
/// $FACT_CUTLASS_DIR, else <dir of factc>/../.deps/cutlass, else <source dir>/.deps/cutlass.
/// Throws fact::Error when nvcc does not run or the CUTLASS headers are missing, naming
/// what was searched.
Toolchain find_toolchain(const std::string& nvcc_override, const std::string& cutlass_override);

}  // namespace fact::realize
