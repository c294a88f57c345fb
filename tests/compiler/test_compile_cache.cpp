// The compile cache (compiler/runtime/compile_cache.h). Cases that need a
// second process run this same executable with a --child-* argument.
#include <QtTest/QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "compiler/runtime/compile_cache.h"
#include "core/util/md5.h"

using namespace kiln;
using namespace kiln::runtime;

namespace {

CacheKey key_for(uint64_t graph_hash) {
  CacheKey k;
  k.graph_hash = graph_hash;
  k.layout = "in0:strides=(4,1),offset=0";
  k.options = "O3;threads=2;fuse=1;inject=";
  k.target = "x86_64-unknown-linux-gnu;znver3;+avx2;llvm19.1.7";
  return k;
}

// Not compressible and different for every seed, like object code.
std::string blob_of(size_t bytes, uint32_t seed) {
  std::string out(bytes, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : out) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    c = char(x);
  }
  return out;
}

std::unique_ptr<CompileCache> open_or_die(const std::string& path, CompileCache::WarningSink warn = {}) {
  auto c = CompileCache::open(path, std::move(warn));
  if (!c) qFatal("open failed: %s", c.status().to_string().c_str());
  return std::move(c).value();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Changes the file the way a crash, a full disk or another tool would: behind the cache's back.
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) qFatal("raw open failed");
  sqlite3_busy_timeout(db, 5000);
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) qFatal("raw sql failed: %s", err);
  sqlite3_close(db);
}

struct Child {
  int code = -1;
  QByteArray out, err;
};
Child run_child(const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(QCoreApplication::applicationFilePath(), args);
  if (!p.waitForFinished(60000)) qFatal("child %s did not finish", qPrintable(args.join(' ')));
  return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

// ---- child processes ----

// --child-lookup DB HASH: looks up key_for(HASH) and prints the blob's md5 (or
// "miss"), then stores key_for(HASH + 1) for the parent to find.
int child_lookup(const std::string& db, uint64_t hash) {
  auto cache = open_or_die(db);
  auto blob = cache->lookup(key_for(hash));
  std::printf("%s\n", blob ? md5_hex(*blob).c_str() : "miss");
  Status s = cache->store(key_for(hash + 1), "written by the child", "child");
  return blob && s.ok() ? 0 : 1;
}

// --child-store DB FIRST COUNT: stores COUNT entries, while the parent does the same.
int child_store(const std::string& db, uint64_t first, int count) {
  auto cache = open_or_die(db);
  for (int i = 0; i < count; ++i)
    if (Status s = cache->store(key_for(first + uint64_t(i)), blob_of(2000, uint32_t(i)), "child"); !s) {
      std::fprintf(stderr, "%s\n", s.to_string().c_str());
      return 1;
    }
  return 0;
}

// --child-default: prints the process-wide cache's path, or "null".
int child_default() {
  CompileCache* c = default_compile_cache();
  std::printf("%s\n", c ? c->path().c_str() : "null");
  return 0;
}

}  // namespace

class TestCompileCache : public QObject {
  Q_OBJECT
 private slots:
  void round_trip() {
    QTemporaryDir tmp;
    auto cache = open_or_die(tmp.filePath("c.sqlite").toStdString());
    std::string blob = blob_of(5000, 1);
    QVERIFY(!cache->lookup(key_for(7)).has_value());
    QVERIFY(cache->store(key_for(7), blob, "add(x, y)").ok());
    auto got = cache->lookup(key_for(7));
    QVERIFY(got.has_value());
    QVERIFY(*got == blob);
    CompileCache::Stats s = cache->stats();
    QCOMPARE(s.entries, int64_t(1));
    QCOMPARE(s.bytes, int64_t(5000));
    QCOMPARE(s.hits, int64_t(1));
    QCOMPARE(s.misses, int64_t(1));
    // An empty blob is an entry too, not a NULL that reads back as a miss.
    QVERIFY(cache->store(key_for(8), "", "empty").ok());
    auto empty = cache->lookup(key_for(8));
    QVERIFY(empty.has_value() && empty->empty());
  }

  void store_replaces() {
    QTemporaryDir tmp;
    auto cache = open_or_die(tmp.filePath("c.sqlite").toStdString());
    QVERIFY(cache->store(key_for(1), "old", "").ok());
    QVERIFY(cache->store(key_for(1), "newer", "").ok());
    QCOMPARE(*cache->lookup(key_for(1)), std::string("newer"));
    QCOMPARE(cache->stats().entries, int64_t(1));
    QCOMPARE(cache->stats().bytes, int64_t(5));
  }

