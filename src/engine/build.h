// Building kernels: nvcc in parallel into a content-addressed cache.
//
// Cache layout: <cache>/kernels/<key>/{kernel.cu, kernel.o, kernel.so, build.log, meta.json}
// where key = SHA-256(source text + Toolchain::key_text(): nvcc's full version text, CUTLASS's
// version, the content hash of its header trees, the flags). meta.json records the status
// ("ok" or "quarantined"), the reason, the build seconds and the SHA-256 of kernel.o and
// kernel.so; an entry whose meta.json is damaged or whose files no longer match is corrupt
// and is rebuilt. A failed build is remembered under the same key, so a quarantined
// candidate is not recompiled while nothing it was built from changes, and is rebuilt once
// anything does (a fixed header tree, another nvcc).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "engine/toolchain.h"

namespace fact::realize {

struct BuildRequest {
  std::string name;    // kernel name
  std::string source;  // complete translation unit
  std::string symbol = {};  // C symbol prefix of its ABI functions; empty: kernel_symbol(name)
};

struct BuildResult {
  std::string name;
  std::string symbol;        // the request's symbol (empty: kernel_symbol(name))
  std::string key;
  bool ok = false;
  bool cached = false;       // served from the cache, nothing compiled
  bool rebuilt_corrupt = false;
  std::string reason;        // why it was quarantined
  double seconds = 0;        // compile + link time (of the original build when cached)
  std::filesystem::path object, library, log;
};

/// The C symbol prefix of a kernel: "fact_k_" + the first 16 hex digits of SHA-256(name).
std::string kernel_symbol(const std::string& kernel_name);

/// The kernel a tuning candidate named `candidate` runs: a candidate's name is its kernel's
/// name, then "+<option>" for each run-time option its family reads (the GEMM's
/// "+splitk4+swz4"), so the kernel is the part before the first '+'. Throws fact::Error when
/// nothing comes before it.
std::string candidate_kernel(const std::string& candidate);

/// The content-addressed cache key of a request under a toolchain: SHA-256 (hex) of the
/// source text and the toolchain's key_text(). Paths play no part: the same source under the
/// same toolchain and an identical header tree has the same key on every machine.
std::string cache_key(const BuildRequest& request, const Toolchain& toolchain);

/// Default cache directory: $FACT_CACHE_DIR, else $XDG_CACHE_HOME/fact, else ~/.cache/fact.
std::filesystem::path default_cache_dir();

/// Default parallel nvcc jobs: min(hardware threads, available memory / 3.5 GB), at least 1
/// (one CUTLASS 3.x kernel took 3.4-3.7 GB of memory to compile with nvcc 13.0).
int default_jobs();

/// The first of ptxas's wgmma serialization warnings in nvcc/ptxas output, or "": C7510 (the
/// wgmma pipeline crosses a function boundary; a Hopper GEMM ran much slower), C7519 and
/// C7520 (warpgroup arrives/waits ptxas inserted; an attention_sm90 variant ran 45 % slower,
/// docs/perf-notes.md v10e). Such a build is rejected with the code in its reason.
std::string wgmma_serialization_warning(const std::string& log);

/// True when wgmma_serialization_warning finds one.
bool has_wgmma_serialization_warning(const std::string& log);

/// Builds every request (compile to .o, link to a loadable .so) with up to `jobs` nvcc
/// processes at once. Never throws for a failing kernel: it comes back with ok=false and the
/// reason. `progress` (may be null) is called after each result, under a lock.
std::vector<BuildResult> build_kernels(const std::vector<BuildRequest>& requests,
                                       const Toolchain& toolchain,
                                       const std::filesystem::path& cache_dir, int jobs,
                                       void (*progress)(const BuildResult&, int done, int total) = nullptr);

}  // namespace fact::realize
