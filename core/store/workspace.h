#pragma once
// A workspace is one SQLite database (WAL mode) holding what Kiln learned about
// the files a user opened: trace indexes first, later compile caches, minifier
// journals and numerics. The schema has a version and a list of migrations;
// every write runs in a transaction, so nothing half-written is ever visible.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/util/status.h"

struct sqlite3;

namespace kiln {

// Identity of an imported file: a changed size or modification time means the
// stored index is stale.
struct FileStamp {
  int64_t size = -1;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
// Size and modification time of a file, or (for a folder) of its *.log files summed/maxed.
Expected<FileStamp> stamp_of(const std::string& path);

struct StoredIndex {
  std::string path;
  FileStamp stamp;
  std::string kind;  // "torch_trace", "compile_debug", ...
  std::vector<uint8_t> blob;
};

class Workspace {
 public:
  static constexpr int kSchemaVersion = 2;

  // Opens or creates the database and applies any pending migrations. A file
  // that is not a SQLite database, or one from a newer Kiln, is a Status.
  static Expected<std::unique_ptr<Workspace>> open(const std::string& path);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  int schema_version() const;
  const std::string& path() const { return path_; }

  // Runs `body` in one transaction; a failed Status (or an exception) rolls back.
  Status transaction(const std::function<Status()>& body);

  // Trace indexes, keyed by absolute path. put replaces any older index.
  Status put_index(const StoredIndex& index);
  // The stored index for `path` if its stamp still matches; nullopt if absent or stale.
  Expected<std::optional<StoredIndex>> find_index(const std::string& path, const FileStamp& stamp);
  Expected<std::vector<std::string>> indexed_paths();

  // Tests simulate a workspace written by a newer Kiln with this.
  Status set_schema_version_for_testing(int version);

 private:
  explicit Workspace(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status exec(const char* sql);
  Status migrate();

  std::string path_;
  sqlite3* db_ = nullptr;
  int depth_ = 0;  // nested transaction() calls join the outer one
};

}  // namespace kiln
