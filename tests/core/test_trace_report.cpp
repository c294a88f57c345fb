// write_report (core/trace/report.h) and `kiln-cli trace report`: the pages
// a bug report can carry. Our own logs: a compile that fails with its text,
// one that restarts, a graph break, cache outcomes, a stack; every value
// escaped; the folder replaced whole or left alone.
#include "test_support.h"

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/trace/reader.h"
#include "core/trace/report.h"
#include "trace_log_util.h"

using namespace kiln;
using namespace kiln::trace;

namespace {

std::string ids(int frame) { return "\"frame_id\": " + std::to_string(frame) + ", \"frame_compile_id\": 0, \"attempt\": 0"; }

const std::string kGraph =
    "class GraphModule(torch.nn.Module):\n"
    "    def forward(self, L_x_: \"f32[4]\"):\n"
    "        l_x_ = L_x_\n"
    "        sin: \"f32[4]\" = torch.sin(l_x_);  l_x_ = None\n"
    "        return (sin,)\n";

std::string log_text() {
  using test::log_record;
  using test::log_record_with_payload;
  const std::string stack = "{\"stack\": [{\"line\": 7, \"name\": \"main\", \"filename\": \"/work/train.py\"}, "
                            "{\"line\": 3, \"name\": \"step\", \"filename\": \"/work/model.py\"}]}";
  return log_record("{\"dynamo_start\": " + stack + ", " + ids(0) + "}") +
         log_record_with_payload("dynamo_output_graph", "{}", kGraph, ids(0)) +
         log_record_with_payload("artifact", "{\"name\": \"fx_graph_cache_miss\", \"encoding\": \"json\"}", "{\"key\": \"k\"}", ids(0)) +
         log_record("{\"compilation_metrics\": {\"co_name\": \"step\", \"co_filename\": \"/work/model.py\", \"co_firstlineno\": 3, "
                    "\"restart_reasons\": [\"Tensor.item() in <step>\"], \"entire_frame_compile_time_s\": 0.25}, " + ids(0) + "}") +
         log_record("{\"dynamo_start\": " + stack + ", " + ids(1) + "}") +
         log_record("{\"compilation_metrics\": {\"co_name\": \"step\", \"restart_reasons\": [], "
                    "\"fail_type\": \"BackendCompilerFailed\", \"fail_reason\": \"RuntimeError: broken <backend> & more\", "
                    "\"fail_user_frame_filename\": \"/work/model.py\", \"fail_user_frame_lineno\": 4}, " + ids(1) + "}");
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

class TestTraceReport : public QObject {
  Q_OBJECT
 private slots:
  void pages_of_a_log() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    std::ofstream(dir + "/run.log") << log_text() << "V1122 garbage that is not a record\n";
    auto t = open_trace(dir + "/run.log");
    QVERIFY2(t.ok(), t.status().to_string().c_str());
    ReportStats stats;
    Status s = write_report(*t, dir + "/report", {}, &stats);
    QVERIFY2(s.ok(), s.to_string().c_str());
    QCOMPARE(stats.compiles, t->entries.size());
    QCOMPARE(stats.payloads, size_t(2));
    QCOMPARE(stats.pages, size_t(1 + 2 + 2));  // index, two compiles, two payloads

    const std::string index = read(dir + "/report/index.html");
    QVERIFY(has(index, "<a href=\"c/0.html\">[0/0]</a>"));
    QVERIFY(has(index, "<tr class=\"error\"><td><a href=\"c/1.html\">[1/0]</a>"));
    // Escaped, never pasted in: the failure's text and the frame's <module>-style names.
    QVERIFY2(has(index, "RuntimeError: broken &lt;backend&gt; &amp; more"), index.c_str());
    QVERIFY(!has(index, "broken <backend>"));
    QVERIFY(has(index, "Tensor.item() in &lt;step&gt;"));  // the restart
    QVERIFY(has(index, "/work/train.py:7 in main"));     // the stack trie
    QVERIFY(has(index, "fx_graph miss"));
    QVERIFY(has(index, "<h2>Diagnostics</h2>"));
    QVERIFY(has(index, "2 compile ids, 1 graph, 0 graph breaks, 1 compile failure, 1 restart"));

    const std::string compile = read(dir + "/report/c/0.html");
    QVERIFY(has(compile, "<a href=\"0/0.html\">dynamo_output_graph</a>"));
    QVERIFY(has(compile, "<td>entire_frame_compile_time_s</td><td>0.25</td>"));
    QVERIFY(has(compile, "/work/model.py:3 in step"));
    const std::string failed = read(dir + "/report/c/1.html");
    QVERIFY(has(failed, "compile failure: BackendCompilerFailed"));
    QVERIFY(has(failed, "/work/model.py:4"));

    const std::string payload = read(dir + "/report/c/0/0.html");
    QVERIFY(has(payload, "<span id=\"L1\"><a href=\"#L1\">1</a>class GraphModule(torch.nn.Module):</span>"));
    QVERIFY(has(payload, "sin: &quot;f32[4]&quot; = torch.sin(l_x_)"));
    QVERIFY(has(payload, "5 lines"));
  }

  void replaced_whole_or_left_alone() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    std::ofstream(dir + "/run.log") << log_text();
    auto t = open_trace(dir + "/run.log");
    QVERIFY(t.ok());
    const std::string out = dir + "/report";
    QVERIFY(write_report(*t, out).ok());
    std::ofstream(out + "/mine.txt") << "a user's note";
    Status again = write_report(*t, out);
    QVERIFY(!again.ok());
    QVERIFY(has(again.message(), "--overwrite"));
    QVERIFY(std::filesystem::exists(out + "/mine.txt"));  // untouched
    ReportOptions replace;
    replace.overwrite = true;
    QVERIFY(write_report(*t, out, replace).ok());
    QVERIFY(!std::filesystem::exists(out + "/mine.txt"));
    QVERIFY(std::filesystem::exists(out + "/index.html"));
    for (const auto& de : std::filesystem::directory_iterator(dir))
      QVERIFY2(!has(de.path().filename().string(), ".kiln-"), de.path().c_str());  // no staging left
    // A place that cannot hold a folder: an error, nothing written.
    std::ofstream(dir + "/a_file") << "x";
    QVERIFY(!write_report(*t, dir + "/a_file/report").ok());
  }

