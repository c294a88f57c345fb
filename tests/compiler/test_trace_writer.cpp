// Kiln's TORCH_TRACE writer: a synthetic run of compiles written through its
// API must read back through the same reader `kiln-cli trace summary` uses,
// with ids, graphs, breaks, guards, recompile reasons and metrics intact.
#include <QtTest/QtTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "compiler/capture/trace_writer.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/python/code.h"
#include "core/python/vm.h"
#include "core/trace/json_scan.h"
#include "core/trace/reader.h"
#include "core/trace/summary.h"

using namespace kiln;
using namespace kiln::capture;
namespace fs = std::filesystem;

namespace {

constexpr const char* kProg = "/home/dev/run/prog.py";

// Two ops and a placeholder, with a symbolic size, in print_readable form.
constexpr const char* kGraphText = R"(class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[s0, 16][16, 1]cpu"):
        l_x_ = L_x_

        # File: /home/dev/run/prog.py:3 in f, code: y = x.sin()
        y: "f32[s0, 16][16, 1]cpu" = l_x_.sin();  l_x_ = None

        # File: /home/dev/run/prog.py:3 in f, code: y = x.sin()
        z: "f32[s0, 16][16, 1]cpu" = torch.cos(y);  y = None
        return (z,)
)";

constexpr const char* kResumeText = R"(class GraphModule(torch.nn.Module):
    def forward(self, L_y_: "f32[8, 16][16, 1]cpu"):
        l_y_ = L_y_

        # File: /home/dev/run/prog.py:5 in torch_dynamo_resume_in_f_at_4, code: return y.relu()
        relu: "f32[8, 16][16, 1]cpu" = l_y_.relu();  l_y_ = None
        return (relu,)
)";

Graph parse(const char* text) {
  auto g = parse_graph_module(text, "<test>");
  if (!g) qFatal("test graph does not parse: %s", g.status().to_string().c_str());
  return *g;
}

std::vector<Guard> three_guards() {
  SourcePtr x = Source::local("x", 0);
  Guard t;
  t.kind = Guard::Kind::TensorMatch;
  t.source = x;
  t.sizes = {8, 16};
  t.strides = {16, 1};
  t.user_code = "y = x.sin()";
  t.user_file = kProg;
  t.user_line = 3;
  t.user_function = "f";
  Guard n;
  n.kind = Guard::Kind::EqualsMatch;
  n.source = Source::local("n", 1);
  n.expected = py::Value(int64_t(2));
  Guard grad;
  grad.kind = Guard::Kind::GradMode;
  return {t, n, grad};
}

std::vector<StackFrame> module_caller() { return {{kProg, 30, "<module>", "print(opt(x).sum())"}}; }

BreakRecord print_break() {
  BreakRecord b;
  b.reason = "Failed to trace builtin operator";
  b.explanation = "  Explanation: Dynamo does not know how to trace builtin operator `print`\n  Hint: Avoid calling `print`.\n";
  b.file = kProg;
  b.line = 4;
  b.function = "f";
  b.code = "print(\"mid\", y.shape)";
  return b;
}

struct TempDir {
  QTemporaryDir dir;
  std::string path() const { return dir.path().toStdString(); }
};

std::vector<std::string> logs_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().string());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const trace::CompileEntry& entry(const trace::Trace& t, const char* label) {
  const trace::CompileEntry* e = t.find(label);
  if (!e) qFatal("no entry %s in the written trace", label);
  return *e;
}

}  // namespace

