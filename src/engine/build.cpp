#include "engine/build.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <system_error>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json_format.h"
#include "base/hash.h"
#include "base/process.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace fact::realize {

std::string kernel_symbol(const std::string& kernel_name) {
  return "fact_k_" + sha256_hex(kernel_name).substr(0, 16);
}

std::string candidate_kernel(const std::string& candidate) {
  const auto plus = candidate.find('+');
  if (plus == 0) throw Error("candidate " + candidate + ": no kernel name before the run-time options");
  return candidate.substr(0, plus);
}

std::string cache_key(const BuildRequest& request, const Toolchain& toolchain) {
  return sha256_hex(request.source + "\n--toolchain--\n" + toolchain.key_text());
}

fs::path default_cache_dir() {
  if (const char* d = std::getenv("FACT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "fact";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache" / "fact";
}

int default_jobs() {
  long avail_kb = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    long value = 0;
    std::string unit;
    meminfo >> value >> unit;
    if (key == "MemAvailable:") avail_kb = value;
  }
  const int by_memory = int(double(avail_kb) / (3.5 * 1024 * 1024));
  const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, std::min(threads, by_memory));
}

std::string wgmma_serialization_warning(const std::string& log) {
  for (const char* code : {"C7510", "C7519", "C7520"}) {
    if (log.find(code) != std::string::npos) return code;
  }
  return {};
}

bool has_wgmma_serialization_warning(const std::string& log) { return !wgmma_serialization_warning(log).empty(); }

namespace {

std::string read_or_empty(const fs::path& p) {
  try {
    return read_file(p);
  } catch (const Error&) {
    return {};
  }
}

// A cached entry is usable when meta.json exists, parses (strictly: a key twice is damage),
// has status "ok" or "quarantined" and (for ok entries) both files still hash to what it
// recorded. Returns false with corrupt set for a damaged entry, false alone for none.
bool load_cached(const fs::path& dir, BuildResult& r, bool& corrupt) {
  corrupt = false;
  std::error_code ec;
  if (!fs::exists(dir / "meta.json", ec)) return false;
  try {
    const json meta = parse_json_document<json>(read_file(dir / "meta.json"), (dir / "meta.json").string());
    const std::string status = meta.at("status").get<std::string>();
    if (status != "ok" && status != "quarantined") throw Error("status " + status);
    r.ok = status == "ok";
    r.reason = meta.value("reason", "");
    r.seconds = meta.value("seconds", 0.0);
    if (r.ok) {
      if (!fs::exists(r.object) || !fs::exists(r.library) ||
          sha256_file(r.object) != meta.at("object_sha256").get<std::string>() ||
          sha256_file(r.library) != meta.at("library_sha256").get<std::string>()) {
        corrupt = true;
        return false;
      }
    }
    return true;
  } catch (const std::exception&) {
    r.ok = false;
    r.reason.clear();
    corrupt = true;
    return false;
  }
}

void build_one(const BuildRequest& req, const Toolchain& tc, BuildResult& r) {
  const fs::path dir = r.object.parent_path();
  const fs::path source = dir / "kernel.cu";
  write_file(source, req.source);
  const auto start = std::chrono::steady_clock::now();
  int rc = run_process(tc.compile_command(source, r.object), r.log);
  std::string log = read_or_empty(r.log);
  if (rc >= 128) {
    // Killed (e.g. out of memory): not a property of the source, so nothing is cached.
    r.ok = false;
    r.reason = "nvcc was killed (status " + std::to_string(rc) +
               ", out of memory?): not cached, retried next run; try fewer --jobs";
    return;
  }
  if (rc != 0) {
    r.ok = false;
    r.reason = "nvcc failed (exit " + std::to_string(rc) + "), see " + r.log.string();
  } else if (const std::string code = wgmma_serialization_warning(log); !code.empty()) {
    r.ok = false;
    r.reason = "ptxas warning " + code + ": wgmma serialized " +
               (code == "C7510" ? "across a function boundary" : "by warpgroup synchronization ptxas inserted");
  } else {
    const fs::path link_log = dir / "link.log";
    rc = run_process(tc.link_command({r.object}, r.library), link_log);
    r.ok = rc == 0;
    if (!r.ok) r.reason = "link failed (exit " + std::to_string(rc) + "), see " + link_log.string();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  json meta{{"name", req.name}, {"status", r.ok ? "ok" : "quarantined"}, {"reason", r.reason},
            {"seconds", r.seconds}};
  if (r.ok) {
    meta["object_sha256"] = sha256_file(r.object);
    meta["library_sha256"] = sha256_file(r.library);
  }
  // meta.json is written last and atomically: its presence marks a finished entry.
  write_file(dir / "meta.json.tmp", meta.dump(2));
  fs::rename(dir / "meta.json.tmp", dir / "meta.json");
}

}  // namespace

std::vector<BuildResult> build_kernels(const std::vector<BuildRequest>& requests,
                                       const Toolchain& tc, const fs::path& cache_dir, int jobs,
                                       void (*progress)(const BuildResult&, int, int)) {
  std::vector<BuildResult> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    auto& r = results[i];
    r.name = requests[i].name;
    r.symbol = requests[i].symbol;
    r.key = cache_key(requests[i], tc);
    const fs::path dir = cache_dir / "kernels" / r.key;
    r.object = dir / "kernel.o";
    r.library = dir / "kernel.so";
    r.log = dir / "build.log";
  }
  std::atomic<size_t> next{0};
  std::atomic<int> done{0};
  std::mutex mu;
  auto worker = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      auto& r = results[i];
      const fs::path dir = r.object.parent_path();
      bool corrupt = false;
      try {
        fs::create_directories(dir);
        if (load_cached(dir, r, corrupt)) {
          r.cached = true;
        } else {
          r.rebuilt_corrupt = corrupt;
          build_one(requests[i], tc, r);
        }
      } catch (const std::exception& e) {
        r.ok = false;
        r.reason = std::string("build error: ") + e.what();
      }
      std::lock_guard<std::mutex> lock(mu);
      if (progress) progress(r, ++done, int(requests.size()));
    }
  };
  // One worker per job, but never more workers than kernels to build (--jobs may be any
  // size); a thread the system refuses ends the pool cleanly and is reported.
  const size_t workers = std::clamp<size_t>(size_t(std::max(1, jobs)), 1, std::max<size_t>(1, requests.size()));
  std::vector<std::thread> pool;
  std::string refused;
  for (size_t j = 0; j < workers && refused.empty(); ++j) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error& e) {
      refused = e.what();
    }
  }
  for (auto& t : pool) t.join();
  if (pool.empty()) throw Error("build: cannot start a build thread: " + refused);
  return results;
}

}  // namespace fact::realize
