#include "registry/registry.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

#include "base/error.h"
#include "base/hash.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace fact::registry {

namespace {

constexpr const char* kSchema = R"SQL(
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tuning (
  digest TEXT PRIMARY KEY,
  problem TEXT NOT NULL, gpu TEXT NOT NULL, cc TEXT NOT NULL, driver TEXT NOT NULL,
  cuda_runtime TEXT NOT NULL, nvcc TEXT NOT NULL, cutlass TEXT NOT NULL, flags TEXT NOT NULL,
  policy TEXT NOT NULL, winner TEXT NOT NULL, winner_impl TEXT NOT NULL,
  median_ms REAL NOT NULL, candidates TEXT NOT NULL, created TEXT NOT NULL);
)SQL";

constexpr const char* kColumns =
    "problem, gpu, cc, driver, cuda_runtime, nvcc, cutlass, flags, policy, winner, winner_impl, "
    "median_ms, candidates, created";

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
      throw Error(std::string("registry: ") + sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  void bind(int i, const std::string& v) { sqlite3_bind_text(stmt_, i, v.c_str(), -1, SQLITE_TRANSIENT); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(std::string("registry: ") + sqlite3_errmsg(db_));
  }
  std::string text(int i) const {
    const auto* p = sqlite3_column_text(stmt_, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  double real(int i) const { return sqlite3_column_double(stmt_, i); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error("registry: " + msg);
  }
}

// Opens and checks a database; returns nullptr (closing it) when it is unusable.
sqlite3* open_checked(const fs::path& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return nullptr;
  }
  try {
    exec(db, "PRAGMA journal_mode=WAL;");
    exec(db, kSchema);
    Statement version(db, "SELECT value FROM meta WHERE name = 'schema'");
    if (version.step()) {
      if (version.text(0) != std::to_string(kSchemaVersion)) throw Error("another schema");
    } else {
      exec(db, ("INSERT INTO meta VALUES ('schema', '" + std::to_string(kSchemaVersion) + "');").c_str());
    }
  } catch (const Error&) {
    sqlite3_close(db);
    return nullptr;
  }
  return db;
}

TuningRecord read_row(const Statement& s) {
  TuningRecord r;
  r.key = {s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6), s.text(7), s.text(8)};
  r.winner = s.text(9);
  r.winner_impl = s.text(10);
  r.median_ms = s.real(11);
  r.candidates = json::parse(s.text(12), nullptr, false);
  r.created = s.text(13);
  return r;
}

}  // namespace

std::string RecordKey::digest() const {
  std::string text = "schema:" + std::to_string(kSchemaVersion);
  for (const auto* f : {&problem, &gpu, &cc, &driver, &cuda_runtime, &nvcc, &cutlass, &flags, &policy}) {
    text += '\x1f' + *f;  // unit separator: no field can run into the next
  }
  return sha256_hex(text);
}

fs::path default_registry_path(const fs::path& cache_dir) {
  if (const char* p = std::getenv("FACT_REGISTRY"); p && *p) return p;
  return cache_dir / "registry.sqlite3";
}

Registry::Registry(const fs::path& path) {
  std::error_code ec;
  // Only a database file may be moved aside: a directory (or device, socket...) given as
  // the database is the user's, and is never renamed or replaced.
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    throw Error("registry: " + path.string() + " is " +
                (fs::is_directory(path, ec) ? "a directory" : "not a regular file") +
                ", not a registry database; name a database file (e.g. " +
                (path / "registry.sqlite3").string() + ")");
  }
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  db_ = open_checked(path);
  if (!db_) {
    fs::rename(path, fs::path(path.string() + ".corrupt"), ec);
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(fs::path(path.string() + suffix), ec);
    rebuilt_ = true;
    db_ = open_checked(path);
  }
  if (!db_) throw Error("registry: cannot create a database at " + path.string());
}

Registry::~Registry() { sqlite3_close(db_); }

void Registry::put(const TuningRecord& r) {
  Statement s(db_, std::string("INSERT OR REPLACE INTO tuning (digest, ") + kColumns +
                       ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const RecordKey& k = r.key;
  int i = 1;
  for (const std::string& v : {k.digest(), k.problem, k.gpu, k.cc, k.driver, k.cuda_runtime, k.nvcc,
                               k.cutlass, k.flags, k.policy, r.winner, r.winner_impl}) {
    s.bind(i++, v);
  }
  s.bind(i++, r.median_ms);
  s.bind(i++, r.candidates.dump());
  s.bind(i++, r.created.empty() ? now_utc() : r.created);
  s.step();
}

std::optional<TuningRecord> Registry::get(const RecordKey& key) const {
  Statement s(db_, std::string("SELECT ") + kColumns + " FROM tuning WHERE digest = ?");
  s.bind(1, key.digest());
  if (!s.step()) return std::nullopt;
  return read_row(s);
}

std::vector<TuningRecord> Registry::list() const {
  Statement s(db_, std::string("SELECT ") + kColumns + " FROM tuning ORDER BY created, digest");
  std::vector<TuningRecord> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

json to_json(const TuningRecord& r) {
  const RecordKey& k = r.key;
  return {{"problem", json::parse(k.problem, nullptr, false)}, {"gpu", k.gpu}, {"cc", k.cc},
          {"driver", k.driver}, {"cuda_runtime", k.cuda_runtime}, {"nvcc", k.nvcc},
          {"cutlass", k.cutlass}, {"flags", k.flags}, {"policy", k.policy}, {"winner", r.winner},
          {"winner_impl", r.winner_impl}, {"median_ms", r.median_ms}, {"candidates", r.candidates},
          {"created", r.created}};
}

TuningRecord record_from_json(const json& j) {
  try {
    TuningRecord r;
    r.key = {j.at("problem").dump(), j.at("gpu"), j.at("cc"), j.at("driver"), j.at("cuda_runtime"),
             j.at("nvcc"), j.at("cutlass"), j.at("flags"), j.at("policy")};
    r.winner = j.at("winner");
    r.winner_impl = j.at("winner_impl");
    r.median_ms = j.at("median_ms");
    r.candidates = j.value("candidates", json::array());
    r.created = j.value("created", "");
    return r;
  } catch (const json::exception& e) {
    throw Error(std::string("registry record: ") + e.what());
  }
}

json Registry::export_json() const {
  json out = json::array();
  for (const auto& r : list()) out.push_back(to_json(r));
  return out;
}

int Registry::import_json(const json& records) {
  if (!records.is_array()) throw Error("registry import: expected a JSON array of records");
  // Every record is read before any is written, and all are written in one transaction:
  // a file with one bad record imports nothing.
  std::vector<TuningRecord> parsed;
  for (size_t i = 0; i < records.size(); ++i) {
    try {
      parsed.push_back(record_from_json(records[i]));
    } catch (const Error& e) {
      throw Error("registry import: record #" + std::to_string(i) + ": " + e.what() + " (nothing imported)");
    }
  }
  exec(db_, "BEGIN IMMEDIATE");
  try {
    for (const auto& r : parsed) put(r);
    exec(db_, "COMMIT");
  } catch (...) {
    exec(db_, "ROLLBACK");
    throw;
  }
  return int(parsed.size());
}

}  // namespace fact::registry
