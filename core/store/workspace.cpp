#include "core/store/workspace.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/util/md5.h"

namespace kiln {
namespace {

// One migration per schema version: migrations[i] takes version i to i + 1.
const char* const kMigrations[] = {
    // 0 -> 1: imported traces and their index.
    "CREATE TABLE trace_index ("
    "  path TEXT PRIMARY KEY,"
    "  size INTEGER NOT NULL,"
    "  mtime_ns INTEGER NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  indexed_at TEXT NOT NULL DEFAULT (datetime('now')),"
    "  blob BLOB NOT NULL);",
    // 1 -> 2: the MD5 of each blob. SQLite's integrity check passes a flipped
    // byte inside a blob, which decoded to wrong names and counts.
    "ALTER TABLE trace_index ADD COLUMN digest BLOB;",
};
static_assert(std::size(kMigrations) == Workspace::kSchemaVersion);

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  void bind(int i, const std::string& s) { sqlite3_bind_text(stmt_, i, s.data(), int(s.size()), SQLITE_TRANSIENT); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind_blob(int i, const std::vector<uint8_t>& b) {
    sqlite3_bind_blob(stmt_, i, b.data(), int(b.size()), SQLITE_TRANSIENT);
  }
  int step() { return rc_ = sqlite3_step(stmt_); }
  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(stmt_, col))) : "";
  }
  std::vector<uint8_t> blob(int col) const {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, col));
    return p ? std::vector<uint8_t>(p, p + sqlite3_column_bytes(stmt_, col)) : std::vector<uint8_t>{};
  }
  std::string error() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

std::vector<uint8_t> digest_of(const std::vector<uint8_t>& blob) {
  Md5 md5;
  md5.update(blob.data(), blob.size());
  Md5Digest d = md5.finish();
  return std::vector<uint8_t>(d.begin(), d.end());
}

}  // namespace

Expected<FileStamp> stamp_of(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto stamp_file = [](const fs::path& p) -> std::optional<FileStamp> {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return std::nullopt;
    return FileStamp{int64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  };
  if (fs::is_directory(path, ec)) {
    FileStamp total{0, 0};
    // Never the throwing forms: a symlink loop or an unreadable subfolder is
    // skipped, not an uncaught filesystem_error.
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      std::error_code file_ec;
      if (!it->is_regular_file(file_ec)) continue;
      auto s = stamp_file(it->path());
      if (!s) continue;
      total.size += s->size;
      total.mtime_ns = std::max(total.mtime_ns, s->mtime_ns);
    }
    return total;
  }
  auto s = stamp_file(path);
  if (!s) return Status::error("cannot stat file", {path, 0});
  return *s;
}

Expected<std::unique_ptr<Workspace>> Workspace::open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return Status::error("cannot open workspace: " + msg, {path, 0});
  }
  std::unique_ptr<Workspace> ws(new Workspace(path, db));
  sqlite3_busy_timeout(db, 5000);
  // journal_mode is the first statement to touch the file: a non-database fails here.
  // Switching a new file to WAL takes an exclusive lock that SQLite does not
  // wait for through the busy handler: another process creating the same
  // workspace makes it fail at once with "database is locked", so it is retried.
  for (int attempt = 0;; ++attempt) {
    const int code = sqlite3_exec(db, "PRAGMA journal_mode=WAL;", nullptr, nullptr, nullptr);
    if (code == SQLITE_OK) break;
    if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || attempt >= 200)
      return Status::error("workspace: " + std::string(sqlite3_errmsg(db)), {path, 0});
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (Status s = ws->exec("PRAGMA foreign_keys=ON;"); !s) return s;
  if (Status s = ws->migrate(); !s) return s;
  return ws;
}

Workspace::~Workspace() { sqlite3_close(db_); }

Status Workspace::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Status::error("workspace: " + msg, {path_, 0});
  }
  return {};
}