  void every_key_field_matters() {
    QTemporaryDir tmp;
    auto cache = open_or_die(tmp.filePath("c.sqlite").toStdString());
    QVERIFY(cache->store(key_for(1), "code", "").ok());
    std::vector<CacheKey> others(5, key_for(1));
    others[0].graph_hash = 2;
    others[1].layout += ";in1:strides=(1,)";
    others[2].options = "O2;threads=2;fuse=1;inject=";
    others[3].target = "aarch64-unknown-linux-gnu;neoverse-v2;;llvm19.1.7";
    others[4].kiln_version = "kiln-0.0.9/codegen-1";
    for (const CacheKey& k : others) {
      QVERIFY(k.digest() != key_for(1).digest());
      QVERIFY(!cache->lookup(k).has_value());
    }
    QCOMPARE(cache->stats().misses, int64_t(5));
    QVERIFY(cache->lookup(key_for(1)).has_value());
  }

  void digest_is_stable_and_unambiguous() {
    CacheKey k = key_for(0x1234);
    k.kiln_version = "fixed";
    QCOMPARE(k.digest(), k.digest());
    QCOMPARE(k.digest().size(), size_t(32));
    // Moving a character from one field to the next must change the digest.
    CacheKey a = k, b = k;
    a.layout = "ab", a.options = "c";
    b.layout = "a", b.options = "bc";
    QVERIFY(a.digest() != b.digest());
    QCOMPARE(key_for(1).kiln_version, compile_cache_build_id());
  }

