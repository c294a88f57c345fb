// `kiln-cli trace summary` and `kiln-cli trace graph` end to end (CLI.md):
// JSON field names, text output, exit codes.
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <unistd.h>
#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include "core/trace/reader.h"
#include "core/util/md5.h"
#include "trace_log_util.h"

namespace {

using Run = kiln::test::CliRun;
Run cli(const QStringList& args) { return kiln::test::run_cli(args, 120000); }

QString ref(const char* sub) { return QString::fromStdString(kiln::test::reference_dir()) + "/" + sub; }

// One glog line of a synthetic log, with its tab-indented payload when given.
std::string record(const std::string& envelope, const std::string& payload = "") {
  if (payload.empty()) return kiln::test::log_record(envelope + "}");
  return kiln::test::log_record(envelope + ", \"has_payload\": \"" + kiln::md5_hex(payload) + "\"}") +
         kiln::test::payload_lines(payload);
}

QJsonObject entry(const QJsonArray& ids, const QString& label) {
  for (const auto& v : ids)
    if (v.toObject()["label"].toString() == label) return v.toObject();
  qFatal("no entry %s", qPrintable(label));
}

}  // namespace

class TestTraceCli : public QObject {
  Q_OBJECT
 private slots:
  void summary_json_contract() {
    Run r = cli({"trace", "summary", ref("traces/s03_graph_breaks"), "--json"});
    QCOMPARE(r.code, 0);
    QJsonParseError perr;
    QJsonDocument doc = QJsonDocument::fromJson(r.out, &perr);
    QVERIFY2(!doc.isNull(), qPrintable(perr.errorString()));
    QJsonObject root = doc.object();
    QVERIFY(root["diagnostics"].isArray());
    QCOMPARE(root["diagnostics"].toArray().size(), 0);
    QJsonArray ids = root["compile_ids"].toArray();
    QCOMPARE(ids.size(), 22);  // chromium events without a compile id make no entry of their own
    for (const auto& v : ids)
      for (const char* key : {"id", "attempt", "function", "file", "line", "status", "stages", "graph_breaks",
                              "recompile_reasons", "guard_count", "metrics"})
        QVERIFY2(v.toObject().contains(key), key);
    QJsonObject e = entry(ids, "0/0");
    QCOMPARE(e["id"].toString(), QString("0/0"));
    QCOMPARE(e["attempt"].toInt(), 1);
    QCOMPARE(e["function"].toString(), QString("f_print"));
    QCOMPARE(e["file"].toString(), QString("/home/dev/models/s03_graph_breaks.py"));
    QCOMPARE(e["line"].toInt(), 2);
    QCOMPARE(e["status"].toString(), QString("break"));
    QCOMPARE(e["guard_count"].toInt(), 9);
    QJsonObject st = e["stages"].toObject()["dynamo_output_graph"].toObject();
    QCOMPARE(st["nodes"].toInt(), 3);
    QCOMPARE(st["ops"].toInt(), 1);
    QJsonObject gb = e["graph_breaks"].toArray()[0].toObject();
    QCOMPARE(gb["reason"].toString(), QString("Failed to trace builtin operator"));
    QCOMPARE(gb["file"].toString(), QString("/home/dev/models/s03_graph_breaks.py"));
    QCOMPARE(gb["line"].toInt(), 4);
    QJsonObject m = e["metrics"].toObject();
    QCOMPARE(m["graph_op_count"].toInt(), 1);
    QCOMPARE(m["co_name"].toString(), QString("f_print"));
    QVERIFY(!m.contains("dynamo_config"));  // the configuration dump is left out
    QCOMPARE(entry(ids, "0/0#2")["id"].toString(), QString("0/0"));
    QCOMPARE(root["totals"].toObject()["graph_breaks"].toInt(), 12);

    Run s04 = cli({"trace", "summary", ref("traces/s04_recompiles"), "--json"});
    QJsonArray ids4 = QJsonDocument::fromJson(s04.out).object()["compile_ids"].toArray();
    QJsonArray reasons = entry(ids4, "0/2")["recompile_reasons"].toArray();
    QCOMPARE(reasons.size(), 2);
    QCOMPARE(reasons[0].toString(), QString("0/1: tensor 'x' dtype mismatch. expected Float, actual Double"));
  }

