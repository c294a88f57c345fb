#include "compiler/runtime/compile_cache.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "core/util/md5.h"

namespace kiln::runtime {
namespace {

// Part of every key. Bump the codegen number whenever the code generated for
// an unchanged key changes (new lowering, new runtime ABI, a fixed
// miscompile): old entries then simply stop matching. The project version is
// not visible to kiln_compiler's sources, so it is repeated here.
constexpr const char* kBuildId = "kiln-0.1.0/codegen-1";

// PRAGMA application_id of our files ("KlnC"): tells our cache apart from any
// other SQLite database that happens to sit at the path.
constexpr int64_t kApplicationId = 0x4B6C6E43;

// One migration per schema version: kMigrations[i] takes version i to i + 1.
// The key text and description are only for people inspecting the file.
const char* const kMigrations[] = {
    "CREATE TABLE cache_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE entries ("
    "  digest TEXT PRIMARY KEY,"
    "  key TEXT NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  checksum TEXT NOT NULL,"
    "  description TEXT NOT NULL,"
    "  created_us INTEGER NOT NULL,"
    "  last_used_us INTEGER NOT NULL,"
    "  blob BLOB NOT NULL);"  // last, so reading the other columns never touches its overflow pages
    "CREATE INDEX entries_by_last_use ON entries(last_used_us);",
};
static_assert(std::size(kMigrations) == CompileCache::kSchemaVersion);

enum StatementId { kSelect, kTouch, kInsert, kErase };

// Clears a prepared statement for its next use, however the scope is left.
struct ResetOnExit {
  sqlite3_stmt* stmt;
  ~ResetOnExit() {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }
};

void bind_text(sqlite3_stmt* st, int i, std::string_view s) {
  sqlite3_bind_text(st, i, s.data(), int(s.size()), SQLITE_STATIC);
}

std::string column_text(sqlite3_stmt* st, int col) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, col));
  return p ? std::string(p, size_t(sqlite3_column_bytes(st, col))) : std::string();
}

// Microseconds since the epoch, strictly increasing within the process so that
// use order is exact even when two lookups fall in one clock tick.
int64_t use_stamp() {
  static std::atomic<int64_t> last{0};
  int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  int64_t prev = last.load();
  while (!last.compare_exchange_weak(prev, std::max(now, prev + 1))) {
  }
  return std::max(now, prev + 1);
}

// A 64-bit checksum over the blob, four independent multiply lanes (the
// round of xxHash64) so that checking a large object costs microseconds: MD5
// was most of a lookup's time. It guards against damage, not against tampering.
// Words are read in host byte order; a file moved to a machine of the other
// order only loses its entries.
std::string checksum_of(std::string_view data) {
  constexpr uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full, P3 = 0x165667B19E3779F9ull;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto round = [&](uint64_t acc, uint64_t word) { return rotl(acc + word * P2, 31) * P1; };
  auto word_at = [&](size_t i) {
    uint64_t w;
    std::memcpy(&w, data.data() + i, 8);
    return w;
  };
  uint64_t lanes[4] = {P1 + P2, P2, 0, 0 - P1};
  size_t i = 0, n = data.size();
  for (; i + 32 <= n; i += 32)
    for (int l = 0; l < 4; ++l) lanes[l] = round(lanes[l], word_at(i + 8 * size_t(l)));
  uint64_t h = rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18) + n * P3;
  for (; i + 8 <= n; i += 8) h = rotl(h ^ round(0, word_at(i)), 27) * P1 + P3;
  for (; i < n; ++i) h = rotl(h ^ (uint8_t(data[i]) * P3), 11) * P1;
  h ^= h >> 33, h *= P2, h ^= h >> 29, h *= P3, h ^= h >> 32;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += '[';
  out += std::to_string(value.size());
  out += "]=";
  out += value;
  out += '\n';
}

}  // namespace

std::string compile_cache_build_id() { return kBuildId; }

std::string CacheKey::text() const {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(graph_hash));
  // Lengths in front of the values keep the text unambiguous whatever the
  // fields contain, so it can be hashed as is.
  std::string out;
  append_field(out, "graph_hash", hash);
  append_field(out, "layout", layout);
  append_field(out, "options", options);
  append_field(out, "target", target);
  append_field(out, "kiln_version", kiln_version);
  return out;
}

std::string CacheKey::digest() const { return md5_hex(text()); }

