#pragma once
// The compile cache: object code of compiled graphs kept in one SQLite file, so
// that a second compile of the same graph (in this process or a later one)
// skips LLVM's optimization and code generation. The key covers everything the
// object code depends on; a new Kiln build never reuses an older one's entries.
// Every entry carries its size and checksum: a damaged entry is dropped with a
// warning and reads as a miss, never as code. docs/compile_cache.md has the
// file's layout and the environment variables. Tests: test_compile_cache.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/util/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kiln::runtime {

// Bumped by hand whenever generated code changes for the same key (see the .cpp).
std::string compile_cache_build_id();

// What a compiled kernel depends on. Fields are text so that callers can put
// anything in them; digest() hashes them with their lengths, so no two keys
// that differ in any field share a digest by concatenation.
struct CacheKey {
  uint64_t graph_hash = 0;    // core/graph/hash.h structural_hash
  std::string layout;         // input strides, offsets etc. the structural hash leaves out
  std::string options;        // codegen options, e.g. "O3;threads=2;fuse=1;inject="
  std::string target;         // target triple + CPU + features + LLVM version
  std::string kiln_version = compile_cache_build_id();
  std::string digest() const;  // 32 lowercase hex digits
  std::string text() const;    // all fields, readable: kept beside the entry for inspection
};

class CompileCache {
 public:
  static constexpr int kSchemaVersion = 1;
  static constexpr int64_t kDefaultMaxBytes = int64_t(256) << 20;
  using WarningSink = std::function<void(const std::string&)>;  // one line, no newline; default: stderr

  // Opens (creating if missing) the cache at `path`. A file that is not
  // SQLite, a SQLite database that is not a Kiln compile cache, a damaged
  // one or one from a newer Kiln gives a Status naming the path; such a file is
  // never changed or removed.
  static Expected<std::unique_ptr<CompileCache>> open(const std::string& path, WarningSink warn = {});
  ~CompileCache();
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  // The object code stored under `key`, or nullopt. A hit marks the entry as
  // recently used. An entry whose size or checksum does not match is deleted
  // (after a warning) and counts as a miss; so does a database error.
  std::optional<std::string> lookup(const CacheKey& key);
  // Stores (or replaces) the entry, then evicts least recently used entries
  // until the blobs total at most max_bytes(); the entry just stored stays.
  Status store(const CacheKey& key, std::string_view blob, std::string_view description);

  struct Stats {
    int64_t entries = 0;  // in the file, written by any process
    int64_t bytes = 0;    // blob bytes in the file
    int64_t hits = 0;     // lookups by this object
    int64_t misses = 0;
  };
  Stats stats() const;
  // Removes every entry (for every process); the counters keep counting.
  Status clear();

  int64_t max_bytes() const;
  void set_max_bytes(int64_t bytes);  // applies from the next store
  const std::string& path() const { return path_; }

 private:
  CompileCache(std::string path, sqlite3* db, WarningSink warn);
  Status initialize();
  Status exec(const char* sql);
  Status sql_error(const std::string& what) const;
  Status evict_locked(const std::string& keep_digest);
  void erase_locked(const std::string& digest);
  sqlite3_stmt* prepared(int which, const char* sql);

  std::string path_;
  sqlite3* db_ = nullptr;
  WarningSink warn_;
  mutable std::mutex mutex_;  // one connection, used by one thread at a time
  sqlite3_stmt* statements_[4] = {};
  int64_t max_bytes_ = kDefaultMaxBytes;
  int64_t hits_ = 0, misses_ = 0;
  bool warned_db_error_ = false;
};

// Where the process-wide cache lives: $KILN_CACHE_DIR/compile-cache.sqlite,
// else $XDG_CACHE_HOME/kiln/compile-cache.sqlite, else
// ~/.cache/kiln/compile-cache.sqlite. A Status when none of these is set.
Expected<std::string> default_compile_cache_path();

// The process-wide cache, opened on first use and kept until exit. Null when
// KILN_COMPILE_CACHE=0 (silently) or when it cannot be opened (after one
// warning on stderr); callers then compile every time.
CompileCache* default_compile_cache();

}  // namespace kiln::runtime