  void summary_text() {
    Run r = cli({"trace", "summary", ref("traces/s04_recompiles")});
    QCOMPARE(r.code, 0);
    QString out = QString::fromUtf8(r.out);
    QVERIFY(out.startsWith("[0/0] g  /home/dev/models/s04_recompiles.py:2  status=ok\n"));
    QVERIFY(out.contains("  stage dynamo_output_graph"));
    QVERIFY(out.contains("  recompile reason: 0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6\n"));
    QVERIFY(out.contains("8 compile ids, 8 graphs, 0 graph breaks, 0 compile failures, 0 restarts, 6 recompiles"));
    QVERIFY(out.endsWith("0 diagnostics\n"));
  }

  // A compile that failed (its reason on two lines), one that restarted its
  // analysis twice, and cache lookups: said as such, in text and JSON, and
  // counted in the totals; a failure is not a graph break.
  void failures_restarts_and_cache() {
    const std::string ids0 = "\"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 0";
    const std::string ids1 = "\"frame_id\": 1, \"frame_compile_id\": 0, \"attempt\": 1";
    std::string log =
        record("{\"dynamo_start\": {\"stack\": []}, " + ids0) +
        record("{\"artifact\": {\"name\": \"fx_graph_cache_miss\", \"encoding\": \"json\"}, " + ids0, "{\"key\": \"fabc\"}") +
        record("{\"artifact\": {\"name\": \"aotautograd_cache_bypass\", \"encoding\": \"json\"}, " + ids0, "{\"reason\": \"x\"}") +
        record("{\"compilation_metrics\": {\"co_name\": \"step\", \"fail_type\": \"BackendCompilerFailed\", "
               "\"fail_reason\": \"backend='mine' raised:\\nValueError: no kernel for this shape\", "
               "\"fail_user_frame_filename\": null, \"fail_user_frame_lineno\": null, \"restart_reasons\": []}, " + ids0) +
        record("{\"dynamo_start\": {\"stack\": []}, \"frame_id\": 1, \"frame_compile_id\": 0, \"attempt\": 0") +
        record("{\"compilation_metrics\": {\"co_name\": \"loop\", \"fail_type\": null, \"graph_op_count\": 3, "
               "\"restart_reasons\": [\"a data-dependent branch\", \"a call it cannot trace\"]}, " + ids1);
    QTemporaryDir dir;
    const std::string path = dir.filePath("dedicated_log_torch_trace_made.log").toStdString();
    std::ofstream(path) << log;
    Run r = cli({"trace", "summary", QString::fromStdString(path)});
    QCOMPARE(r.code, 0);
    const QString out = QString::fromUtf8(r.out);
    QVERIFY2(out.contains("  compile failure: BackendCompilerFailed: backend='mine' raised: ValueError: no kernel for this shape "
                          "(no user frame; log line 6)"),
             qPrintable(out));
    QVERIFY2(out.contains("  cache: fx_graph miss, aotautograd bypass\n"), qPrintable(out));
    QVERIFY2(out.contains("  restart: a data-dependent branch\n  restart: a call it cannot trace\n"), qPrintable(out));
    QVERIFY2(out.contains("2 compile ids, 0 graphs, 0 graph breaks, 1 compile failures, 2 restarts, 0 recompiles"), qPrintable(out));
    Run j = cli({"trace", "summary", QString::fromStdString(path), "--json"});
    QCOMPARE(j.code, 0);
    const QJsonObject doc = QJsonDocument::fromJson(j.out).object();
    QCOMPARE(doc["totals"].toObject()["restarts"].toInt(), 2);
    QCOMPARE(doc["totals"].toObject()["compile_failures"].toInt(), 1);
    const QJsonObject failed = entry(doc["compile_ids"].toArray(), "0/0");
    QCOMPARE(failed["failure"].toObject()["type"].toString(), QString("BackendCompilerFailed"));
    QVERIFY(failed["failure"].toObject()["reason"].toString().contains("ValueError: no kernel"));
    QCOMPARE(failed["cache"].toArray().size(), 2);
    QCOMPARE(failed["cache"].toArray()[0].toObject()["state"].toString(), QString("miss"));
    const QJsonObject restarted = entry(doc["compile_ids"].toArray(), "1/0");
    QVERIFY(restarted["failure"].isNull());
    QCOMPARE(restarted["restart_reasons"].toArray().size(), 2);
  }