// ---- opening ----

Expected<std::unique_ptr<CompileCache>> CompileCache::open(const std::string& path, WarningSink warn) {
  if (!warn) warn = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  sqlite3* db = nullptr;
  // NOMUTEX: the object's own mutex already serializes every use of the connection.
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::error("cannot open the compile cache: " + msg, {path, 0});
  }
  std::unique_ptr<CompileCache> cache(new CompileCache(path, db, std::move(warn)));
  if (Status s = cache->initialize(); !s) return s;
  return cache;
}

CompileCache::CompileCache(std::string path, sqlite3* db, WarningSink warn)
    : path_(std::move(path)), db_(db), warn_(std::move(warn)) {}

CompileCache::~CompileCache() {
  for (sqlite3_stmt* st : statements_) sqlite3_finalize(st);
  sqlite3_close(db_);
}

Status CompileCache::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Status::error("compile cache: " + msg, {path_, 0});
  }
  return {};
}

Status CompileCache::sql_error(const std::string& what) const {
  return Status::error("compile cache: " + what + ": " + sqlite3_errmsg(db_), {path_, 0});
}

sqlite3_stmt* CompileCache::prepared(int which, const char* sql) {
  if (!statements_[which] && sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &statements_[which],
                                                nullptr) != SQLITE_OK)
    statements_[which] = nullptr;
  return statements_[which];
}

// Decides whose file this is before writing anything: WAL mode, the schema and
// even a journal would change a stranger's file.
Status CompileCache::initialize() {
  sqlite3_busy_timeout(db_, 5000);
  auto read_identity = [&](int64_t& application_id, int64_t& objects) -> Status {
    sqlite3_stmt* st = nullptr;
    const char* sql = "SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_schema);";
    int rc = sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      application_id = sqlite3_column_int64(st, 0);
      objects = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW) return {};
    if (rc == SQLITE_NOTADB)
      return Status::error("not a Kiln compile cache (not a SQLite database); the file was left untouched; "
                           "set KILN_CACHE_DIR to use another folder",
                           {path_, 0});
    return Status::error(std::string("cannot read the compile cache (") + sqlite3_errmsg(db_) +
                             "); the file was left untouched; remove it to start an empty cache",
                         {path_, 0});
  };
  int64_t application_id = 0, objects = 0;
  if (Status s = read_identity(application_id, objects); !s) return s;
  bool ours = application_id == kApplicationId;
  if (!ours && (application_id != 0 || objects != 0))
    return Status::error("a SQLite database that is not a Kiln compile cache; the file was left untouched; "
                         "set KILN_CACHE_DIR to use another folder",
                         {path_, 0});

  if (!ours) {
    // Incremental vacuum lets eviction give pages back to the file system; it
    // can only be chosen before the first table exists.
    if (Status s = exec("PRAGMA auto_vacuum=INCREMENTAL;"); !s) return s;
  }
  if (Status s = exec("PRAGMA journal_mode=WAL;"); !s) return s;
  // In WAL mode NORMAL never corrupts the file; a crash may only lose the
  // latest entries, which a cache can afford, and commits skip an fsync.
  if (Status s = exec("PRAGMA synchronous=NORMAL;"); !s) return s;

  // Another process may be creating the same file: decide again under the write lock.
  if (Status s = exec("BEGIN IMMEDIATE;"); !s) return s;
  Status result = [&]() -> Status {
    if (Status s = read_identity(application_id, objects); !s) return s;
    int version = 0;
    if (application_id == kApplicationId) {
      sqlite3_stmt* st = nullptr;
      int rc = sqlite3_prepare_v2(db_, "SELECT value FROM cache_meta WHERE name = 'schema_version';", -1, &st,
                                  nullptr);
      if (rc == SQLITE_OK) rc = sqlite3_step(st);
      version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
      sqlite3_finalize(st);
      if (version <= 0)
        return Status::error("the compile cache is damaged (no schema version); remove it to start an empty cache",
                             {path_, 0});
    } else if (application_id != 0 || objects != 0) {
      return Status::error("a SQLite database that is not a Kiln compile cache; the file was left untouched",
                           {path_, 0});
    }
    if (version > kSchemaVersion)
      return Status::error("the compile cache has schema version " + std::to_string(version) +
                               ", newer than this Kiln's " + std::to_string(kSchemaVersion) +
                               "; set KILN_CACHE_DIR to give this Kiln its own cache",
                           {path_, 0});
    if (version == kSchemaVersion) return {};
    for (int v = version; v < kSchemaVersion; ++v)
      if (Status s = exec(kMigrations[v]); !s) return s;
    std::string finish = "INSERT OR REPLACE INTO cache_meta VALUES ('schema_version', '" +
                         std::to_string(kSchemaVersion) + "');PRAGMA application_id=" +
                         std::to_string(kApplicationId) + ";";
    return exec(finish.c_str());
  }();
  if (!result) {
    exec("ROLLBACK;");
    return result;
  }
  return exec("COMMIT;");
}