class TestTraceWriter : public QObject {
  Q_OBJECT
 private slots:
  void synthetic_run_reads_back() {
    TempDir tmp;
    std::string warnings;
    auto sink = [&](const std::string& w) { warnings += w + "\n"; };
    Graph g = parse(kGraphText), resume = parse(kResumeText);
    std::vector<Guard> guards = three_guards();
    std::string log_path;
    {
      auto w = TraceWriter::open(tmp.path() + "/nested/out", sink);
      QVERIFY(w);
      log_path = w->path();
      // 0/0: the break restarts analysis, so the graph comes from attempt 1 ("[0/0_1]").
      CompiledFrame f{"f", kProg, 2};
      w->dynamo_start({0, 0, 0}, module_caller(), f);
      w->graph_break({0, 0, 0}, print_break(), module_caller());
      CompileMetrics m;
      m.id = {0, 0, 1};
      m.frame = f;
      m.graph = &g;
      m.guard_count = int(guards.size());
      m.restart_reasons = {print_break().reason + "\n" + print_break().explanation};
      m.start_time_s = 1795307206.004819;
      m.entire_frame_compile_time_s = 1.5;
      w->output_graph(m.id, g);
      w->guards(m.id, guards);
      w->compilation_metrics(m);
      // 1/0: the resume frame after the break.
      CompiledFrame r{"torch_dynamo_resume_in_f_at_4", kProg, 4};
      w->dynamo_start({1, 0, 0}, module_caller(), r);
      w->output_graph({1, 0, 0}, resume);
      w->guards({1, 0, 0}, {guards[0]});
      CompileMetrics rm;
      rm.id = {1, 0, 0};
      rm.frame = r;
      rm.graph = &resume;
      rm.guard_count = 1;
      w->compilation_metrics(rm);
      // 0/1: a recompile with one reason (written as bare text, as PyTorch does).
      const std::string size_reason = "0/0: tensor 'x' size mismatch at index 0. expected 8, actual 6";
      w->recompile_reasons({0, 1, 0}, {size_reason});
      w->dynamo_start({0, 1, 0}, module_caller(), f);
      w->output_graph({0, 1, 0}, g);
      CompileMetrics m1 = m;
      m1.id = {0, 1, 0};
      m1.restart_reasons.clear();
      m1.cache_size = m1.accumulated_cache_size = 1;
      m1.recompile_reason = size_reason;
      w->compilation_metrics(m1);
      // 0/2: two reasons (a JSON list; one with quotes and non-ASCII text) and a failed compile.
      const std::vector<std::string> two = {"0/1: L['n'] == 2 \"quoted\" \xc3\xa9\xf0\x9f\x98\x80", size_reason};
      w->recompile_reasons({0, 2, 0}, two);
      w->dynamo_start({0, 2, 0}, module_caller(), f);
      CompileMetrics failed;
      failed.id = {0, 2, 0};
      failed.frame = f;
      failed.cache_size = 2;
      failed.fail_type = "Unsupported";
      failed.fail_reason = "Failed to trace builtin operator\n";
      failed.fail_user_frame_filename = kProg;
      failed.fail_user_frame_lineno = 4;
      failed.has_guarded_code = false;
      failed.recompile_reason = two[0];
      w->compilation_metrics(failed);
    }
    QCOMPARE(warnings, std::string());
    QCOMPARE(logs_in(tmp.path() + "/nested/out").size(), size_t(1));
    QVERIFY2(fs::path(log_path).filename().string().starts_with("dedicated_log_kiln_rank_0_"), log_path.c_str());
    QVERIFY(trace::is_trace_log_file(log_path));
    // The first record is a string-table entry behind PyTorch's glog prefix.
    std::string text = read_file(log_path);
    std::string first = text.substr(0, text.find('\n'));
    QVERIFY2(std::regex_match(first, std::regex(R"(V\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ torch/_logging/structured\.py:28\] \{"str": \[".*prog\.py", 0\]\})")),
             first.c_str());

    auto t = trace::read_trace_log(tmp.path() + "/nested/out");
    QVERIFY2(t.ok(), t ? "" : t.status().to_string().c_str());
    for (const trace::Diagnostic& d : t->diagnostics) qWarning("%s:%d: %s", d.file.c_str(), d.line, d.message.c_str());
    QCOMPARE(t->diagnostics.size(), size_t(0));  // envelopes parse and every payload md5 matches
    QCOMPARE(t->entries.size(), size_t(4));
    QCOMPARE(t->entries[0].label, std::string("0/0"));
    QCOMPARE(t->entries[1].label, std::string("1/0"));
    QCOMPARE(t->entries[2].label, std::string("0/1"));
    QCOMPARE(t->entries[3].label, std::string("0/2"));

    const trace::CompileEntry& e0 = entry(*t, "0/0");
    QCOMPARE(e0.attempt, 1);
    QCOMPARE(trace::display_id(e0.id, e0.attempt), std::string("[0/0_1]"));
    QCOMPARE(e0.stack.size(), size_t(2));
    QCOMPARE(e0.stack[0].function, std::string("<module>"));
    QCOMPARE(e0.stack[0].code, std::string("print(opt(x).sum())"));
    QCOMPARE(e0.stack[1].file, std::string(kProg));
    QCOMPARE(e0.function(), std::string("f"));
    QCOMPARE(e0.function_line(), 2);
    QCOMPARE(e0.graph_breaks.size(), size_t(1));
    const trace::GraphBreak& gb = e0.graph_breaks[0];
    QCOMPARE(gb.reason, std::string("Failed to trace builtin operator"));
    QCOMPARE(gb.file, std::string(kProg));
    QCOMPARE(gb.line, 4);
    QVERIFY(gb.detail.find("Hint: Avoid calling `print`.") != std::string::npos);
    QCOMPARE(gb.user_stack.size(), size_t(2));
    QCOMPARE(gb.user_stack[1].function, std::string("f"));
    QCOMPARE(gb.user_stack[1].code, std::string("print(\"mid\", y.shape)"));
    QCOMPARE(trace::entry_status(e0), std::string("break"));
    QCOMPARE(trace::guard_count(*t, e0), std::optional<int64_t>(3));
    QVERIFY(e0.metrics);
    QCOMPARE(e0.metrics->compile_id, std::string("0/0"));
    QCOMPARE(e0.metrics->graph_op_count, std::optional<int64_t>(2));
    QCOMPARE(e0.metrics->graph_node_count, std::optional<int64_t>(4));
    QCOMPARE(e0.metrics->graph_input_count, std::optional<int64_t>(1));
    QCOMPARE(e0.metrics->co_firstlineno, std::optional<int64_t>(2));
    QCOMPARE(e0.metrics->restart_reasons.size(), size_t(1));
    QCOMPARE(e0.metrics->restart_reasons[0], print_break().reason + "\n" + "  Explanation: Dynamo does not know how to trace builtin operator `print`\n  Hint: Avoid calling `print`.");
    QCOMPARE(e0.metrics->start_time, std::optional<double>(1795307206.004819));
    QCOMPARE(e0.metrics->entire_frame_compile_time_s, std::optional<double>(1.5));
    // The graph stage goes through Kiln's graph parser with the counts the metrics give.
    bool saw_graph = false;
    for (const trace::StageSummary& s : trace::stage_summaries(*t, e0)) {
      if (s.name != "dynamo_output_graph") continue;
      saw_graph = true;
      QCOMPARE(s.error, std::string());
      QCOMPARE(s.ops, 2);
      QCOMPARE(s.nodes, 4);
    }
    QVERIFY(saw_graph);
    QCOMPARE(*t->payload_text(e0, "dynamo_output_graph"), print_graph_module(g));
    // dynamo_guards: one JSON object per guard with its code and user stack.
    auto guards_text = t->payload_text(e0, "dynamo_guards");
    QVERIFY(guards_text);
    trace::json::Value list;
    trace::json::ParseError err;
    QVERIFY(trace::json::parse(*guards_text, list, err));
    std::vector<trace::json::Value> items;
    trace::json::elements(list, items);
    QCOMPARE(items.size(), size_t(3));
    QCOMPARE(trace::json::to_string(*trace::json::find(items[1], "code")), std::string("L['n'] == 2"));
    QVERIFY(trace::json::find(items[0], "user_stack")->is_array());
    QVERIFY(trace::json::find(items[1], "user_stack")->is_null());
    // The metrics JSON carries the sizes Dynamo records, symbolic ones quoted.
    std::string metrics = t->metrics_json(e0);
    QVERIFY2(metrics.find(R"("graph_node_shapes": "{'l_x_': ['s0', 16], 'y': ['s0', 16], 'z': ['s0', 16]}")") !=
                 std::string::npos, metrics.c_str());
    QVERIFY(metrics.find(R"("stack_trace": ["Line: 30, Name: <module>, Filename: /home/dev/run/prog.py", "Line: 2, Name: f, Filename: /home/dev/run/prog.py"])") != std::string::npos);
    // moc misreads raw strings with unbalanced braces, hence the escapes.
    QVERIFY(text.find("{\"dynamo_output_graph\": {\"sizes\": {\"l_x_\": [\"s0\", 16], \"y\": [\"s0\", 16], \"z\": [\"s0\", 16]}}, "
                      "\"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 1, \"has_payload\": \"") != std::string::npos);

    const trace::CompileEntry& e1 = entry(*t, "1/0");
    QCOMPARE(e1.function(), std::string("torch_dynamo_resume_in_f_at_4"));
    QCOMPARE(trace::entry_status(e1), std::string("ok"));
    QCOMPARE(e1.metrics->graph_op_count, std::optional<int64_t>(1));
    QCOMPARE(trace::guard_count(*t, e1), std::optional<int64_t>(1));

    const trace::CompileEntry& r1 = entry(*t, "0/1");
    QCOMPARE(r1.recompile_reasons, std::vector<std::string>{"0/0: tensor 'x' size mismatch at index 0. expected 8, actual 6"});
    QCOMPARE(r1.metrics->cache_size, std::optional<int64_t>(1));
    const trace::CompileEntry& r2 = entry(*t, "0/2");
    QCOMPARE(r2.recompile_reasons.size(), size_t(2));
    QCOMPARE(r2.recompile_reasons[0], std::string("0/1: L['n'] == 2 \"quoted\" \xc3\xa9\xf0\x9f\x98\x80"));
    QCOMPARE(trace::entry_status(r2), std::string("error"));
    QCOMPARE(r2.graph_breaks.size(), size_t(1));
    QVERIFY(r2.graph_breaks[0].failure);
    QCOMPARE(r2.graph_breaks[0].line, 4);
    QCOMPARE(r2.metrics->graph_op_count, std::optional<int64_t>());
    QCOMPARE(r2.metrics->guard_count, std::optional<int64_t>());  // null: a failed compile has no guards
    QCOMPARE(r2.graph_breaks[0].detail, std::string("Failed to trace builtin operator"));
    // Envelopes stay ASCII, as json.dumps writes them.
    QVERIFY(text.find("\\u00e9\\ud83d\\ude00") != std::string::npos);
  }

