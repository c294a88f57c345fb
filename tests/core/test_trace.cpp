// The TORCH_TRACE reader: every reference log indexes cleanly and agrees
// with what the logs themselves say (compilation_metrics, the s03 explain
// output, the s04 recompile log); each kind of damage gives its diagnostic
// and reading goes on; folders of logs; unknown tags.
#include "test_support.h"

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/graph/graph.h"
#include "core/trace/reader.h"
#include "core/trace/summary.h"
#include "core/trace/summary_json.h"
#include "core/util/md5.h"
#include "trace_log_util.h"

using namespace kiln;
using namespace kiln::trace;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> reference_logs() {
  std::string ref = test::reference_dir();
  std::vector<std::string> out;
  for (const char* group : {"/traces", "/minifier"})
    for (const auto& de : fs::directory_iterator(ref + group)) {
      fs::path p = de.path();
      if (std::string(group) == "/minifier") p /= "trace";
      if (fs::is_directory(p)) out.push_back(p.string());
    }
  std::sort(out.begin(), out.end());
  return out;
}

Trace open_ok(const std::string& path) {
  auto t = open_trace(path);
  if (!t) qFatal("%s", t.status().to_string().c_str());
  return std::move(*t);
}

// A synthetic log, one record at a time, with correct md5s unless told otherwise.
const std::string& kPrefix = test::kLogPrefix;
const std::string& kIds = test::kLogIds;
std::string rec(const std::string& envelope) { return test::log_record(envelope); }
using test::payload_lines;
std::string rec_payload(const std::string& tag, const std::string& meta, const std::string& payload,
                        const std::string& ids = kIds) {
  return test::log_record_with_payload(tag, meta, payload, ids);
}

const std::string kGraph =
    "class GraphModule(torch.nn.Module):\n"
    "    def forward(self, L_x_: \"f32[4][1]cpu\"):\n"
    "        l_x_ = L_x_\n"
    "        \n"
    "        # File: /home/u/prog.py:6 in f, code: return x.sin()\n"
    "        sin: \"f32[4][1]cpu\" = torch.sin(l_x_);  l_x_ = None\n"
    "        return (sin,)\n";

std::string start_records() {
  return rec("{\"str\": [\"/home/u/prog.py\", 0]}") +
         rec("{\"dynamo_start\": {\"stack\": [{\"line\": 5, \"name\": \"f\", \"filename\": 0}]}, " + kIds + "}");
}

std::string good_log() {
  return start_records() + rec_payload("dynamo_output_graph", "{\"sizes\": {}}", kGraph) +
         rec("{\"compilation_metrics\": {\"compile_id\": \"0/0\", \"co_name\": \"f\", \"graph_op_count\": 1, "
             "\"fail_type\": null, \"restart_reasons\": []}, " + kIds + "}");
}

int line_count(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

// Index `log`; expect exactly one diagnostic, on `line`, with `message`, and
// that the good records around the damage were still read.
void expect_one_diagnostic(const std::string& log, int line, const std::string& message, bool graph_read = true) {
  Trace t = read_trace_text(log, "damaged.log");
  QVERIFY2(t.diagnostics.size() == 1, qPrintable(QString("%1 diagnostics").arg(t.diagnostics.size())));
  const Diagnostic& d = t.diagnostics[0];
  QCOMPARE(QString::fromStdString(d.file), QString("damaged.log"));
  QCOMPARE(d.line, line);
  QCOMPARE(QString::fromStdString(d.message), QString::fromStdString(message));
  const CompileEntry* e = t.find("0/0");
  QVERIFY(e);
  QVERIFY(e->metrics.has_value());
  if (graph_read) {
    auto g = t.graph(*e, "dynamo_output_graph");
    QVERIFY2(g.ok(), qPrintable(QString::fromStdString(g.status().to_string())));
    QCOMPARE(count_nodes(**g, OpKind::CallFunction), size_t(1));
  }
}

}  // namespace

class TestTrace : public QObject {
  Q_OBJECT
 private slots:
  // ---- the reference dumps ----

  void every_reference_log_reads_cleanly() {
    std::vector<std::string> logs = reference_logs();
    QVERIFY(logs.size() >= 9);
    for (const std::string& dir : logs) {
      Trace t = open_ok(dir);
      QCOMPARE(int(t.kind), int(TraceKind::TraceLog));
      for (const Diagnostic& d : t.diagnostics) qWarning("%s:%d: %s", d.file.c_str(), d.line, d.message.c_str());
      QVERIFY2(t.diagnostics.empty(), dir.c_str());
      QVERIFY2(t.unknown_tags.empty(), dir.c_str());
      QVERIFY(t.records > 0);
      std::set<std::string> labels;
      for (const CompileEntry& e : t.entries) QVERIFY2(labels.insert(e.label).second, e.label.c_str());
      // Every graph payload goes through the graph parser.
      for (const CompileEntry& e : t.entries)
        for (const Artifact& a : e.artifacts) {
          if (!a.graph) continue;
          auto g = t.graph(e, a.name);
          QVERIFY2(g.ok(), qPrintable(QString::fromStdString(dir + " " + e.label + " " + a.name + ": " + g.status().to_string())));
        }
    }
  }

  // compilation_metrics.graph_op_count / graph_node_count against the parsed
  // dynamo_output_graph, and against the line counter that stands in for it.
  void op_counts_agree_with_compilation_metrics() {
    int checked = 0;
    for (const std::string& dir : reference_logs()) {
      Trace t = open_ok(dir);
      for (const CompileEntry& e : t.entries) {
        if (!e.metrics || !e.metrics->graph_op_count || !e.artifact("dynamo_output_graph")) continue;
        auto g = t.graph(e, "dynamo_output_graph");
        QVERIFY(g.ok());
        int ops = int(count_nodes(**g, OpKind::CallFunction) + count_nodes(**g, OpKind::CallMethod) +
                      count_nodes(**g, OpKind::CallModule));
        QCOMPARE(int64_t(ops), *e.metrics->graph_op_count);
        QCOMPARE(int64_t((*g)->size()), *e.metrics->graph_node_count);
        GraphCounts c = count_graph_text(*t.payload_text(e, "dynamo_output_graph"));
        QCOMPARE(int64_t(c.ops), *e.metrics->graph_op_count);
        QCOMPARE(int64_t(c.nodes), *e.metrics->graph_node_count);
        for (const StageSummary& s : stage_summaries(t, e))
          if (s.name == "dynamo_output_graph") QCOMPARE(s.ops, ops);
        ++checked;
      }
    }
    QCOMPARE(checked, 42);
  }