// ---- entries ----

std::optional<std::string> CompileCache::lookup(const CacheKey& key) {
  const std::string key_text = key.text();
  const std::string digest = md5_hex(key_text);
  std::lock_guard lock(mutex_);
  auto miss = [&] {
    ++misses_;
    return std::nullopt;
  };
  sqlite3_stmt* st = prepared(kSelect, "SELECT key, size, checksum, blob FROM entries WHERE digest = ?1;");
  // A broken database would fail every lookup the same way: say so once.
  auto warn_db_error = [&] {
    if (std::exchange(warned_db_error_, true)) return;
    warn_("kiln: warning: compile cache " + path_ + ": " + sqlite3_errmsg(db_) + "; compiling without it");
  };
  if (!st) {
    warn_db_error();
    return miss();
  }
  std::string blob, checksum;
  int64_t size = 0;
  {
    ResetOnExit reset{st};
    bind_text(st, 1, digest);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) return miss();
    if (rc != SQLITE_ROW) {
      warn_db_error();
      return miss();
    }
    // Equal digests of different keys would need an MD5 collision; comparing
    // the text makes even that a miss instead of someone else's code.
    if (column_text(st, 0) != key_text) return miss();
    size = sqlite3_column_int64(st, 1);
    checksum = column_text(st, 2);
    const auto* data = static_cast<const char*>(sqlite3_column_blob(st, 3));
    blob.assign(data ? data : "", size_t(sqlite3_column_bytes(st, 3)));
  }
  if (int64_t(blob.size()) != size || checksum_of(blob) != checksum) {
    std::string why = int64_t(blob.size()) != size ? "holds " + std::to_string(blob.size()) + " of " +
                                                         std::to_string(size) + " bytes"
                                                   : "fails its checksum";
    warn_("kiln: warning: compile cache " + path_ + ": entry " + digest + " " + why + "; dropped it and recompiling");
    erase_locked(digest);
    return miss();
  }
  if (sqlite3_stmt* touch = prepared(kTouch, "UPDATE entries SET last_used_us = ?2 WHERE digest = ?1;")) {
    // Best effort: a busy database only makes the entry look older than it is.
    ResetOnExit reset{touch};
    bind_text(touch, 1, digest);
    sqlite3_bind_int64(touch, 2, use_stamp());
    sqlite3_step(touch);
  }
  ++hits_;
  return blob;
}

void CompileCache::erase_locked(const std::string& digest) {
  sqlite3_stmt* st = prepared(kErase, "DELETE FROM entries WHERE digest = ?1;");
  if (!st) return;
  ResetOnExit reset{st};
  bind_text(st, 1, digest);
  sqlite3_step(st);
}

Status CompileCache::store(const CacheKey& key, std::string_view blob, std::string_view description) {
  if (blob.size() > size_t(INT_MAX))
    return Status::error("compile cache: object code of " + std::to_string(blob.size()) +
                             " bytes is too large to cache",
                         {path_, 0});
  const std::string key_text = key.text();
  const std::string digest = md5_hex(key_text);
  const std::string checksum = checksum_of(blob);
  std::lock_guard lock(mutex_);
  sqlite3_stmt* st = prepared(kInsert,
                              "INSERT OR REPLACE INTO entries"
                              "(digest, key, size, checksum, description, created_us, last_used_us, blob)"
                              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7);");
  if (!st) return sql_error("cannot prepare a store");
  if (Status s = exec("BEGIN IMMEDIATE;"); !s) return s;
  Status result = [&]() -> Status {
    {
      ResetOnExit reset{st};
      bind_text(st, 1, digest);
      bind_text(st, 2, key_text);
      sqlite3_bind_int64(st, 3, int64_t(blob.size()));
      bind_text(st, 4, checksum);
      bind_text(st, 5, description);
      sqlite3_bind_int64(st, 6, use_stamp());
      // An empty view may have a null data pointer, which SQLite would store as NULL.
      if (blob.empty())
        sqlite3_bind_zeroblob(st, 7, 0);
      else
        sqlite3_bind_blob(st, 7, blob.data(), int(blob.size()), SQLITE_STATIC);
      if (sqlite3_step(st) != SQLITE_DONE) return sql_error("cannot store an entry");
    }
    return evict_locked(digest);
  }();
  if (!result) {
    exec("ROLLBACK;");
    return result;
  }
  return exec("COMMIT;");
}

