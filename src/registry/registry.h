// The tuning registry (docs/00-design.md §3): what realization chose for a problem on one
// GPU and toolchain, kept in an embedded SQLite database (WAL journal) so that the same
// problem is never tuned twice.
//
// A record's key names everything that can change the answer: the problem (its canonical
// JSON), the GPU name and compute capability, the driver, the CUDA runtime, nvcc's
// version, the CUTLASS version, the compile flags, the precision policy and the registry's
// schema version. Any difference is a miss, never a wrong answer.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

struct sqlite3;

namespace fact::registry {

inline constexpr int kSchemaVersion = 1;

struct RecordKey {
  std::string problem;   // canonical JSON of the plan's problem (nlohmann dump, sorted keys)
  std::string gpu, cc, driver, cuda_runtime, nvcc, cutlass, flags, policy;

  /// SHA-256 over every field and kSchemaVersion: the record's primary key.
  std::string digest() const;
};

struct TuningRecord {
  RecordKey key;
  std::string winner;        // kernel name
  std::string winner_impl;   // "cutlass" | "vendor"
  double median_ms = 0;
  nlohmann::json candidates = nlohmann::json::array();  // as in realized.json
  std::string created;       // UTC, ISO 8601
};

/// Default database path: $FACT_REGISTRY, else <cache dir>/registry.sqlite3.
std::filesystem::path default_registry_path(const std::filesystem::path& cache_dir);

class Registry {
 public:
  /// Opens (creating if needed) the database at `path`. A file that is not a readable
  /// registry (corrupt, another schema) is moved aside to `<path>.corrupt` and a new one is
  /// created. Throws fact::Error when the path cannot be used at all.
  explicit Registry(const std::filesystem::path& path);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// Inserts or replaces the record under its key's digest.
  void put(const TuningRecord& record);
  /// The record for exactly this key, or std::nullopt.
  std::optional<TuningRecord> get(const RecordKey& key) const;
  /// All records, oldest first.
  std::vector<TuningRecord> list() const;
  /// All records as a JSON array (the export format), and the inverse; import returns how
  /// many records it wrote. Throws fact::Error for malformed input.
  nlohmann::json export_json() const;
  int import_json(const nlohmann::json& records);

  /// True when opening found a damaged file and replaced it.
  bool rebuilt() const { return rebuilt_; }

 private:
  sqlite3* db_ = nullptr;
  bool rebuilt_ = false;
};

nlohmann::json to_json(const TuningRecord& r);
TuningRecord record_from_json(const nlohmann::json& j);

}  // namespace fact::registry