  void persists_across_reopen() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("c.sqlite").toStdString();
    std::string blob = blob_of(3000, 2);
    {
      auto cache = open_or_die(path);
      QVERIFY(cache->store(key_for(3), blob, "mm").ok());
    }
    auto again = open_or_die(path);
    auto got = again->lookup(key_for(3));
    QVERIFY(got && *got == blob);
  }

  void second_process_reuses_entry() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("c.sqlite").toStdString();
    auto cache = open_or_die(path);  // stays open while the child reads and writes
    std::string blob = blob_of(100000, 3);
    QVERIFY(cache->store(key_for(10), blob, "parent").ok());
    Child c = run_child({"--child-lookup", QString::fromStdString(path), "10"});
    QVERIFY2(c.code == 0, c.err.constData());
    QCOMPARE(c.out.trimmed().toStdString(), md5_hex(blob));
    auto from_child = cache->lookup(key_for(11));
    QVERIFY(from_child && *from_child == "written by the child");
  }

  void two_processes_store_at_once() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("c.sqlite").toStdString();
    auto cache = open_or_die(path);
    QProcess child;
    child.start(QCoreApplication::applicationFilePath(),
                {"--child-store", QString::fromStdString(path), "1000", "60"});
    QVERIFY(child.waitForStarted());
    for (int i = 0; i < 60; ++i) QVERIFY(cache->store(key_for(uint64_t(i)), blob_of(2000, uint32_t(i)), "parent").ok());
    QVERIFY(child.waitForFinished(60000));
    QVERIFY2(child.exitCode() == 0, child.readAllStandardError().constData());
    QCOMPARE(cache->stats().entries, int64_t(120));
    for (int i = 0; i < 60; ++i) {
      auto got = cache->lookup(key_for(1000 + uint64_t(i)));
      QVERIFY(got && *got == blob_of(2000, uint32_t(i)));
    }
  }

  void threads_share_one_cache() {
    QTemporaryDir tmp;
    auto cache = open_or_die(tmp.filePath("c.sqlite").toStdString());
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 40; ++i) {
          uint64_t h = uint64_t(t * 100 + i);
          if (!cache->store(key_for(h), blob_of(500, uint32_t(h)), "t").ok()) ++wrong;
          auto got = cache->lookup(key_for(h));
          if (!got || *got != blob_of(500, uint32_t(h))) ++wrong;
        }
      });
    for (auto& t : threads) t.join();
    QCOMPARE(wrong.load(), 0);
    QCOMPARE(cache->stats().entries, int64_t(160));
    QCOMPARE(cache->stats().hits, int64_t(160));
  }

  void evicts_least_recently_used() {
    QTemporaryDir tmp;
    auto cache = open_or_die(tmp.filePath("c.sqlite").toStdString());
    QCOMPARE(cache->max_bytes(), CompileCache::kDefaultMaxBytes);
    cache->set_max_bytes(3000);
    for (uint64_t h : {1, 2, 3}) QVERIFY(cache->store(key_for(h), blob_of(1000, uint32_t(h)), "").ok());
    QVERIFY(cache->lookup(key_for(1)).has_value());  // 2 is now the least recently used
    QVERIFY(cache->store(key_for(4), blob_of(1000, 4), "").ok());
    QCOMPARE(cache->stats().bytes, int64_t(3000));
    QVERIFY(!cache->lookup(key_for(2)).has_value());
    for (uint64_t h : {1, 3, 4}) QVERIFY2(cache->lookup(key_for(h)).has_value(), std::to_string(h).c_str());
    // An entry larger than the limit pushes out everything else but stays itself.
    QVERIFY(cache->store(key_for(5), blob_of(5000, 5), "").ok());
    QCOMPARE(cache->stats().entries, int64_t(1));
    QVERIFY(cache->lookup(key_for(5)).has_value());
  }

  void damaged_entry_is_a_miss_and_dropped() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("c.sqlite").toStdString();
    std::vector<std::string> warnings;
    auto cache = open_or_die(path, [&](const std::string& w) { warnings.push_back(w); });
    QVERIFY(cache->store(key_for(1), blob_of(4000, 1), "").ok());
    QVERIFY(cache->store(key_for(2), blob_of(4000, 2), "").ok());
    // 1 is truncated; 2 keeps its size but its bytes change.
    raw_sql(path, "UPDATE entries SET blob = substr(blob, 1, 100) WHERE digest = '" + key_for(1).digest() + "';");
    raw_sql(path, "UPDATE entries SET blob = zeroblob(4000) WHERE digest = '" + key_for(2).digest() + "';");
    QVERIFY(!cache->lookup(key_for(1)).has_value());
    QVERIFY(!cache->lookup(key_for(2)).has_value());
    // One flipped bit in the middle of the code.
    std::string blob3 = blob_of(4000, 3);
    QVERIFY(cache->store(key_for(3), blob3, "").ok());
    char flipped[3];
    std::snprintf(flipped, sizeof flipped, "%02x", unsigned(uint8_t(blob3[2000]) ^ 0x10));
    raw_sql(path, std::string("UPDATE entries SET blob = substr(blob, 1, 2000) || x'") + flipped +
                      "' || substr(blob, 2002) WHERE digest = '" + key_for(3).digest() + "';");
    QVERIFY(!cache->lookup(key_for(3)).has_value());
    QCOMPARE(warnings.size(), size_t(3));
    QVERIFY2(warnings[0].find(key_for(1).digest()) != std::string::npos, warnings[0].c_str());
    QVERIFY2(warnings[0].find("100 of 4000 bytes") != std::string::npos, warnings[0].c_str());
    QVERIFY2(warnings[1].find("checksum") != std::string::npos, warnings[1].c_str());
    QCOMPARE(cache->stats().entries, int64_t(0));  // dropped, so the next compile can store a good one
    QCOMPARE(cache->stats().misses, int64_t(3));
  }

  void foreign_files_are_refused_and_left_alone() {
    QTemporaryDir tmp;
    std::string text_path = tmp.filePath("notes.sqlite").toStdString();
    std::string text;
    for (int i = 0; i < 200; ++i) text += "my notes, line " + std::to_string(i) + "\n";
    std::ofstream(text_path, std::ios::binary) << text;
    auto c = CompileCache::open(text_path);
    QVERIFY(!c.ok());
    QCOMPARE(c.status().where().file, text_path);
    QVERIFY2(c.status().message().find("not a SQLite database") != std::string::npos, c.status().message().c_str());
    QVERIFY(read_file(text_path) == text);
    QVERIFY(!QFileInfo::exists(QString::fromStdString(text_path + "-wal")));

    // Someone else's SQLite database: not even WAL mode may be switched on.
    std::string db_path = tmp.filePath("other.sqlite").toStdString();
    raw_sql(db_path, "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada');");
    std::string before = read_file(db_path);
    auto d = CompileCache::open(db_path);
    QVERIFY(!d.ok());
    QVERIFY2(d.status().to_string().find(db_path + ": a SQLite database that is not a Kiln compile cache") == 0,
             d.status().to_string().c_str());
    QVERIFY(read_file(db_path) == before);
  }

  void newer_schema_is_refused() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("c.sqlite").toStdString();
    QVERIFY(open_or_die(path)->store(key_for(1), "x", "").ok());
    raw_sql(path, "UPDATE cache_meta SET value = '99' WHERE name = 'schema_version';");
    auto c = CompileCache::open(path);
    QVERIFY(!c.ok());
    QCOMPARE(c.status().where().file, path);
    QVERIFY2(c.status().message().find("schema version 99, newer") != std::string::npos,
             c.status().message().c_str());
  }

  void clear_empties_the_cache() {
    QTemporaryDir tmp;
    auto cache = open_or_die(tmp.filePath("c.sqlite").toStdString());
    for (uint64_t h = 0; h < 5; ++h) QVERIFY(cache->store(key_for(h), blob_of(100, 1), "").ok());
    QVERIFY(cache->clear().ok());
    QCOMPARE(cache->stats().entries, int64_t(0));
    QCOMPARE(cache->stats().bytes, int64_t(0));
    QVERIFY(!cache->lookup(key_for(0)).has_value());
  }

  void default_cache_follows_environment() {
    QTemporaryDir tmp;
    QProcessEnvironment base = QProcessEnvironment::systemEnvironment();
    base.remove("KILN_COMPILE_CACHE");
    base.remove("KILN_CACHE_DIR");

    QProcessEnvironment env = base;
    env.insert("KILN_CACHE_DIR", tmp.filePath("kc"));
    Child c = run_child({"--child-default"}, env);
    QCOMPARE(c.out.trimmed(), tmp.filePath("kc/compile-cache.sqlite").toUtf8());
    QVERIFY(QFileInfo::exists(tmp.filePath("kc/compile-cache.sqlite")));
    QVERIFY2(c.err.isEmpty(), c.err.constData());

    env = base;
    env.insert("XDG_CACHE_HOME", tmp.filePath("xdg"));
    c = run_child({"--child-default"}, env);
    QCOMPARE(c.out.trimmed(), tmp.filePath("xdg/kiln/compile-cache.sqlite").toUtf8());

    env.insert("KILN_COMPILE_CACHE", "0");
    c = run_child({"--child-default"}, env);
    QCOMPARE(c.out.trimmed(), QByteArray("null"));
    QVERIFY2(c.err.isEmpty(), c.err.constData());

    // A folder that cannot be created (a file is in the way): null and exactly one warning.
    std::ofstream(tmp.filePath("blocker").toStdString()) << "x";
    env = base;
    env.insert("KILN_CACHE_DIR", tmp.filePath("blocker/sub"));
    c = run_child({"--child-default"}, env);
    QCOMPARE(c.out.trimmed(), QByteArray("null"));
    QCOMPARE(c.err.count('\n'), qsizetype(1));
    QVERIFY2(c.err.contains("warning") && c.err.contains("blocker"), c.err.constData());
  }

  // Not a speed limit for the build machine, a guard against a lookup that
  // scans or re-prepares: a cached compile must stay well under 5 ms.
  void lookup_is_fast() {
    QTemporaryDir tmp;
    auto cache = open_or_die(tmp.filePath("c.sqlite").toStdString());
    for (uint64_t h = 0; h < 50; ++h) QVERIFY(cache->store(key_for(h), blob_of(100 * 1024, uint32_t(h)), "").ok());
    std::vector<double> us;
    for (int i = 0; i < 300; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto got = cache->lookup(key_for(uint64_t(i % 50)));
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      QVERIFY(got && got->size() == 100 * 1024);
    }
    std::sort(us.begin(), us.end());
    double median = us[us.size() / 2];
    qInfo("lookup of a 100 KB entry: median %.1f us, p90 %.1f us", median, us[us.size() * 9 / 10]);
    QVERIFY2(median < 2000, std::to_string(median).c_str());
  }
};

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--child-lookup" && argc == 4) return child_lookup(argv[2], std::stoull(argv[3]));
  if (mode == "--child-store" && argc == 5) return child_store(argv[2], std::stoull(argv[3]), std::stoi(argv[4]));
  if (mode == "--child-default") return child_default();
  QCoreApplication app(argc, argv);
  TestCompileCache test;
  return QTest::qExec(&test, argc, argv);
}

#include "test_compile_cache.moc"
