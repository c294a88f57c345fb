// chrome_trace (core/trace/timeline.h) and `kiln-cli trace timeline`: the
// chromium events of two rank files as one Perfetto timeline, a process per
// rank, each event tagged with its compile; the run's own phases untagged;
// damaged payloads left out and counted; the file written whole.
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <fstream>

#include "core/trace/reader.h"
#include "core/trace/timeline.h"
#include "trace_log_util.h"

using namespace kiln;
using namespace kiln::trace;

namespace {

std::string event(const char* name, const char* ph, int ts) {
  return nlohmann::json({{"name", name}, {"ph", ph}, {"ts", ts}, {"cat", "dynamo_timed"}, {"args", {{"compile_id", "0/0"}}}}).dump();
}

std::string rank_log() {
  using test::log_record;
  using test::log_record_with_payload;
  return log_record_with_payload("chromium_event", "{}", event("run_setup", "B", 1), "\"frame_id\": null") +
         log_record("{\"dynamo_start\": {\"stack\": []}, " + test::kLogIds + "}") +
         log_record_with_payload("chromium_event", "{}", event("dynamo", "B", 10)) +
         log_record_with_payload("chromium_event", "{}", "not json at all") +
         log_record_with_payload("chromium_event", "{}", event("dynamo", "E", 90)) +
         log_record("{\"compilation_metrics\": {\"co_name\": \"f\", \"restart_reasons\": []}, " + test::kLogIds + "}");
}

}  // namespace

class TestTraceTimeline : public QObject {
  Q_OBJECT
 private slots:
  void two_ranks_one_timeline() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    std::ofstream(dir + "/dedicated_log_torch_trace_rank_0_a.log") << rank_log();
    std::ofstream(dir + "/dedicated_log_torch_trace_rank_1_b.log") << rank_log();
    auto t = open_trace(dir);
    QVERIFY2(t.ok(), t.status().to_string().c_str());
    TimelineStats stats;
    nlohmann::json doc = chrome_trace(*t, &stats);
    QCOMPARE(stats.events, size_t(6));  // per rank: the run's event and the compile's two
    QCOMPARE(stats.skipped, size_t(2));
    QCOMPARE(stats.compiles, size_t(2));
    QCOMPARE(stats.ranks, size_t(2));
    QCOMPARE(doc["displayTimeUnit"].get<std::string>(), std::string("ms"));
    int tagged[2] = {0, 0}, untagged = 0, names = 0;
    for (const nlohmann::json& ev : doc["traceEvents"]) {
      const int pid = ev["pid"].get<int>();
      QVERIFY(pid == 0 || pid == 1);
      if (ev["ph"] == "M") {
        ++names;
        QCOMPARE(QString::fromStdString(ev["args"]["name"].get<std::string>()), QString("rank %1").arg(pid));
        continue;
      }
      if (ev["args"].contains("kiln_compile")) {
        QCOMPARE(QString::fromStdString(ev["args"]["kiln_compile"].get<std::string>()), QString("r%1:0/0").arg(pid));
        ++tagged[pid];
      } else {
        QCOMPARE(ev["name"].get<std::string>(), std::string("run_setup"));
        ++untagged;
      }
    }
    QCOMPARE(tagged[0], 2);
    QCOMPARE(tagged[1], 2);
    QCOMPARE(untagged, 2);
    QCOMPARE(names, 2);
  }

  void command_writes_the_file() {
    QTemporaryDir tmp;
    const QString log = tmp.filePath("dedicated_log_torch_trace_x.log");
    std::ofstream(log.toStdString()) << rank_log();
    const QString out = tmp.filePath("timeline.json");
    auto run = test::run_cli({"trace", "timeline", log, "--out", out});
    QVERIFY2(run.code == 0, run.err.constData());
    QVERIFY2(run.out.contains("wrote 3 events of 1 compile ids on 1 rank(s)"), run.out.constData());
    QVERIFY(run.out.contains("1 chromium_event payloads are not JSON objects"));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonArray events = QJsonDocument::fromJson(f.readAll()).object()["traceEvents"].toArray();
    QCOMPARE(events.size(), 4);  // three events and the process name
    QVERIFY(!QFile::exists(out + ".tmp"));
    // A folder that does not exist: exit 1, nothing written.
    auto bad = test::run_cli({"trace", "timeline", log, "--out", tmp.filePath("no/such/dir/t.json")});
    QCOMPARE(bad.code, 1);
    QVERIFY(bad.err.contains("t.json"));
  }

  // The workbench's spans: B/E paired by name, nesting depth per rank, a
  // phase that never ends runs to the rank's last timestamp, flagged.
  void spans_nest_per_rank() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    std::ofstream(dir + "/dedicated_log_torch_trace_rank_0_a.log") << rank_log();
    std::ofstream(dir + "/dedicated_log_torch_trace_rank_3_b.log") << rank_log();
    auto t = open_trace(dir);
    QVERIFY(t.ok());
    TimelineStats stats;
    std::vector<TimelineSpan> spans = timeline_spans(*t, &stats);
    QCOMPARE(stats.skipped, size_t(2));
    QCOMPARE(spans.size(), size_t(4));
    for (int64_t rank : {int64_t(0), int64_t(3)}) {
      const TimelineSpan* setup = nullptr;
      const TimelineSpan* dynamo = nullptr;
      for (const TimelineSpan& s : spans) {
        if (s.rank != rank) continue;
        if (s.name == "run_setup") setup = &s;
        if (s.name == "dynamo") dynamo = &s;
      }
      QVERIFY(setup && dynamo);
      QVERIFY(setup->unfinished);
      QCOMPARE(setup->end_us, 90.0);
      QCOMPARE(setup->depth, 0);
      QVERIFY(setup->compile.empty());
      QVERIFY(!dynamo->unfinished);
      QCOMPARE(dynamo->start_us, 10.0);
      QCOMPARE(dynamo->end_us, 90.0);
      QCOMPARE(dynamo->depth, 1);
      QVERIFY(dynamo->compile.find("0/0") != std::string::npos);
    }
  }
};

QTEST_GUILESS_MAIN(TestTraceTimeline)
#include "test_trace_timeline.moc"