int Workspace::schema_version() const {
  Statement st(db_, "PRAGMA user_version;");
  return st.ok() && st.step() == SQLITE_ROW ? int(st.int64(0)) : -1;
}

Status Workspace::migrate() {
  auto check = [&](int version) -> Status {
    if (version < 0) return Status::error("workspace: cannot read schema version", {path_, 0});
    if (version > kSchemaVersion)
      return Status::error("workspace has schema version " + std::to_string(version) + ", newer than this Kiln's " +
                               std::to_string(kSchemaVersion),
                           {path_, 0});
    return {};
  };
  const int seen = schema_version();
  if (Status s = check(seen); !s) return s;
  if (seen == kSchemaVersion) return {};
  // Read again under the write lock: two processes creating the same new
  // workspace both saw version 0, and the second failed ("table trace_index
  // already exists").
  return transaction([&]() -> Status {
    const int version = schema_version();
    if (Status s = check(version); !s) return s;
    for (int v = version; v < kSchemaVersion; ++v) {
      if (Status e = exec(kMigrations[v]); !e) return e;
      if (Status e = exec(("PRAGMA user_version=" + std::to_string(v + 1) + ";").c_str()); !e) return e;
    }
    return {};
  });
}

Status Workspace::set_schema_version_for_testing(int version) {
  return exec(("PRAGMA user_version=" + std::to_string(version) + ";").c_str());
}

Status Workspace::transaction(const std::function<Status()>& body) {
  if (depth_ > 0) return body();
  if (Status s = exec("BEGIN IMMEDIATE;"); !s) return s;
  ++depth_;
  Status result;
  try {
    result = body();
  } catch (...) {
    --depth_;
    exec("ROLLBACK;");
    throw;
  }
  --depth_;
  if (!result) {
    exec("ROLLBACK;");
    return result;
  }
  return exec("COMMIT;");
}

Status Workspace::put_index(const StoredIndex& index) {
  return transaction([&]() -> Status {
    Statement st(db_,
                 "INSERT OR REPLACE INTO trace_index(path, size, mtime_ns, kind, blob, digest) VALUES (?, ?, ?, ?, ?, ?);");
    if (!st.ok()) return Status::error("workspace: " + st.error(), {path_, 0});
    st.bind(1, index.path);
    st.bind(2, index.stamp.size);
    st.bind(3, index.stamp.mtime_ns);
    st.bind(4, index.kind);
    st.bind_blob(5, index.blob);
    st.bind_blob(6, digest_of(index.blob));
    if (st.step() != SQLITE_DONE) return Status::error("workspace: " + st.error(), {path_, 0});
    return {};
  });
}

Expected<std::optional<StoredIndex>> Workspace::find_index(const std::string& path, const FileStamp& stamp) {
  Statement st(db_, "SELECT size, mtime_ns, kind, blob, digest FROM trace_index WHERE path = ?;");
  if (!st.ok()) return Status::error("workspace: " + st.error(), {path_, 0});
  st.bind(1, path);
  int rc = st.step();
  if (rc == SQLITE_DONE) return std::optional<StoredIndex>();
  if (rc != SQLITE_ROW) return Status::error("workspace: " + st.error(), {path_, 0});
  StoredIndex idx{path, {st.int64(0), st.int64(1)}, st.text(2), st.blob(3)};
  if (!(idx.stamp == stamp)) return std::optional<StoredIndex>();
  // A damaged (or unchecked, older) blob is a miss: the caller indexes the log again.
  if (st.blob(4) != digest_of(idx.blob)) return std::optional<StoredIndex>();
  return std::optional<StoredIndex>(std::move(idx));
}

Expected<std::vector<std::string>> Workspace::indexed_paths() {
  Statement st(db_, "SELECT path FROM trace_index ORDER BY path;");
  if (!st.ok()) return Status::error("workspace: " + st.error(), {path_, 0});
  std::vector<std::string> out;
  while (st.step() == SQLITE_ROW) out.push_back(st.text(0));
  return out;
}

}  // namespace kiln