  // Rank files: the totals say how many compile ids each rank compiled.
  void ranks_in_the_summary() {
    QTemporaryDir tmp;
    const std::string log = kiln::test::reference_dir() + "/traces/s02_linear_relu/dedicated_log_torch_trace_31md1peq.log";
    for (const char* rank : {"0", "3"})
      std::filesystem::copy_file(log, tmp.filePath(QString("dedicated_log_torch_trace_rank_%1.log").arg(rank)).toStdString());
    Run r = cli({"trace", "summary", tmp.path()});
    QCOMPARE(r.code, 0);
    const QString out = QString::fromUtf8(r.out);
    QVERIFY2(out.contains("compile ids per rank: rank 0: 1, rank 3: 1\n"), qPrintable(out));
    QVERIFY2(out.startsWith("r0:[0/0] "), qPrintable(out));
  }

  void other_dumps_summarize() {
    Run d = cli({"trace", "summary", ref("compile_debug/s02_linear_relu"), "--json"});
    QCOMPARE(d.code, 0);
    QJsonObject root = QJsonDocument::fromJson(d.out).object();
    QCOMPARE(root["kind"].toString(), QString("compile_debug"));
    QJsonObject e = root["compile_ids"].toArray()[0].toObject();
    QCOMPARE(e["id"].toString(), QString("model__0"));
    QCOMPARE(e["stages"].toObject()["fx_graph_readable"].toObject()["ops"].toInt(), 4);
    QCOMPARE(e["inputs"].toArray().size(), 3);
    Run m = cli({"trace", "summary", ref("minifier/accuracy_cuda/repro.py")});
    QCOMPARE(m.code, 0);
    QVERIFY(QString::fromUtf8(m.out).contains("  input addmm_1: tensor float32[8, 64] cuda:0\n"));
  }

