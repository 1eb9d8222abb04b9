#include "engine/toolchain.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <regex>

#include "base/error.h"
#include "base/file_io.h"
#include "base/hash.h"
#include "base/process.h"

namespace fs = std::filesystem;

namespace fact::realize {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

std::string find_nvcc(const std::string& override_path) {
  std::vector<std::string> tries;
  if (!override_path.empty()) tries.push_back(override_path);
  if (!env("FACT_NVCC").empty()) tries.push_back(env("FACT_NVCC"));
  if (!env("CUDA_HOME").empty()) tries.push_back(env("CUDA_HOME") + "/bin/nvcc");
  tries.push_back("/usr/local/cuda/bin/nvcc");
  tries.push_back("nvcc");
  for (const auto& t : tries) {
    if (!capture_output({t, "--version"}).empty()) return t;
  }
  std::string msg = "nvcc not found (tried:";
  for (const auto& t : tries) msg += " " + t;
  throw Error(msg + "); install the CUDA toolkit or set FACT_NVCC");
}

fs::path find_cutlass(const std::string& override_dir) {
  std::vector<fs::path> tries;
  if (!override_dir.empty()) tries.emplace_back(override_dir);
  if (!env("FACT_CUTLASS_DIR").empty()) tries.emplace_back(env("FACT_CUTLASS_DIR"));
  tries.push_back(executable_dir() / ".." / ".deps" / "cutlass");
  tries.push_back(fs::path(FACT_SOURCE_DIR) / ".deps" / "cutlass");
  for (const auto& t : tries) {
    if (fs::exists(t / "include" / "cutlass" / "version.h")) return fs::weakly_canonical(t);
  }
  std::string msg = "CUTLASS headers not found (tried:";
  for (const auto& t : tries) msg.append(" ").append(t.string());
  throw Error(msg + "); run scripts/setup.sh or set FACT_CUTLASS_DIR");
}

std::string cutlass_version(const fs::path& dir) {
  const std::string text = read_file(dir / "include" / "cutlass" / "version.h");
  auto grab = [&](const char* macro) {
    std::smatch m;
    std::regex re(std::string("#define ") + macro + "\\s+(\\d+)");
    return std::regex_search(text, m, re) ? m[1].str() : std::string("?");
  };
  return grab("CUTLASS_MAJOR") + "." + grab("CUTLASS_MINOR") + "." + grab("CUTLASS_PATCH");
}

}  // namespace

std::string cutlass_headers_sha256(const fs::path& cutlass_dir) {
  static std::mutex mu;
  static std::map<fs::path, std::string> memo;
  const fs::path dir = fs::weakly_canonical(cutlass_dir);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = memo.find(dir); it != memo.end()) return it->second;
  std::string text;
  for (const fs::path& sub : {fs::path("include"), fs::path("tools") / "util" / "include"}) {
    std::error_code ec;
    text += sub.generic_string() + ":" + (fs::is_directory(dir / sub, ec) ? sha256_tree(dir / sub) : "absent") + "\n";
  }
  return memo[dir] = sha256_hex(text);
}

Toolchain find_toolchain(const std::string& nvcc_override, const std::string& cutlass_override) {
  Toolchain t;
  t.nvcc = find_nvcc(nvcc_override);
  t.nvcc_version_text = capture_output({t.nvcc, "--version"});
  std::smatch m;
  std::regex re("release [0-9.]+, V([0-9.]+)");
  t.nvcc_version = std::regex_search(t.nvcc_version_text, m, re) ? m[1].str() : "unknown";
  t.cutlass_dir = find_cutlass(cutlass_override);
  t.cutlass_version = cutlass_version(t.cutlass_dir);
  t.cutlass_headers_sha256 = cutlass_headers_sha256(t.cutlass_dir);
  // -DNDEBUG matters: without it nvcc 13.0 serializes wgmma across function boundaries
  // (ptxas C7510) and CUTLASS's TF32 example ran at 0.69x cuBLAS.
  t.compile_flags = {"-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr",
                     "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler=-fPIC"};
  return t;
}

std::vector<std::string> Toolchain::compile_command(const fs::path& source,
                                                    const fs::path& object) const {
  std::vector<std::string> cmd{nvcc};
  cmd.insert(cmd.end(), compile_flags.begin(), compile_flags.end());
  cmd.push_back("-I" + (cutlass_dir / "include").string());
  cmd.push_back("-I" + (cutlass_dir / "tools" / "util" / "include").string());
  cmd.insert(cmd.end(), {"-c", source.string(), "-o", object.string()});
  return cmd;
}

std::vector<std::string> Toolchain::link_command(const std::vector<fs::path>& objects,
                                                 const fs::path& library) const {
  std::vector<std::string> cmd{nvcc, "-shared", "-cudart", "shared", "-o", library.string()};
  for (const auto& o : objects) cmd.push_back(o.string());
  return cmd;
}

std::string Toolchain::flags_text() const {
  std::string s;
  for (const auto& f : compile_flags) s += f + " ";
  return s;
}

std::string Toolchain::key_text() const {
  return "nvcc:" + nvcc_version_text + "\ncutlass:" + cutlass_version +
         "\ncutlass-headers:" + cutlass_headers_sha256 + "\nflags:" + flags_text();
}

}  // namespace fact::realize