Status CompileCache::evict_locked(const std::string& keep_digest) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT coalesce(sum(size), 0) FROM entries;", -1, &st, nullptr) != SQLITE_OK)
    return sql_error("cannot size the cache");
  int64_t total = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (total <= max_bytes_) return {};

  std::vector<std::string> victims;
  if (sqlite3_prepare_v2(db_, "SELECT digest, size FROM entries ORDER BY last_used_us;", -1, &st, nullptr) !=
      SQLITE_OK)
    return sql_error("cannot list entries to evict");
  while (total > max_bytes_ && sqlite3_step(st) == SQLITE_ROW) {
    std::string digest = column_text(st, 0);
    if (digest == keep_digest) continue;
    total -= sqlite3_column_int64(st, 1);
    victims.push_back(std::move(digest));
  }
  sqlite3_finalize(st);
  for (const std::string& digest : victims) erase_locked(digest);
  // Hands freed pages back to the file system, so the file shrinks with the cache.
  if (!victims.empty()) exec("PRAGMA incremental_vacuum;");
  return {};
}

CompileCache::Stats CompileCache::stats() const {
  std::lock_guard lock(mutex_);
  Stats out;
  out.hits = hits_;
  out.misses = misses_;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT count(*), coalesce(sum(size), 0) FROM entries;", -1, &st, nullptr) ==
          SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    out.entries = sqlite3_column_int64(st, 0);
    out.bytes = sqlite3_column_int64(st, 1);
  }
  sqlite3_finalize(st);
  return out;
}

Status CompileCache::clear() {
  std::lock_guard lock(mutex_);
  if (Status s = exec("DELETE FROM entries;"); !s) return s;
  exec("PRAGMA incremental_vacuum;");
  return {};
}

int64_t CompileCache::max_bytes() const {
  std::lock_guard lock(mutex_);
  return max_bytes_;
}

void CompileCache::set_max_bytes(int64_t bytes) {
  std::lock_guard lock(mutex_);
  max_bytes_ = bytes;
}

// ---- the process-wide cache ----

Expected<std::string> default_compile_cache_path() {
  namespace fs = std::filesystem;
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  const char* file = "compile-cache.sqlite";
  if (std::string dir = env("KILN_CACHE_DIR"); !dir.empty()) return (fs::path(dir) / file).string();
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return (fs::path(dir) / "kiln" / file).string();
  if (std::string home = env("HOME"); !home.empty()) return (fs::path(home) / ".cache" / "kiln" / file).string();
  return Status::error("compile cache: none of KILN_CACHE_DIR, XDG_CACHE_HOME and HOME is set");
}

namespace {

std::unique_ptr<CompileCache> open_default_compile_cache() {
  const char* enabled = std::getenv("KILN_COMPILE_CACHE");
  if (enabled && (std::string_view(enabled) == "0" || std::string_view(enabled) == "off")) return nullptr;
  auto warn = [](const std::string& why) {
    std::fprintf(stderr, "kiln: warning: %s; compiling without a cache (KILN_COMPILE_CACHE=0 silences this)\n",
                 why.c_str());
  };
  Expected<std::string> path = default_compile_cache_path();
  if (!path) {
    warn(path.status().to_string());
    return nullptr;
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(*path).parent_path(), ec);
  if (ec) {
    warn("cannot create the folder of the compile cache " + *path + ": " + ec.message());
    return nullptr;
  }
  auto cache = CompileCache::open(*path);
  if (!cache) {
    warn(cache.status().to_string());
    return nullptr;
  }
  return std::move(cache).value();
}

}  // namespace

CompileCache* default_compile_cache() {
  static const std::unique_ptr<CompileCache> cache = open_default_compile_cache();
  return cache.get();
}

}  // namespace kiln::runtime
