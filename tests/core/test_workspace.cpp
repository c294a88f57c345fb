#include "test_support.h"

#include <QTemporaryDir>

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