  void every_record_is_on_disk_when_written() {
    TempDir tmp;
    auto w = TraceWriter::open(tmp.path());
    QVERIFY(w);
    w->dynamo_start({3, 0, 0}, {}, {"g", kProg, 7});
    // Read while the writer is still open: a crash now would leave this much.
    auto t = trace::read_trace_log(w->path());
    QVERIFY(t.ok());
    QCOMPARE(t->diagnostics.size(), size_t(0));
    QCOMPARE(t->entries.size(), size_t(1));
    QCOMPARE(t->entries[0].label, std::string("3/0"));
    QVERIFY(t->entries[0].started);
    QCOMPARE(t->entries[0].function(), std::string("g"));
  }

  void run_without_compiles_leaves_no_file() {
    TempDir tmp;
    { QVERIFY(TraceWriter::open(tmp.path())); }
    QCOMPARE(logs_in(tmp.path()).size(), size_t(0));
  }

  void unwritable_destination_warns_and_returns_null() {
    TempDir tmp;
    std::string blocker = tmp.path() + "/a_file";
    std::ofstream(blocker) << "not a folder";
    std::vector<std::string> warnings;
    auto sink = [&](const std::string& w) { warnings.push_back(w); };
    // A folder under a regular file cannot be made (even as root, for whom permissions do not count).
    QVERIFY(!TraceWriter::open(blocker + "/trace", sink));
    // A path that is a regular file is not a folder.
    QVERIFY(!TraceWriter::open(blocker, sink));
    QCOMPARE(warnings.size(), size_t(2));
    for (const std::string& w : warnings) {
      QVERIFY2(w.find('\n') == std::string::npos, w.c_str());  // one line each
      QVERIFY2(w.starts_with("kiln: KILN_TRACE: cannot write a trace log in '" + blocker), w.c_str());
      QVERIFY2(w.ends_with("running without a trace"), w.c_str());
    }
    QVERIFY2(warnings[1].find("it is a file, not a folder") != std::string::npos, warnings[1].c_str());
    QCOMPARE(read_file(blocker), std::string("not a folder"));  // left alone
  }