  void ranks_and_cut_payloads() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    std::ofstream(dir + "/dedicated_log_torch_trace_rank_0.log") << log_text();
    std::ofstream(dir + "/dedicated_log_torch_trace_rank_1.log") << log_text();
    auto t = open_trace(dir);
    QVERIFY(t.ok());
    ReportOptions small;
    small.max_payload_bytes = 40;
    ReportStats stats;
    QVERIFY(write_report(*t, dir + "/report", small, &stats).ok());
    QCOMPARE(stats.truncated, size_t(2));  // each rank's graph
    const std::string index = read(dir + "/report/index.html");
    QVERIFY(has(index, "<h2>Ranks</h2>"));
    QVERIFY(has(index, "<h3>rank 0</h3>") && has(index, "<h3>rank 1</h3>"));
    QVERIFY(has(index, "the ranks agree on everything compared"));
    QVERIFY(has(index, "[r1:0/0]"));
    const std::string payload = read(dir + "/report/c/0/0.html");
    QVERIFY(has(payload, "Cut at"));
    QVERIFY(!has(payload, "return (sin,)"));
  }

  void cli_exit_codes() {
    QTemporaryDir tmp;
    const QString dir = tmp.path();
    std::ofstream((dir + "/run.log").toStdString()) << log_text();
    test::CliRun ok = test::run_cli({"trace", "report", dir + "/run.log", "--out", dir + "/r"}, 120000);
    QCOMPARE(ok.code, 0);
    QVERIFY(ok.out.contains("wrote 5 pages"));
    test::CliRun exists = test::run_cli({"trace", "report", dir + "/run.log", "--out", dir + "/r"}, 120000);
    QCOMPARE(exists.code, 2);
    QVERIFY(exists.err.contains("--overwrite"));
    QCOMPARE(test::run_cli({"trace", "report", dir + "/run.log", "--out", dir + "/r", "--overwrite"}, 120000).code, 0);
    QCOMPARE(test::run_cli({"trace", "report", dir + "/nope.log", "--out", dir + "/r2"}, 120000).code, 3);
    QVERIFY(!QFileInfo::exists(dir + "/r2"));
  }
};

QTEST_GUILESS_MAIN(TestTraceReport)
#include "test_trace_report.moc"
