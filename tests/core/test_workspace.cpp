#include "test_support.h"

#include <QTemporaryDir>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "core/store/workspace.h"

using namespace kiln;

class TestWorkspace : public QObject {
  Q_OBJECT
 private slots:
  void creates_and_migrates() {
    QTemporaryDir tmp;
    std::string db = tmp.filePath("ws.kiln").toStdString();
    auto ws = Workspace::open(db);
    QVERIFY2(ws.ok(), ws.status().to_string().c_str());
    QCOMPARE((*ws)->schema_version(), Workspace::kSchemaVersion);
    StoredIndex idx{"/logs/a.log", {1234, 99}, "torch_trace", {1, 2, 3}};
    QVERIFY((*ws)->put_index(idx).ok());
    ws->reset();
    auto again = Workspace::open(db);  // reopen: data survives, no second migration
    QVERIFY(again.ok());
    auto found = (*again)->find_index("/logs/a.log", {1234, 99});
    QVERIFY(found.ok() && found->has_value());
    QCOMPARE((*found)->blob, (std::vector<uint8_t>{1, 2, 3}));
    QCOMPARE((*found)->kind, std::string("torch_trace"));
  }

  // One flipped byte inside a stored blob passed SQLite's integrity check and
  // decoded to wrong names and counts: the digest turns it into a miss.
  void damaged_blob_is_a_miss() {
    QTemporaryDir tmp;
    std::string db = tmp.filePath("ws.kiln").toStdString();
    {
      auto ws = Workspace::open(db);
      QVERIFY(ws.ok());
      QVERIFY((*ws)->put_index({"/a.log", {10, 5}, "torch_trace", {1, 2, 3, 4}}).ok());
      auto found = (*ws)->find_index("/a.log", {10, 5});
      QVERIFY(found.ok() && found->has_value());
    }
    sqlite3* raw = nullptr;
    QCOMPARE(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
    QCOMPARE(sqlite3_exec(raw, "UPDATE trace_index SET blob = X'01020304FF' WHERE path = '/a.log';", nullptr, nullptr, nullptr),
             SQLITE_OK);
    sqlite3_close(raw);
    auto ws = Workspace::open(db);
    QVERIFY(ws.ok());
    auto found = (*ws)->find_index("/a.log", {10, 5});
    QVERIFY(found.ok());
    QVERIFY(!found->has_value());
  }

  // Two processes creating the same new workspace raced: one failed with
  // "table trace_index already exists" (7 of 20 rounds).
  void processes_create_one_workspace_together() {
    for (int round = 0; round < 20; ++round) {
      QTemporaryDir tmp;
      const std::string db = tmp.filePath("ws.kiln").toStdString();
      pid_t children[2];
      for (pid_t& child : children) {
        child = fork();
        if (child == 0) {
          auto ws = Workspace::open(db);
          if (!ws.ok()) std::fprintf(stderr, "child: %s\n", ws.status().to_string().c_str());
          _exit(ws.ok() && (*ws)->schema_version() == Workspace::kSchemaVersion ? 0 : 1);
        }
      }
      for (pid_t child : children) {
        int status = 0;
        QCOMPARE(waitpid(child, &status, 0), child);
        QVERIFY2(WIFEXITED(status) && WEXITSTATUS(status) == 0, qPrintable(QString("round %1").arg(round)));
      }
    }
  }

  void stale_stamp_misses() {
    QTemporaryDir tmp;
    auto ws = Workspace::open(tmp.filePath("ws.kiln").toStdString());
    QVERIFY(ws.ok());
    QVERIFY((*ws)->put_index({"/x.log", {10, 5}, "torch_trace", {7}}).ok());
    auto changed = (*ws)->find_index("/x.log", {11, 5});
    QVERIFY(changed.ok() && !changed->has_value());
    auto absent = (*ws)->find_index("/y.log", {10, 5});
    QVERIFY(absent.ok() && !absent->has_value());
  }

  void failed_transaction_rolls_back() {
    QTemporaryDir tmp;
    auto ws = Workspace::open(tmp.filePath("ws.kiln").toStdString());
    QVERIFY(ws.ok());
    Status s = (*ws)->transaction([&] {
      (*ws)->put_index({"/half.log", {1, 1}, "torch_trace", {1}});
      return Status::error("stop halfway");
    });
    QVERIFY(!s.ok());
    auto paths = (*ws)->indexed_paths();
    QVERIFY(paths.ok());
    QVERIFY(paths->empty());
  }

  void not_a_database_is_an_error() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("junk.kiln").toStdString();
    std::ofstream(path) << std::string(4096, 'x');
    auto ws = Workspace::open(path);
    QVERIFY(!ws.ok());
    QVERIFY2(ws.status().to_string().find("junk.kiln") != std::string::npos, ws.status().to_string().c_str());
  }

  void newer_schema_is_refused() {
    QTemporaryDir tmp;
    std::string path = tmp.filePath("future.kiln").toStdString();
    {
      auto ws = Workspace::open(path);
      QVERIFY(ws.ok());
      // What a newer Kiln would leave behind.
      QVERIFY((*ws)->set_schema_version_for_testing(Workspace::kSchemaVersion + 1).ok());
    }
    auto ws = Workspace::open(path);
    QVERIFY(!ws.ok());
    QVERIFY2(ws.status().message().find("newer") != std::string::npos, ws.status().message().c_str());
  }

  void stamps_files_and_folders() {
    QTemporaryDir tmp;
    std::string f = tmp.filePath("a.log").toStdString();
    std::ofstream(f) << "hello";
    auto s = stamp_of(f);
    QVERIFY(s.ok());
    QCOMPARE(s->size, int64_t(5));
    auto d = stamp_of(tmp.path().toStdString());
    QVERIFY(d.ok());
    QCOMPARE(d->size, int64_t(5));
    QVERIFY(!stamp_of(tmp.filePath("missing.log").toStdString()).ok());
  }
};

QTEST_APPLESS_MAIN(TestWorkspace)
#include "test_workspace.moc"