  void from_env_reads_kiln_trace() {
    TempDir tmp;
    std::vector<std::string> warnings;
    auto sink = [&](const std::string& w) { warnings.push_back(w); };
    qunsetenv("KILN_TRACE");
    QVERIFY(!TraceWriter::from_env(sink));
    QVERIFY(warnings.empty());  // unset is not a problem
    std::string blocker = tmp.path() + "/file";
    std::ofstream(blocker) << "x";
    qputenv("KILN_TRACE", QByteArray::fromStdString(blocker + "/sub"));
    QVERIFY(!TraceWriter::from_env(sink));
    QCOMPARE(warnings.size(), size_t(1));
    qputenv("KILN_TRACE", QByteArray::fromStdString(tmp.path() + "/ok"));
    auto w = TraceWriter::from_env(sink);
    QVERIFY(w);
    QVERIFY(w->path().starts_with(tmp.path() + "/ok/dedicated_log_kiln_rank_0_"));
    qunsetenv("KILN_TRACE");
  }

  void python_callers_walks_parents_outermost_first() {
    auto lines = std::make_shared<const std::vector<std::string>>(
        std::vector<std::string>{"def f(x):", "    return helper(x)  ", "", "print(f(1))"});
    auto code = [&](const char* name, int line) {
      py::Code c;
      c.name = name;
      c.filename = kProg;
      c.code = {py::Instr{py::Op::Nop, 0, line, 1}, py::Instr{py::Op::Nop, 0, line, 5}};
      c.source_lines = lines;
      return c;
    };
    py::Code module = code("<module>", 4), f = code("f", 2), helper = code("helper", 9);
    py::Frame top, mid, inner;
    top.code = &module;
    mid.code = &f;
    mid.parent = &top;
    mid.pc = 1;
    inner.code = &helper;
    inner.parent = &mid;
    QVERIFY(python_callers(top).empty());
    std::vector<StackFrame> got = python_callers(inner);
    QCOMPARE(got.size(), size_t(2));
    QCOMPARE(got[0].function, std::string("<module>"));
    QCOMPARE(got[0].line, 4);
    QCOMPARE(got[0].code, std::string("print(f(1))"));
    QCOMPARE(got[1].function, std::string("f"));
    QCOMPARE(got[1].line, 2);
    QCOMPARE(got[1].code, std::string("return helper(x)"));  // indentation and trailing blanks dropped
  }
};

QTEST_APPLESS_MAIN(TestTraceWriter)
#include "test_trace_writer.moc"