  // The line counter on AOT graphs (pytree signatures, descriptor comments).
  void line_counter_on_aot_graphs() {
    Trace t = open_ok(test::reference_dir() + "/traces/s05_resnet18_train");
    const CompileEntry* e = t.find("0/0");
    QVERIFY(e);
    for (const char* stage : {"aot_joint_graph", "aot_forward_graph", "aot_backward_graph", "inductor_post_grad_graph#2"}) {
      auto g = t.graph(*e, stage);
      QVERIFY(g.ok());
      GraphCounts c = count_graph_text(*t.payload_text(*e, stage));
      QCOMPARE(c.nodes, int((*g)->size()));
      QCOMPARE(c.placeholders, int(count_nodes(**g, OpKind::Placeholder)));
    }
  }

  void s02_linear_relu_entry() {
    Trace t = open_ok(test::reference_dir() + "/traces/s02_linear_relu");
    QCOMPARE(t.files.size(), size_t(1));
    const CompileEntry* e = t.find("0/0");
    QVERIFY(e);
    QCOMPARE(QString::fromStdString(display_id(e->id, e->attempt)), QString("[0/0]"));
    QCOMPARE(QString::fromStdString(e->function()), QString("forward"));
    QCOMPARE(QString::fromStdString(e->function_file()), QString("/home/dev/models/s02_linear_relu.py"));
    QCOMPARE(e->function_line(), 6);
    QCOMPARE(e->stack.size(), size_t(6));
    QCOMPARE(QString::fromStdString(e->stack[0].code), QString("print(opt_mod(torch.randn(10, 100)).sum().item())"));
    QCOMPARE(QString::fromStdString(e->stack[2].file), QString("/usr/lib/python3/site-packages/torch/nn/modules/module.py"));
    std::vector<std::string> stages;
    for (const Artifact& a : e->artifacts)
      if (a.graph) stages.push_back(a.name);
    std::vector<std::string> want = {"dynamo_output_graph", "before_pre_grad_graph", "after_pre_grad_graph",
                                     "aot_joint_graph",     "aot_forward_graph",     "aot_backward_graph",
                                     "fx_graph_runnable",   "before_post_grad_graph", "inductor_post_grad_graph"};
    QVERIFY(stages == want);
    QVERIFY(e->artifact("inductor_output_code"));
    QCOMPARE(QString::fromStdString(e->artifact("inductor_output_code")->filename),
             QString("/tmp/torchinductor_dev/cn/ccnghufisgtggg6ys64luexh2mnbky4ybqzeypbwpyul74et6cme.py"));
    QVERIFY(t.payload_text(*e, "inductor_output_code")->rfind("# AOT ID: ['0_forward']", 0) == 0);
    QCOMPARE(guard_count(t, *e).value_or(-1), int64_t(35));
    // Dynamo's guard_count counts its Guard objects; the C++ tree has 26 leaf checks.
    QCOMPARE(count_cpp_guards(*t.payload_text(*e, "dynamo_cpp_guards_str")), 26);
    QCOMPARE(QString::fromStdString(entry_status(*e)), QString("ok"));
    QVERIFY(e->metrics);
    QCOMPARE(e->metrics->graph_op_count.value_or(-1), int64_t(2));
    QCOMPARE(QString::fromStdString(e->metrics->co_name), QString("forward"));
    QVERIFY(std::abs(e->metrics->entire_frame_compile_time_s.value_or(0) - 42.891739) < 1e-9);
    QVERIFY(!e->metrics->fail_type);
    std::string mj = t.metrics_json(*e);
    QVERIFY(mj.rfind("{\"compile_id\": \"0/0\"", 0) == 0 && mj.back() == '}');
    // Chromium timings, attributed to the compile they time.
    std::vector<ChromiumEvent> ev = t.chromium_events(*e);
    QVERIFY(ev.size() > 50);
    QCOMPARE(QString::fromStdString(ev[0].name), QString("dynamo"));
    QCOMPARE(QString::fromStdString(ev[0].phase), QString("B"));
    QCOMPARE(ev[0].ts_us, 1795307149402861.0);
    QCOMPARE(QString::fromStdString(ev[1].fn_name), QString("_compile.compile_inner"));
    // The payload text is exactly what was hashed.
    const Artifact* g = e->artifact("dynamo_output_graph");
    QCOMPARE(QString::fromStdString(md5_hex(*t.text(g->payload))), QString("dd7098ec09d853df86d67b5cd42b1adf"));
  }