  void damaged_trace_still_summarizes() {
    std::string log = kiln::test::reference_dir() + "/traces/s02_linear_relu/dedicated_log_torch_trace_31md1peq.log";
    std::ifstream in(log, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = text.find("\nV1122", 10) + 1;
    text.insert(at, "this line is not a record\n");
    int line = int(std::count(text.begin(), text.begin() + long(at), '\n')) + 1;
    QTemporaryDir tmp;
    std::string path = tmp.path().toStdString() + "/damaged.log";
    std::ofstream(path, std::ios::binary) << text;
    Run r = cli({"trace", "summary", QString::fromStdString(path)});
    QCOMPARE(r.code, 0);
    QString out = QString::fromUtf8(r.out);
    QVERIFY(out.contains(QString::fromStdString(path) + QString(":%1: not a TORCH_TRACE record: expected a glog prefix").arg(line)));
    QVERIFY(out.endsWith("1 diagnostics\n"));
    Run j = cli({"trace", "summary", QString::fromStdString(path), "--json"});
    QJsonObject d = QJsonDocument::fromJson(j.out).object()["diagnostics"].toArray()[0].toObject();
    QCOMPARE(d["file"].toString(), QString::fromStdString(path));
    QCOMPARE(d["line"].toInt(), line);
    QVERIFY(d["message"].toString().startsWith("not a TORCH_TRACE record"));
  }

  // Names that are not UTF-8 (a raw 0xff byte, a lone surrogate written as
  // \udcff) aborted the JSON writer; ESC and BEL reached the terminal.
  void hostile_names_are_escaped_not_obeyed() {
    std::string log = kiln::test::reference_dir() + "/traces/s03_graph_breaks/dedicated_log_torch_trace_p251j682.log";
    std::ifstream in(log, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto replace_all = [&](const std::string& from, const std::string& to) {
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
    };
    replace_all("\"name\": \"f_print\"", "\"name\": \"f_\xffprint\"");
    replace_all("\"name\": \"f_data_dep\"", "\"name\": \"f_\\udcffdata\\u001b[2J\\u007f\\u0085\"");
    QTemporaryDir tmp;
    const std::string path = tmp.path().toStdString() + "/hostile.log";
    std::ofstream(path, std::ios::binary) << text;
    Run j = cli({"trace", "summary", QString::fromStdString(path), "--json"});
    QCOMPARE(j.code, 0);
    QJsonParseError error;
    QJsonDocument doc = QJsonDocument::fromJson(j.out, &error);
    QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
    QVERIFY(QString::fromUtf8(j.out).contains(QString::fromUtf8("f_\xef\xbf\xbd")));  // U+FFFD in place of the bad bytes
    Run t = cli({"trace", "summary", QString::fromStdString(path)});
    QCOMPARE(t.code, 0);
    QVERIFY2(!t.out.contains('\x1b') && !t.out.contains('\x07'), t.out.constData());
    QVERIFY2(t.out.contains("f_\\xed\\xb3\\xbfdata\\x1b[2J\\x7f\\xc2\\x85"), t.out.constData());
    // DEL and C1 controls are legal raw in JSON but not wanted on a terminal: escaped as \u.
    QVERIFY2(j.out.contains("\\u007f\\u0085") && !j.out.contains('\x7f'), j.out.constData());
  }

  // A symlink loop in a trace folder opened with a workspace aborted on an
  // uncaught filesystem_error (stamping the folder walked into it).
  void symlink_loop_in_a_trace_folder() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/trace";
    std::filesystem::create_directories(dir + "/sub");
    const std::string log = "/traces/s02_linear_relu/dedicated_log_torch_trace_31md1peq.log";
    std::filesystem::copy_file(kiln::test::reference_dir() + log, dir + "/dedicated_log_torch_trace_31md1peq.log");
    std::filesystem::create_symlink("loop", dir + "/loop");
    std::filesystem::create_directory_symlink("..", dir + "/sub/up");
    const QString workspace = tmp.path() + "/ws.db";
    for (int pass = 0; pass < 2; ++pass) {  // indexing, then reopening from the workspace
      Run r = cli({"trace", "summary", QString::fromStdString(dir), "--workspace", workspace});
      QCOMPARE(r.code, 0);
      QVERIFY2(r.out.contains("1 compile ids"), r.out.constData());
    }
  }

  // A workspace that cannot be used (its folder missing or read-only, a full
  // disk, a file that is not one) exited 3 for a trace Kiln could read.
  void unusable_workspace_falls_back_to_the_log() {
    QTemporaryDir tmp;
    const QString not_db = tmp.path() + "/not_a_workspace.kiln";
    std::ofstream(not_db.toStdString()) << "this is not a database, it is a text file of some length\n";
    for (const QString& ws : {tmp.path() + "/missing/folder/ws.kiln", not_db}) {
      Run r = cli({"trace", "summary", ref("traces/s02_linear_relu"), "--workspace", ws});
      QCOMPARE(r.code, 0);
      QVERIFY2(r.err.contains("warning:") && r.err.contains("reading the trace without it"), r.err.constData());
      QVERIFY(r.out.contains("1 compile ids"));
    }
  }

  // A full disk, made by a file size limit on the child (SIGXFSZ ignored, so
  // writes fail with EFBIG as they do with ENOSPC): the workspace cannot be
  // written, and the trace is read from its log with a warning.
  void full_disk_falls_back_to_the_log() {
    QTemporaryDir tmp;
    const QString ws = tmp.path() + "/ws.kiln";
    QProcess p;
    p.start("sh", {"-c", "ulimit -f 1 && trap '' XFSZ && exec \"$0\" \"$@\"", QString::fromUtf8(KILN_CLI_PATH), "trace",
                   "summary", ref("traces/s02_linear_relu"), "--workspace", ws});
    QVERIFY(p.waitForFinished(120000));
    const QByteArray out = p.readAllStandardOutput(), err = p.readAllStandardError();
    QCOMPARE(p.exitCode(), 0);
    QVERIFY2(err.contains("warning:") && err.contains("reading the trace without it"), err.constData());
    QVERIFY(out.contains("1 compile ids"));
  }

  // A read-only folder for the workspace: the same fallback.
  void read_only_folder_falls_back_to_the_log() {
    if (::geteuid() == 0) QSKIP("running as root, which may write into a read-only folder");
    QTemporaryDir tmp;
    const QString folder = tmp.path() + "/locked";
    QVERIFY(QDir().mkdir(folder));
    QVERIFY(QFile::setPermissions(folder, QFileDevice::ReadOwner | QFileDevice::ExeOwner));
    Run r = cli({"trace", "summary", ref("traces/s02_linear_relu"), "--workspace", folder + "/ws.kiln"});
    QFile::setPermissions(folder, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.err.contains("warning:") && r.err.contains("reading the trace without it"), r.err.constData());
    QVERIFY(r.out.contains("1 compile ids"));
  }

  void graph_prints_a_stage() {
    Run r = cli({"trace", "graph", ref("traces/s02_linear_relu"), "--compile-id", "0/0", "--stage", "aot_forward_graph"});
    QCOMPARE(r.code, 0);
    QString out = QString::fromUtf8(r.out);
    QVERIFY(out.startsWith("class "));
    QVERIFY(out.contains("torch.ops.aten.addmm.default("));
    // --raw gives the payload exactly.
    Run raw = cli({"trace", "graph", ref("traces/s02_linear_relu"), "--compile-id", "[0/0]", "--stage", "aot_forward_graph", "--raw"});
    QCOMPARE(raw.code, 0);
    auto t = kiln::trace::open_trace(ref("traces/s02_linear_relu").toStdString());
    std::string payload = *t->payload_text(*t->find("0/0"), "aot_forward_graph");
    QCOMPARE(raw.out.toStdString(), payload.back() == '\n' ? payload : payload + "\n");
    // Non-graph stages print as they are.
    Run code = cli({"trace", "graph", ref("traces/s02_linear_relu"), "--compile-id", "0/0", "--stage", "inductor_output_code"});
    QCOMPARE(code.code, 0);
    QVERIFY(code.out.startsWith("# AOT ID: ['0_forward']"));
    Run repro = cli({"trace", "graph", ref("minifier/accuracy_cuda/repro.py"), "--compile-id", "repro", "--stage", "repro"});
    QCOMPARE(repro.code, 0);
    QVERIFY(QString::fromUtf8(repro.out).contains("torch.ops.aten.relu.default("));
  }

  void bad_input_exits_3_naming_it() {
    Run missing = cli({"trace", "summary", "/nonexistent/trace_dir"});
    QCOMPARE(missing.code, 3);
    QVERIFY(QString::fromUtf8(missing.err).contains("/nonexistent/trace_dir"));
    Run no_id = cli({"trace", "graph", ref("traces/s02_linear_relu"), "--compile-id", "5/0", "--stage", "aot_forward_graph"});
    QCOMPARE(no_id.code, 3);
    QVERIFY(QString::fromUtf8(no_id.err).contains("no compile id '5/0' (it has: 0/0)"));
    Run no_stage = cli({"trace", "graph", ref("traces/s02_linear_relu"), "--compile-id", "0/0", "--stage", "nope"});
    QCOMPARE(no_stage.code, 3);
    QVERIFY(QString::fromUtf8(no_stage.err).contains("0/0 has no stage 'nope'; it has: "));
    Run usage = cli({"trace", "graph", ref("traces/s02_linear_relu")});
    QCOMPARE(usage.code, 2);
  }
};

QTEST_APPLESS_MAIN(TestTraceCli)
#include "test_trace_cli.moc"
