// Trace indexes in the workspace: the binary index round-trips every reference
// dump exactly, damaged or foreign blobs are errors (never crashes), and
// open_trace_cached reads a log once and then reopens it from the store.
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "core/trace/index_codec.h"
#include "core/trace/indexed_open.h"
#include "core/trace/reader.h"
#include "core/trace/summary.h"
#include "core/trace/synthetic_log.h"

using namespace kiln;
using namespace kiln::trace;
namespace fs = std::filesystem;

namespace {

// Every dump in the reference folder, as open_trace takes it.
std::vector<std::string> reference_dumps() {
  std::string ref = test::reference_dir();
  std::vector<std::string> out;
  for (const auto& d : fs::directory_iterator(ref + "/traces")) out.push_back(d.path().string());
  for (const auto& d : fs::directory_iterator(ref + "/minifier")) {
    if (fs::exists(d.path() / "trace")) out.push_back((d.path() / "trace").string());
    for (const char* py : {"repro.py", "minifier_launcher.py"})
      if (fs::exists(d.path() / py)) out.push_back((d.path() / py).string());
  }
  for (const auto& d : fs::directory_iterator(ref + "/compile_debug"))
    for (const auto& run : fs::directory_iterator(d.path()))
      if (run.path().filename().string().rfind("run_", 0) == 0) out.push_back(run.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// What a user sees of a trace: per entry its status, guard count, stage
// sizes, every payload's text and the chromium events.
QStringList observable(const Trace& t) {
  QStringList out;
  out << QString("%1 files, %2 records, %3 bytes, %4 diagnostics")
             .arg(t.files.size()).arg(t.records).arg(t.bytes).arg(t.diagnostics.size());
  for (const CompileEntry& e : t.entries) {
    auto guards = guard_count(t, e);
    out << QString::fromStdString(e.label + " " + entry_status(e) + " " + e.function() + " " + e.function_file() +
                                  ":" + std::to_string(e.function_line()) + " guards " +
                                  (guards ? std::to_string(*guards) : "-"));
    for (const StageSummary& s : stage_summaries(t, e))
      out << QString::fromStdString(s.name + " " + std::to_string(s.nodes) + "/" + std::to_string(s.ops) + " " + s.error);
    for (const Artifact& a : e.artifacts) {
      auto text = t.payload_text(e, a.name);
      out << QString::fromStdString(text ? *text : "error: " + text.status().message());
    }
    out << QString::fromStdString(t.metrics_json(e));
    out << QString::number(t.chromium_events(e).size());
  }
  return out;
}

using Run = kiln::test::CliRun;
Run cli(const QStringList& args) { return kiln::test::run_cli(args, 300000); }

}  // namespace

class TestTraceStore : public QObject {
  Q_OBJECT
 private slots:
  void round_trips_every_reference_dump() {
    std::vector<std::string> dumps = reference_dumps();
    QVERIFY(dumps.size() >= 10);
    for (const std::string& path : dumps) {
      auto t = open_trace(path);
      QVERIFY2(t.ok(), path.c_str());
      std::vector<uint8_t> blob = encode_index(*t);
      auto back = decode_index(blob);
      QVERIFY2(back.ok(), qPrintable(QString::fromStdString(path + ": " + back.status().message())));
      // Byte-equal re-encoding means every field came back.
      QVERIFY2(encode_index(*back) == blob, path.c_str());
      QCOMPARE(back->entries.size(), t->entries.size());
      QCOMPARE(back->kind, t->kind);
      QCOMPARE(observable(*back), observable(*t));
      // Stage graphs parse from the decoded index as from the fresh one.
      for (const CompileEntry& e : back->entries)
        for (const Artifact& a : e.artifacts)
          if (a.graph) {
            auto g1 = back->graph(e, a.name);
            auto g0 = t->graph(*t->find(e.label), a.name);
            QCOMPARE(g1.ok(), g0.ok());
          }
    }
  }

  void keeps_optional_fields_and_inputs() {
    auto t = open_trace(test::reference_dir() + "/minifier/accuracy_cpu/repro.py");
    QVERIFY(t.ok());
    QVERIFY(!t->entries.empty() && !t->entries[0].inputs.empty());
    t->entries[0].metrics.emplace();
    t->entries[0].metrics->fail_reason = "boom";
    t->entries[0].metrics->start_time = 1.25;
    t->entries[0].metrics->graph_op_count = -7;
    t->entries[0].rank = 3;
    t->diagnostics.push_back({"f.log", 12, "bad JSON"});
    auto back = decode_index(encode_index(*t));
    QVERIFY(back.ok());
    const CompileEntry& e = back->entries[0];
    QCOMPARE(e.inputs.size(), t->entries[0].inputs.size());
    QCOMPARE(e.inputs[0].shape, t->entries[0].inputs[0].shape);
    QCOMPARE(*e.metrics->fail_reason, std::string("boom"));
    QCOMPARE(*e.metrics->start_time, 1.25);
    QCOMPARE(*e.metrics->graph_op_count, int64_t(-7));
    QVERIFY(!e.metrics->fail_type);
    QCOMPARE(*e.rank, int64_t(3));
    QCOMPARE(back->diagnostics.back().line, 12);
    QCOMPARE(back->diagnostics.back().message, std::string("bad JSON"));
  }

  void damaged_blobs_are_errors() {
    auto t = open_trace(test::reference_dir() + "/traces/s03_graph_breaks");
    QVERIFY(t.ok());
    std::vector<uint8_t> blob = encode_index(*t);
    // Every truncation.
    for (size_t n = 0; n < blob.size(); ++n) QVERIFY(!decode_index(blob.data(), n).ok());
    // Trailing bytes.
    std::vector<uint8_t> longer = blob;
    longer.push_back(0);
    QVERIFY(!decode_index(longer).ok());
    // Another format version.
    std::vector<uint8_t> other = blob;
    other[4] = uint8_t(kIndexFormatVersion + 1);
    auto old = decode_index(other);
    QVERIFY(!old.ok());
    QVERIFY(old.status().message().find("format version") != std::string::npos);
    // Not an index at all.
    QVERIFY(!decode_index(std::vector<uint8_t>{'a', 'b', 'c', 'd', 1}).ok());
    // Flipped bytes decode or fail, but never crash or allocate wildly.
    uint32_t seed = 12345;
    for (int i = 0; i < 2000; ++i) {
      std::vector<uint8_t> bad = blob;
      for (int k = 0; k < 4; ++k) {
        seed = seed * 1664525u + 1013904223u;
        bad[5 + seed % (bad.size() - 5)] ^= uint8_t(1u << (seed >> 29));
      }
      auto r = decode_index(bad);
      if (r.ok()) QVERIFY(r->files.size() == t->files.size() || r->files.size() < 1000);
    }
  }

  void reopens_from_the_store() {
    QTemporaryDir tmp;
    std::string log = tmp.path().toStdString() + "/trace.log";
    fs::copy_file(test::reference_dir() + "/traces/s04_recompiles/" +
                      fs::directory_iterator(test::reference_dir() + "/traces/s04_recompiles")->path().filename().string(),
                  log);
    auto ws = Workspace::open(tmp.path().toStdString() + "/ws.kiln");
    QVERIFY(ws.ok());
    bool from_store = true;
    auto first = open_trace_cached(log, ws->get(), &from_store);
    QVERIFY(first.ok());
    QVERIFY(!from_store);
    auto paths = (*ws)->indexed_paths();
    QVERIFY(paths.ok());
    QCOMPARE(paths->size(), size_t(1));

    auto second = open_trace_cached(log, ws->get(), &from_store);
    QVERIFY(second.ok());
    QVERIFY(from_store);
    QCOMPARE(observable(*second), observable(*first));
    QVERIFY(encode_index(*second) == encode_index(*first));

    // A grown file is indexed again, and the new index is what is stored.
    {
      std::ofstream out(log, std::ios::app | std::ios::binary);
      out << "V1122 00:27:50.000000 1316 x.py:1] {\"artifact\": {\"name\": \"extra\", \"encoding\": \"string\"}, "
             "\"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 0}\n";
    }
    auto third = open_trace_cached(log, ws->get(), &from_store);
    QVERIFY(third.ok());
    QVERIFY(!from_store);
    QVERIFY(third->bytes > first->bytes);
    auto fourth = open_trace_cached(log, ws->get(), &from_store);
    QVERIFY(fourth.ok());
    QVERIFY(from_store);
    QCOMPARE(fourth->bytes, third->bytes);
    QCOMPARE(fourth->records, third->records);
  }

  void relative_paths_reopen_from_elsewhere() {
    QTemporaryDir tmp;
    fs::create_directory(tmp.path().toStdString() + "/a");
    fs::copy(test::reference_dir() + "/traces/s01_sin_cos", tmp.path().toStdString() + "/a/trace");
    auto ws = Workspace::open(tmp.path().toStdString() + "/ws.kiln");
    QVERIFY(ws.ok());
    QString old = QDir::currentPath();
    QDir::setCurrent(tmp.path());
    bool from_store = true;
    auto first = open_trace_cached("a/trace", ws->get(), &from_store);
    QDir::setCurrent(tmp.path() + "/a");
    auto second = open_trace_cached("trace", ws->get(), &from_store);
    QDir::setCurrent(old);  // payloads are read from here, another folder
    QVERIFY(first.ok() && second.ok());
    QVERIFY(from_store);
    QCOMPARE(second->path, std::string("trace"));
    QVERIFY(fs::path(second->files.at(0).path).is_absolute());
    const CompileEntry& e = second->entries.at(0);
    QVERIFY(!e.artifacts.empty());
    QVERIFY(second->payload_text(e, e.artifacts[0].name).ok());
  }

  void without_workspace_or_with_missing_file() {
    bool from_store = true;
    auto t = open_trace_cached(test::reference_dir() + "/traces/s01_sin_cos", nullptr, &from_store);
    QVERIFY(t.ok());
    QVERIFY(!from_store);
    QTemporaryDir tmp;
    auto ws = Workspace::open(tmp.path().toStdString() + "/ws.kiln");
    QVERIFY(ws.ok());
    auto missing = open_trace_cached(tmp.path().toStdString() + "/nope.log", ws->get(), &from_store);
    QVERIFY(!missing.ok());
  }

  void cli_summary_through_a_workspace() {
    QTemporaryDir tmp;
    QString trace = QString::fromStdString(test::reference_dir() + "/traces/s03_graph_breaks");
    QString ws = tmp.path() + "/ws.kiln";
    Run plain = cli({"trace", "summary", trace, "--json"});
    Run stored = cli({"trace", "summary", trace, "--json", "--workspace", ws});
    Run reopened = cli({"trace", "summary", trace, "--json", "--workspace", ws});
    QCOMPARE(plain.code, 0);
    QCOMPARE(stored.code, 0);
    QCOMPARE(reopened.code, 0);
    QCOMPARE(stored.out, plain.out);
    QCOMPARE(reopened.out, plain.out);
    auto w = Workspace::open(ws.toStdString());
    QVERIFY(w.ok());
    auto paths = (*w)->indexed_paths();
    QVERIFY(paths.ok());
    QCOMPARE(paths->size(), size_t(1));
    // A workspace that cannot be opened is not a reason to refuse a readable trace.
    Run bad = cli({"trace", "summary", trace, "--json", "--workspace", tmp.path() + "/missing/ws.kiln"});
    QCOMPARE(bad.code, 0);
    QVERIFY(bad.err.contains("cannot open workspace") && bad.err.contains("reading the trace without it"));
    QCOMPARE(bad.out, plain.out);
  }

  void cli_bench_trace_json() {
    Run r = cli({"bench", "trace", "--json", "--trace-mb", "4", "--ranks", "3", "--big-mb", "2", "--reps", "1", "--reference",
                 QString::fromStdString(test::reference_dir())});
    QVERIFY2(r.code == 0, r.err.constData());
    QJsonObject doc = QJsonDocument::fromJson(r.out).object();
    auto names = [](const QJsonArray& rows) {
      QStringList out;
      for (const auto& row : rows) out << row.toObject()["name"].toString();
      return out;
    };
    QJsonObject single = doc["single_log"].toObject();
    QJsonArray rows = single["rows"].toArray();
    QCOMPARE(names(rows), QStringList({"read", "index_100MB", "reopen_100MB"}));
    for (const auto& row : rows) QVERIFY(row.toObject()["ms"].toDouble() > 0);
    QVERIFY(rows[1].toObject()["MBps"].toDouble() > 0);
    QVERIFY(rows[1].toObject().contains("meets_target"));
    QVERIFY(single["bytes"].toDouble() >= 4 << 20);

    QJsonObject folder = doc["rank_folder"].toObject();
    QCOMPARE(folder["files"].toInt(), 3);
    QCOMPARE(names(folder["rows"].toArray()), QStringList({"read_ranks", "index_ranks", "reopen_ranks"}));
    QVERIFY(folder["compile_entries"].toInt() > 0);

    QJsonObject big = doc["big_log"].toObject();
    QJsonArray big_rows = big["rows"].toArray();
    QCOMPARE(names(big_rows), QStringList({"read_big", "index_big_fresh"}));
    // Measured in the child: the peak is at least the anonymous part, and both are real.
    const double peak = big_rows[1].toObject()["peak_rss_bytes"].toDouble();
    const double anon = big_rows[1].toObject()["peak_anon_bytes"].toDouble();
    QVERIFY(anon > 0 && peak >= anon);
    QVERIFY(big["bytes"].toDouble() >= 2 << 20);
  }

  // A rank folder gives the same trace whether its files are read one by one
  // or side by side: the parallel reader keeps file order, ranks and payloads.
  void rank_folder_matches_its_files() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/ranks";
    QVERIFY(trace::write_rank_folder(test::reference_dir(), dir, 8).ok());
    auto folder = trace::open_trace(dir);
    QVERIFY2(folder.ok(), folder.status().to_string().c_str());
    QVERIFY(folder->diagnostics.empty());
    QCOMPARE(folder->files.size(), size_t(8));
    size_t at = 0;
    for (int rank = 0; rank < 8; ++rank) {
      auto one = trace::open_trace(dir + "/dedicated_log_torch_trace_rank_" + std::to_string(rank) + "_kiln.log");
      QVERIFY(one.ok());
      QCOMPARE(*folder->files[size_t(rank)].rank, int64_t(rank));
      for (const trace::CompileEntry& e : one->entries) {
        const trace::CompileEntry& f = folder->entries[at++];
        QCOMPARE(f.file, uint32_t(rank));
        QCOMPARE(*f.rank, int64_t(rank));
        QCOMPARE(f.artifacts.size(), e.artifacts.size());
        for (size_t k = 0; k < e.artifacts.size(); ++k) {
          QCOMPARE(f.artifacts[k].payload.file, uint32_t(rank));
          QCOMPARE(*folder->text(f.artifacts[k].payload), *one->text(e.artifacts[k].payload));
        }
      }
    }
    QCOMPARE(at, folder->entries.size());
  }
};

QTEST_APPLESS_MAIN(TestTraceStore)
#include "test_trace_store.moc"