  // Graph breaks with their user lines, against torch._dynamo.explain's
  // printout in s03's stdout: one explain per function after torch._dynamo.reset().
  void s03_graph_breaks_match_explain() {
    std::string ref = test::reference_dir();
    Trace t = open_ok(ref + "/traces/s03_graph_breaks");
    // The first run: 11 compiles, 6 of them with a break record.
    int breaks = 0;
    for (const CompileEntry& e : t.entries) breaks += int(e.graph_breaks.size());
    QCOMPARE(breaks, 12);
    const CompileEntry* first = t.find("0/0");
    QCOMPARE(first->attempt, 1);  // the print() break restarted the analysis
    QCOMPARE(QString::fromStdString(display_id(first->id, first->attempt)), QString("[0/0_1]"));
    QCOMPARE(QString::fromStdString(first->graph_breaks.at(0).reason), QString("Failed to trace builtin operator"));
    QCOMPARE(QString::fromStdString(first->graph_breaks.at(0).file), QString("/home/dev/models/s03_graph_breaks.py"));
    QCOMPARE(first->graph_breaks.at(0).line, 4);
    QCOMPARE(first->graph_breaks.at(0).user_stack.size(), size_t(2));
    QCOMPARE(QString::fromStdString(first->graph_breaks.at(0).user_stack[1].code), QString("print(\"mid\", y.shape)"));
    QCOMPARE(QString::fromStdString(entry_status(*first)), QString("break"));
    // explain() compiles each function again under the same compile ids.
    QCOMPARE(QString::fromStdString(t.find("0/0#2")->function()), QString("f_print"));
    QCOMPARE(QString::fromStdString(t.find("0/0#3")->function()), QString("f_data_dep"));
    QCOMPARE(QString::fromStdString(t.find("0/0#6")->function()), QString("forward"));

    // Group the explain compiles: each explain() starts again at 0/0.
    std::vector<std::vector<const CompileEntry*>> groups;
    for (const CompileEntry& e : t.entries) {
      if (e.stack.empty() || e.stack[0].code.find("torch._dynamo.explain") == std::string::npos) continue;
      if (e.id.str() == "0/0") groups.emplace_back();
      QVERIFY(!groups.empty());
      groups.back().push_back(&e);
    }
    QCOMPARE(groups.size(), size_t(5));

    // The explain printout: "=== explain NAME", counts, reasons and user frames.
    std::vector<std::string> lines;
    {
      std::istringstream in(slurp(ref + "/logs/s03_graph_breaks/stdout.log"));
      for (std::string l; std::getline(in, l);) lines.push_back(l);
    }
    std::regex frame_re(R"(<FrameSummary file (.*), line (\d+) in (\S+)>)");
    size_t section = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].rfind("=== explain ", 0) != 0) continue;
      QVERIFY(section < groups.size());
      const auto& group = groups[section++];
      int graph_count = std::stoi(lines[i + 1].substr(std::string("Graph Count: ").size()));
      int break_count = std::stoi(lines[i + 2].substr(std::string("Graph Break Count: ").size()));
      int graphs = 0;
      std::vector<const GraphBreak*> got;
      for (const CompileEntry* e : group) {
        graphs += e->artifact("dynamo_output_graph") != nullptr;
        for (const GraphBreak& gb : e->graph_breaks) got.push_back(&gb);
      }
      QCOMPARE(graphs, graph_count);
      QCOMPARE(int(got.size()), break_count);
      // Break reasons in order, each with its reason's first line and user frame.
      size_t k = 0;
      for (size_t j = i + 3; j < lines.size() && lines[j].rfind("Ops per Graph:", 0) != 0; ++j) {
        if (lines[j].rfind("    Reason: ", 0) != 0) continue;
        std::string reason = lines[j].substr(12);
        std::smatch m;
        size_t f = j + 1;
        while (f < lines.size() && !std::regex_search(lines[f], m, frame_re)) ++f;
        QVERIFY(k < got.size());
        const GraphBreak& gb = *got[k++];
        QCOMPARE(QString::fromStdString(gb.file), QString::fromStdString(m[1].str()));
        QCOMPARE(gb.line, std::stoi(m[2].str()));
        // explain() names a data-dependent jump by its bytecode handler.
        bool same = gb.reason == reason || (reason.rfind("generic_jump", 0) == 0 && gb.reason == "Data-dependent branching");
        QVERIFY2(same, qPrintable(QString::fromStdString("explain: " + reason + " / trace: " + gb.reason)));
      }
      QCOMPARE(k, got.size());
    }
    QCOMPARE(section, size_t(5));
  }

  // Recompile reasons against the [__recompiles] lines of s04's stderr.
  void s04_recompile_reasons_match_log() {
    std::string ref = test::reference_dir();
    Trace t = open_ok(ref + "/traces/s04_recompiles");
    std::map<std::string, std::vector<std::string>> logged;  // compile id -> first line of each reason
    std::regex line_re(R"(\] \[(\d+/\d+)\] \[__recompiles\]     - (\d+/\d+: .*)$)");
    std::istringstream in(slurp(ref + "/logs/s04_recompiles/stderr.log"));
    for (std::string l; std::getline(in, l);) {
      std::smatch m;
      if (std::regex_search(l, m, line_re)) logged[m[1].str()].push_back(m[2].str());
    }
    QCOMPARE(logged.size(), size_t(6));
    int with_reasons = 0;
    for (const CompileEntry& e : t.entries) {
      auto it = logged.find(e.id.str());
      if (it == logged.end()) {
        QVERIFY2(e.recompile_reasons.empty(), e.label.c_str());
        continue;
      }
      ++with_reasons;
      std::vector<std::string> got;
      for (const std::string& r : e.recompile_reasons) got.push_back(r.substr(0, r.find('\n')));
      QCOMPARE(got.size(), it->second.size());
      for (size_t i = 0; i < got.size(); ++i)
        QCOMPARE(QString::fromStdString(got[i]), QString::fromStdString(it->second[i]));
      QCOMPARE(QString::fromStdString(e.function()), QString("g"));
      QCOMPARE(e.function_line(), 2);
    }
    QCOMPARE(with_reasons, 6);
    // A single reason comes as bare text, several as a JSON list.
    QCOMPARE(t.find("0/1")->recompile_reasons.size(), size_t(1));
    QCOMPARE(QString::fromStdString(t.find("0/1")->recompile_reasons[0]),
             QString("0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6"));
    QCOMPARE(t.find("0/6")->recompile_reasons.size(), size_t(6));
    // Symbolic-shape events: automatic dynamic made x's first size a symbol.
    const CompileEntry* e = t.find("0/1");
    auto sym = std::find_if(e->shape_events.begin(), e->shape_events.end(), [](const ShapeEvent& s) { return s.kind == "create_symbol"; });
    QVERIFY(sym != e->shape_events.end());
    QCOMPARE(QString::fromStdString(sym->symbol), QString("s77"));
    QCOMPARE(QString::fromStdString(sym->value), QString("6"));
    QCOMPARE(QString::fromStdString(sym->range), QString("[2, int_oo]"));
    QCOMPARE(QString::fromStdString(sym->source), QString("L['x'].size()[0]"));
    QCOMPARE(QString::fromStdString(sym->user_file), QString("/home/dev/models/s04_recompiles.py"));
    QCOMPARE(sym->user_line, 4);
    int specializations = 0, fast_guards = 0;
    for (const CompileEntry& x : t.entries)
      for (const ShapeEvent& s : x.shape_events) {
        specializations += s.kind == "symbolic_shape_specialization";
        fast_guards += s.kind == "guard_added_fast";
      }
    QVERIFY(specializations > 0);
    QVERIFY(fast_guards > 0);
  }

  void s05_training_has_forward_and_backward_compiles() {
    Trace t = open_ok(test::reference_dir() + "/traces/s05_resnet18_train");
    const CompileEntry* e = t.find("0/0");
    QVERIFY(e);
    // Inductor compiles the forward, then (at the first backward) the backward
    // under the same compile id: the second payloads get "#2".
    QVERIFY(e->artifact("aot_forward_graph") && e->artifact("aot_backward_graph"));
    QVERIFY(e->artifact("inductor_post_grad_graph") && e->artifact("inductor_post_grad_graph#2"));
    QVERIFY(e->artifact("inductor_output_code#2"));
    QVERIFY(!e->artifact("inductor_post_grad_graph#3"));
    auto fwd = t.graph(*e, "aot_forward_graph");
    auto post = t.graph(*e, "inductor_post_grad_graph");
    auto bwd = t.graph(*e, "aot_backward_graph");
    auto post2 = t.graph(*e, "inductor_post_grad_graph#2");
    QVERIFY(fwd.ok() && post.ok() && bwd.ok() && post2.ok());
    QCOMPARE((*post)->size(), (*fwd)->size());
    QCOMPARE((*post2)->size(), (*bwd)->size());
    // The same graph object comes back from the cache.
    QVERIFY(t.graph(*e, "aot_forward_graph")->get() == fwd->get());
    QCOMPARE(e->other_metrics.size(), size_t(3));  // runtime, bwd, bwd runtime
    QCOMPARE(QString::fromStdString(e->other_metrics[1].tag), QString("bwd_compilation_metrics"));
    QVERIFY(e->chromium_events.size() > 100);
  }

  void s07_export_records_without_compile_id() {
    Trace t = open_ok(test::reference_dir() + "/traces/s07_export");
    QCOMPARE(t.entries.size(), size_t(1));
    const CompileEntry& e = t.entries[0];
    QCOMPARE(QString::fromStdString(e.label), QString("unknown"));
    QVERIFY(!e.id.known());
    auto g = t.graph(e, "aot_inference_graph");
    QVERIFY(g.ok());
    QVERIFY(count_nodes(**g, OpKind::CallFunction) > 0);
    QVERIFY(t.find("unknown") == &e);
  }

  void find_accepts_tlparse_spelling() {
    Trace t = open_ok(test::reference_dir() + "/traces/s03_graph_breaks");
    QVERIFY(t.find("[0/0_1]") == t.find("0/0"));
    QVERIFY(t.find("[4/0]") == t.find("4/0"));
    QVERIFY(t.find("0/0#2") != t.find("0/0"));
    QVERIFY(t.find("9/9") == nullptr);
    auto missing = t.payload_text(*t.find("0/0"), "no_such_stage");
    QVERIFY(!missing.ok());
    QVERIFY(missing.status().message().find("0/0 has no stage 'no_such_stage'; it has: dynamo_graph_break_reason, dynamo_output_graph") == 0);
  }

  // ---- folders of logs ----

  void folder_of_logs() {
    std::string dir = test::reference_dir() + "/minifier/accuracy_cuda/trace";
    Trace t = open_ok(dir);
    size_t logs = 0;
    for (const auto& de : fs::directory_iterator(dir)) logs += de.path().extension() == ".log";
    QCOMPARE(t.files.size(), logs);
    QVERIFY(std::is_sorted(t.files.begin(), t.files.end(), [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; }));
    // Every process numbers its compiles from 0/0; labels keep them apart.
    int zero = 0;
    for (const CompileEntry& e : t.entries) zero += e.id.str() == "0/0";
    QVERIFY(zero >= 2);
    QVERIFY(t.find("0/0#2") && t.find("0/0#2")->file != t.find("0/0")->file);

    QTemporaryDir tmp;
    std::string one = test::reference_dir() + "/traces/s02_linear_relu/dedicated_log_torch_trace_31md1peq.log";
    fs::copy_file(one, tmp.path().toStdString() + "/rank_0.log");
    fs::copy_file(one, tmp.path().toStdString() + "/rank_1.log");
    std::ofstream(tmp.path().toStdString() + "/notes.txt") << "not a log\n";
    Trace two = open_ok(tmp.path().toStdString());
    QCOMPARE(two.files.size(), size_t(2));
    QVERIFY(two.diagnostics.empty());
    QCOMPARE(two.entries.size(), size_t(2));  // one compile in each file
    const CompileEntry* a = two.find("0/0");
    const CompileEntry* b = two.find("0/0#2");
    QVERIFY(a && b);
    QCOMPARE(a->file, 0u);
    QCOMPARE(b->file, 1u);
    QCOMPARE(b->occurrence, 2);
    QCOMPARE(*two.payload_text(*a, "aot_forward_graph"), *two.payload_text(*b, "aot_forward_graph"));
  }

  // A folder of rank files: the rank comes from the file name (older logs carry
  // none in their envelopes, some carry another), labels are per rank, and
  // recompiles chain within a rank. A chromium event with no compile id is the
  // run's, not a compile.
  void ranks_from_file_names() {
    const std::string ids01 = "\"frame_id\": 0, \"frame_compile_id\": 1, \"attempt\": 0";
    auto rank_log = [&](const std::string& rank_field) {
      return rec_payload("chromium_event", "{}", "{\"name\": \"run\", \"ph\": \"B\", \"ts\": 1}", "\"frame_id\": null" + rank_field) +
             rec("{\"str\": [\"/home/u/prog.py\", 0]}") +
             rec("{\"dynamo_start\": {\"stack\": [{\"line\": 5, \"name\": \"f\", \"filename\": 0}]}, " + kIds + rank_field + "}") +
             rec_payload("dynamo_output_graph", "{\"sizes\": {}}", kGraph, kIds + rank_field) +
             rec_payload("artifact", "{\"name\": \"recompile_reasons\", \"encoding\": \"json\"}", "[\"size of x changed\"]",
                         ids01 + rank_field) +
             rec("{\"dynamo_start\": {\"stack\": [{\"line\": 5, \"name\": \"f\", \"filename\": 0}]}, " + ids01 + rank_field + "}");
    };
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    std::ofstream(dir + "/dedicated_log_torch_trace_rank_10_q1.log") << rank_log("");
    std::ofstream(dir + "/dedicated_log_torch_trace_rank_2_x9.log") << rank_log(", \"rank\": 0");
    Trace t = open_ok(dir);
    QCOMPARE(t.files.size(), size_t(2));
    QCOMPARE(*t.files[0].rank, int64_t(2));  // by rank, not by name
    QCOMPARE(*t.files[1].rank, int64_t(10));
    QCOMPARE(t.entries.size(), size_t(4));  // two compiles per rank, no "unknown" entry
    QCOMPARE(t.run_chromium_events.size(), size_t(2));
    for (const char* label : {"r2:0/0", "r2:0/1", "r10:0/0", "r10:0/1"}) QVERIFY2(t.find(label), label);
    QCOMPARE(*t.find("r10:0/1")->rank, int64_t(10));
    QCOMPARE(t.find("r10:0/1")->recompile_reasons.size(), size_t(1));
    QCOMPARE(t.find("r2:0/0")->occurrence, 1);
    // The envelopes of rank 2's file say rank 0: said once, the file name wins.
    QCOMPARE(t.diagnostics.size(), size_t(1));
    QVERIFY2(t.diagnostics[0].message.find("records say rank 0, the file name says rank 2") != std::string::npos,
             t.diagnostics[0].message.c_str());
    QCOMPARE(rank_part("r10:0/1#2"), std::string_view("r10:"));
    QCOMPARE(rank_part("0/1"), std::string_view());
    QVERIFY(!rank_of_log_name("dedicated_log_torch_trace_abc.log"));
    QCOMPARE(*rank_of_log_name("dedicated_log_torch_trace_rank_3.log"), int64_t(3));
  }

  // ---- damage: one diagnostic each, exact, and reading goes on ----

  void damage_not_a_record() {
    std::string log = start_records() + "hello world\n" + good_log().substr(start_records().size());
    expect_one_diagnostic(log, 3, "not a TORCH_TRACE record: expected a glog prefix such as 'V1122 00:25:49.640000 785 file.py:123] '");
  }

  void damage_bad_glog_time() {
    std::string log = start_records() + "V1122 00:25:49 785 x.py:1] {}\n" + good_log().substr(start_records().size());
    expect_one_diagnostic(log, 3, "not a TORCH_TRACE record: bad glog timestamp (expected 'MMDD HH:MM:SS.ffffff')");
  }

  void damage_bad_json_envelope() {
    // The bad record's payload lines are skipped with it.
    std::string bad = kPrefix + "{\"dynamo_output_graph\": {\"sizes\": [}, " + kIds + ", \"has_payload\": \"00\"}\n" + payload_lines(kGraph);
    std::string log = start_records() + bad + good_log().substr(start_records().size());
    int col = int(kPrefix.size() + std::string("{\"dynamo_output_graph\": {\"sizes\": [").size()) + 1;
    expect_one_diagnostic(log, 3, "bad JSON envelope: unexpected character '}' at column " + std::to_string(col));
  }

  void damage_cut_json_envelope() {
    std::string log = start_records() + kPrefix + "{\"chromium_event\": {}, \"frame_id\": 0, \"fra\n" +
                      good_log().substr(start_records().size());
    int col = int(kPrefix.size() + std::string("{\"chromium_event\": {}, \"frame_id\": 0, \"fra").size()) + 1;
    expect_one_diagnostic(log, 3, "bad JSON envelope: unterminated string at column " + std::to_string(col));
  }

  void damage_md5_mismatch() {
    std::string graph_rec = rec_payload("dynamo_output_graph", "{\"sizes\": {}}", kGraph);
    std::string damaged = graph_rec;
    damaged.replace(damaged.find("torch.sin"), 9, "torch.cos");
    std::string log = good_log();
    log.replace(log.find(graph_rec), graph_rec.size(), damaged);
    std::string cos_graph = kGraph;
    cos_graph.replace(cos_graph.find("torch.sin"), 9, "torch.cos");
    expect_one_diagnostic(log, 3, "payload md5 mismatch: has_payload is " + md5_hex(kGraph) + ", the 8 payload lines hash to " +
                                      md5_hex(cos_graph));
  }

  void damage_truncated_payload() {
    // has_payload, but the next line is already the next record.
    std::string cut = rec("{\"dynamo_guards\": {}, " + kIds + ", \"has_payload\": \"" + md5_hex("[]") + "\"}");
    std::string log = start_records() + cut + good_log().substr(start_records().size());
    expect_one_diagnostic(log, 3, "truncated payload: the record has has_payload but no payload lines follow it");
  }

  void damage_file_ends_inside_payload() {
    std::string log = good_log();
    std::string guards = "[\n{\"code\": \"a\"},\n{\"code\": \"b\"}\n]";
    std::string whole = rec_payload("dynamo_guards", "{}", guards);
    std::string part = whole.substr(0, whole.find("{\"code\": \"b"));  // cut mid-payload, no final newline
    part.pop_back();
    part.pop_back();
    log += part;
    int line = line_count(good_log()) + 1;
    std::string got_hash = md5_hex("[\n{\"code\": \"a\"},");
    expect_one_diagnostic(log, line, "truncated payload (the file ends inside it): has_payload is " + md5_hex(guards) +
                                         ", the 2 payload lines hash to " + got_hash);
  }

  void damage_stray_payload_line() {
    std::string log = start_records() + "\tdangling payload line\n\tand another\n" + good_log().substr(start_records().size());
    expect_one_diagnostic(log, 3, "payload line outside a payload: the record before it has no has_payload");
  }

  void damage_unknown_compile_id() {
    std::string log = good_log() + rec_payload("aot_forward_graph", "{}", kGraph,
                                               "\"frame_id\": 7, \"frame_compile_id\": 0, \"attempt\": 0");
    int line = line_count(good_log()) + 1;
    expect_one_diagnostic(log, line, "record for compile id 7/0, which no dynamo_start introduced (aot_forward_graph)");
    // The record is kept under its id all the same.
    Trace t = read_trace_text(log, "damaged.log");
    QVERIFY(t.find("7/0") && t.find("7/0")->artifact("aot_forward_graph"));
    QVERIFY(!t.find("7/0")->started);
  }

  void damage_bad_compile_id() {
    std::string log = good_log() + rec("{\"describe_tensor\": {}, \"frame_id\": \"zero\", \"frame_compile_id\": 0}") +
                      rec("{\"describe_tensor\": {}, \"frame_compile_id\": 0}");
    int line = line_count(good_log()) + 1;
    Trace t = read_trace_text(log, "damaged.log");
    QCOMPARE(t.diagnostics.size(), size_t(2));
    QCOMPARE(t.diagnostics[0].line, line);
    QCOMPARE(QString::fromStdString(t.diagnostics[0].message),
             QString("bad compile id: frame_id, frame_compile_id, compiled_autograd_id and attempt must be non-negative integers"));
    QCOMPARE(t.diagnostics[1].line, line + 1);
    QCOMPARE(QString::fromStdString(t.diagnostics[1].message), QString("bad compile id: frame_compile_id without frame_id"));
    QVERIFY(t.find("unknown"));  // kept, without an id
  }

  void damage_bad_has_payload() {
    std::string log = good_log();
    std::string graph_rec = rec_payload("dynamo_output_graph", "{\"sizes\": {}}", kGraph);
    std::string damaged = graph_rec;
    damaged.replace(damaged.find(md5_hex(kGraph)), 32, "not-an-md5");
    log.replace(log.find(graph_rec), graph_rec.size(), damaged);
    expect_one_diagnostic(log, 3, "bad has_payload value: expected 32 hex digits, got 'not-an-md5'");
  }

  void damage_string_table() {
    std::string log = rec("{\"str\": [\"/x.py\"]}") +
                      rec("{\"dynamo_start\": {\"stack\": [{\"line\": 5, \"name\": \"f\", \"filename\": 3}]}, " + kIds + "}") +
                      good_log().substr(start_records().size());
    Trace t = read_trace_text(log, "damaged.log");
    QCOMPARE(t.diagnostics.size(), size_t(2));
    QCOMPARE(t.diagnostics[0].line, 1);
    QCOMPARE(QString::fromStdString(t.diagnostics[0].message), QString("bad string-table record: expected {\"str\": [text, id]}"));
    QCOMPARE(t.diagnostics[1].line, 2);
    QCOMPARE(QString::fromStdString(t.diagnostics[1].message),
             QString("stack frame names file #3, which no {\"str\": ...} record defined"));
    QCOMPARE(QString::fromStdString(t.find("0/0")->function_file()), QString("(unknown)"));
    QCOMPARE(QString::fromStdString(t.find("0/0")->function()), QString("f"));
  }

  void damage_record_without_tag() {
    std::string log = start_records() + rec("{" + kIds + "}") + good_log().substr(start_records().size());
    expect_one_diagnostic(log, 3, "record has no tag: the envelope names no kind of event");
  }

  // Many kinds of damage in one log: one diagnostic each, in line order.
  void damage_everywhere() {
    std::string log = "garbage\n" + start_records() + "\tstray\n" + kPrefix + "{oops}\n" +
                      good_log().substr(start_records().size()) + kPrefix + "[1, 2]\n";
    Trace t = read_trace_text(log, "damaged.log");
    QCOMPARE(t.diagnostics.size(), size_t(4));
    std::vector<int> lines;
    for (const Diagnostic& d : t.diagnostics) lines.push_back(d.line);
    QVERIFY((lines == std::vector<int>{1, 4, 5, int(std::count(log.begin(), log.end(), '\n'))}));
    QCOMPARE(QString::fromStdString(t.diagnostics[3].message),
             QString("bad JSON envelope: expected a JSON object at column %1").arg(kPrefix.size() + 1));
    QVERIFY(t.find("0/0")->metrics);
  }

  void blank_lines_and_crlf_are_not_damage() {
    std::string log = good_log();
    std::string crlf;
    for (char c : log) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    Trace t = read_trace_text("\n" + crlf + "\n\n", "crlf.log");
    QVERIFY(t.diagnostics.empty());
    QCOMPARE(*t.payload_text(*t.find("0/0"), "dynamo_output_graph"), kGraph.substr(0, kGraph.size()) );
  }

  void unknown_tags_are_kept_and_counted() {
    std::string log = good_log() + rec_payload("brand_new_event", "{\"x\": 1}", "hello\nworld") +
                      rec("{\"brand_new_event\": {}, " + kIds + "}");
    Trace t = read_trace_text(log, "new.log");
    QVERIFY(t.diagnostics.empty());
    QCOMPARE(t.unknown_tags.at("brand_new_event"), int64_t(2));
    QCOMPARE(t.tag_counts.at("brand_new_event"), int64_t(2));
    const CompileEntry* e = t.find("0/0");
    QCOMPARE(e->tag_counts.at("brand_new_event"), int64_t(2));
    QCOMPARE(*t.payload_text(*e, "brand_new_event"), std::string("hello\nworld"));
  }

  // Graph stages are told by their payload, whatever the record is called in
  // the PyTorch version that wrote it: string artifacts of later versions,
  // renamed recompile graphs, an exported program without a compile id.
  // JSON artifacts, code and metadata reprs are not graphs.
  void graphs_under_any_name_are_graph_stages() {
    const std::string aten_graph =
        "class GraphModule(torch.nn.Module):\n"
        "    def forward(self, arg0_1: \"f32[4][1]cpu\"):\n"
        "        sin: \"f32[4][1]cpu\" = torch.ops.aten.sin.default(arg0_1);  arg0_1 = None\n"
        "        return (sin,)\n";
    const std::string exported = "ExportedProgram:\n    class GraphModule(torch.nn.Module):\n"
                                 "        def forward(self, x: \"f32[4]\"):\n"
                                 "            cos: \"f32[4]\" = torch.ops.aten.cos.default(x);  x = None\n"
                                 "            return (cos,)\n\nGraph signature: \n    # inputs\n    x: USER_INPUT\n";
    std::string log = good_log() +
                      rec_payload("artifact", "{\"name\": \"after_post_grad_graph\", \"encoding\": \"string\"}", aten_graph) +
                      rec_payload("artifact", "{\"name\": \"before_recompile_post_grad\", \"encoding\": \"string\"}", aten_graph) +
                      rec_payload("artifact", "{\"name\": \"fx_graph_cache_miss\", \"encoding\": \"json\"}", "{\"key\": \"f1\"}") +
                      rec_payload("artifact", "{\"name\": \"aot_forward_graph_fw_metadata\", \"encoding\": \"string\"}",
                                  "ViewAndMutationMeta(input_info=[])") +
                      rec_payload("inductor_output_code", "{\"filename\": \"/tmp/x.py\"}", "# AOT ID: ['0_inference']\nimport torch\n") +
                      rec_payload("exported_program", "{}", exported, "\"rank\": 0");
    Trace t = read_trace_text(log, "versions.log");
    QVERIFY(t.diagnostics.empty());
    const CompileEntry* e = t.find("0/0");
    QVERIFY(e);
    auto graph = [&](const CompileEntry& entry, const char* name) {
      const Artifact* a = entry.artifact(name);
      if (!a) qFatal("no artifact %s", name);
      return a->graph;
    };
    QVERIFY(graph(*e, "dynamo_output_graph"));
    QVERIFY(graph(*e, "after_post_grad_graph"));
    QVERIFY(graph(*e, "before_recompile_post_grad"));
    QVERIFY(!graph(*e, "fx_graph_cache_miss"));
    QVERIFY(!graph(*e, "aot_forward_graph_fw_metadata"));
    QVERIFY(!graph(*e, "inductor_output_code"));
    auto post = t.graph(*e, "after_post_grad_graph");
    QVERIFY2(post.ok(), post.status().to_string().c_str());
    QCOMPARE((*post)->nodes.size(), size_t(3));
    // The exported program has no compile id.
    const CompileEntry* none = nullptr;
    for (const CompileEntry& x : t.entries)
      if (x.artifact("exported_program")) none = &x;
    QVERIFY(none);
    QVERIFY(graph(*none, "exported_program"));
    auto ep = t.graph(*none, "exported_program");
    QVERIFY2(ep.ok(), ep.status().to_string().c_str());
    // Roles line the names up across versions.
    QCOMPARE(stage_role("after_post_grad_graph"), StageRole::PostGrad);
    QCOMPARE(stage_role("inductor_post_grad_graph"), StageRole::PostGrad);
    QCOMPARE(stage_role("before_recompile_post_grad"), StageRole::PostGrad);
    QCOMPARE(stage_role("before_pre_grad_graph"), StageRole::PreGrad);
    QCOMPARE(stage_role("aot_joint_graph"), StageRole::Joint);
    QCOMPARE(stage_role("exported_program"), StageRole::Export);
    QCOMPARE(stage_role("inductor_output_code"), StageRole::OutputCode);
    QCOMPARE(std::string(stage_role_name(StageRole::PostGrad)), std::string("post-grad"));
  }

  // torch.export's shape reasoning: guards with their user stack and the
  // sources of their symbols, the one export had to evaluate, the expressions it built.
  void export_guards_and_expressions() {
    const std::string user_stack = "[{\"line\": 9, \"name\": \"forward\", \"filename\": 0, \"loc\": \"assert x.shape[0] == 3\"}]";
    std::string log = rec("{\"str\": [\"/home/u/model.py\", 0]}") +
                      rec("{\"expression_created\": {\"method\": \"add\", \"result\": \"s0 + 1\", \"arguments\": [\"s0\", \"1\"], "
                          "\"user_stack\": " + user_stack + "}}") +
                      rec("{\"guard_added\": {\"expr\": \"Eq(s0, 3)\", \"prefix\": \"eval\", \"user_stack\": " + user_stack +
                          ", \"frame_locals\": {\"loc\": \"x\", \"symbols\": {\"s0\": \"L['x'].size()[0]\"}}, "
                          "\"symbol_to_sources\": {\"s0\": \"L['x'].size()[0]\"}}}");
    Trace t = read_trace_text(log, "export.log");
    QVERIFY(t.diagnostics.empty());
    QCOMPARE(t.entries.size(), size_t(1));
    const std::vector<ShapeEvent>& ev = t.entries[0].shape_events;
    QCOMPARE(ev.size(), size_t(2));
    QCOMPARE(ev[0].kind, std::string("expression_created"));
    QCOMPARE(ev[0].method, std::string("add"));
    QCOMPARE(ev[0].value, std::string("s0 + 1"));
    QCOMPARE(ev[0].arguments, (std::vector<std::string>{"s0", "1"}));
    QCOMPARE(ev[1].prefix, std::string("eval"));
    QCOMPARE(ev[1].expr, std::string("Eq(s0, 3)"));
    QCOMPARE(ev[1].symbol_sources.size(), size_t(1));  // the same pair from both places, once
    QCOMPARE(ev[1].symbol_sources[0].second, std::string("L['x'].size()[0]"));
    QCOMPARE(ev[1].user_stack.size(), size_t(1));
    QCOMPARE(ev[1].user_stack[0].file, std::string("/home/u/model.py"));
    QCOMPARE(ev[1].user_line, 9);
    const nlohmann::json doc = summary_json(t);
    const nlohmann::json& guard = doc["compile_ids"][0]["shape_events"][1];
    QCOMPARE(guard["symbol_to_sources"]["s0"].get<std::string>(), std::string("L['x'].size()[0]"));
    QCOMPARE(guard["user_stack"][0]["code"].get<std::string>(), std::string("assert x.shape[0] == 3"));
  }

  void fx_graph_sniffing() {
    QVERIFY(looks_like_fx_graph("class GraphModule(torch.nn.Module):\n    def forward(self):\n"));
    QVERIFY(looks_like_fx_graph("\tclass <lambda>(torch.nn.Module):\n"));
    QVERIFY(looks_like_fx_graph("import torch\n# comment\n\nclass Repro(torch.nn.Module):\n    def forward(self, x):\n"));
    QVERIFY(looks_like_fx_graph("ExportedProgram:\n    class GraphModule(torch.nn.Module):\n"));
    QVERIFY(!looks_like_fx_graph("{\"key\": \"class X(torch.nn.Module):\"}"));
    QVERIFY(!looks_like_fx_graph("# AOT ID: ['0_inference']\nclass Runner:\n"));
    QVERIFY(!looks_like_fx_graph("TREE_GUARD_MANAGER:\n+- RootGuardManager\n"));
    QVERIFY(!looks_like_fx_graph(""));
  }

  // Compile ids that start again: recompile_reasons comes before its dynamo_start.
  void recompiles_and_resets_make_new_entries() {
    std::string ids1 = "\"frame_id\": 0, \"frame_compile_id\": 1, \"attempt\": 0";
    std::string start0 = rec("{\"dynamo_start\": {\"stack\": []}, " + kIds + "}");
    std::string log = rec_payload("chromium_event", "{}", "{\"name\": \"dynamo\", \"ph\": \"B\", \"ts\": 1}") + start0 +
                      rec("{\"compilation_metrics\": {\"co_name\": \"a\"}, " + kIds + "}") +
                      rec_payload("artifact", "{\"name\": \"recompile_reasons\", \"encoding\": \"json\"}",
                                  "[\n\"0/0: x changed\"\n]", ids1) +
                      rec("{\"dynamo_start\": {\"stack\": []}, " + ids1 + "}") +
                      // torch._dynamo.reset(): the ids start over.
                      rec_payload("chromium_event", "{}", "{\"name\": \"dynamo\", \"ph\": \"B\", \"ts\": 2}") + start0 +
                      rec("{\"compilation_metrics\": {\"co_name\": \"b\"}, " + kIds + "}") +
                      rec_payload("chromium_event", "{}", "{\"name\": \"dynamo\", \"ph\": \"E\", \"ts\": 3}");
    Trace t = read_trace_text(log);
    QVERIFY(t.diagnostics.empty());
    QCOMPARE(t.entries.size(), size_t(3));
    QCOMPARE(QString::fromStdString(t.entries[0].label), QString("0/0"));
    QCOMPARE(QString::fromStdString(t.entries[1].label), QString("0/1"));
    QCOMPARE(QString::fromStdString(t.entries[2].label), QString("0/0#2"));
    QCOMPARE(t.entries[1].recompile_reasons, std::vector<std::string>{"0/0: x changed"});
    QCOMPARE(t.entries[0].metrics->co_name, std::string("a"));
    QCOMPARE(t.entries[2].metrics->co_name, std::string("b"));
    // Each chromium event lands with the compile it belongs to.
    QCOMPARE(t.chromium_events(t.entries[0]).size(), size_t(1));
    QCOMPARE(t.chromium_events(t.entries[0])[0].ts_us, 1.0);
    auto ev2 = t.chromium_events(t.entries[2]);
    QCOMPARE(ev2.size(), size_t(2));
    QCOMPARE(ev2[0].ts_us, 2.0);
    QCOMPARE(ev2[1].ts_us, 3.0);
  }

  // A payload that does not parse: the error names the log file and its line.
  void graph_errors_point_into_the_log() {
    std::string bad_graph = "class GraphModule(torch.nn.Module):\n    def forward(self, x):\n        y = torch.sin(x\n        return (y,)\n";
    std::string log = good_log() + rec_payload("aot_forward_graph", "{}", bad_graph);
    Trace t = read_trace_text(log, "bad_graph.log");
    QVERIFY(t.diagnostics.empty());  // the index does not parse payloads
    auto g = t.graph(*t.find("0/0"), "aot_forward_graph");
    QVERIFY(!g.ok());
    int first = line_count(good_log()) + 2;
    QCOMPARE(QString::fromStdString(g.status().where().file), QString("bad_graph.log"));
    QVERIFY2(g.status().where().line >= first && g.status().where().line < first + 4,
             qPrintable(QString::fromStdString(g.status().to_string())));
    // The failure is cached, and the summary falls back to counting lines.
    QVERIFY(!t.graph(*t.find("0/0"), "aot_forward_graph").ok());
    for (const StageSummary& s : stage_summaries(t, *t.find("0/0")))
      if (s.name == "aot_forward_graph") QVERIFY(!s.error.empty());
  }

  void missing_input_is_an_error_naming_it() {
    auto t = open_trace("/nonexistent/trace.log");
    QVERIFY(!t.ok());
    QCOMPARE(QString::fromStdString(t.status().to_string()), QString("/nonexistent/trace.log: no such file or folder"));
    QTemporaryDir tmp;
    std::string text_file = tmp.path().toStdString() + "/notes.txt";
    std::ofstream(text_file) << "just some text\nnothing to see\n";
    auto u = open_trace(text_file);
    QVERIFY(!u.ok());
    QVERIFY(u.status().to_string().find(text_file + ":1: not a TORCH_TRACE log: not a TORCH_TRACE record") == 0);
    auto empty_dir = open_trace(tmp.path().toStdString() + "/");
    QVERIFY(!empty_dir.ok());
    QVERIFY(empty_dir.status().message().find("cannot tell what this folder is") == 0);
    // An empty log is a log with nothing in it.
    std::ofstream(tmp.path().toStdString() + "/empty.log");
    auto e = open_trace(tmp.path().toStdString() + "/empty.log");
    QVERIFY(e.ok());
    QVERIFY(e->entries.empty() && e->diagnostics.empty());
  }

  void progress_and_cancel() {
    std::string log;
    while (log.size() < (9u << 20)) log += good_log();
    QTemporaryDir tmp;
    std::string path = tmp.path().toStdString() + "/big.log";
    std::ofstream(path, std::ios::binary) << log;
    std::vector<double> seen;
    ReadOptions opt;
    opt.progress = [&](double f) { seen.push_back(f); };
    auto t = read_trace_log(path, opt);
    QVERIFY(t.ok());
    QVERIFY(seen.size() >= 3);
    QVERIFY(std::is_sorted(seen.begin(), seen.end()));
    QCOMPARE(seen.back(), 1.0);
    std::atomic<bool> cancel{true};
    opt.cancel = &cancel;
    auto c = read_trace_log(path, opt);
    QVERIFY(!c.ok());
    QVERIFY(c.status().message() == "reading cancelled");
  }
};

QTEST_APPLESS_MAIN(TestTrace)
#include "test_trace.moc"
