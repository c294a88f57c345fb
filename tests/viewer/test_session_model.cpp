// The workbench's data and item models without a window: a program compiled
// into a session (the bundled example: a graph break and a recompile), a
// reference trace, the session tree, stepping and provenance between stages,
// the structural diff, guards and the input signature check, and numerics.
// Every model runs under QAbstractItemModelTester.
#include <QAbstractItemModelTester>
#include <QtTest/QtTest>

#include <cmath>
#include <set>

#include "test_support.h"
#include "viewer/guard_models.h"
#include "viewer/numerics_model.h"
#include "session/session.h"
#include "viewer/session_model.h"
#include "session/stage_links.h"

using namespace kiln;
using namespace kiln::viewer;
using namespace kiln::session;

namespace {

std::string example() { return std::string(KILN_SOURCE_DIR) + "/resources/examples/workbench_demo.py"; }

std::shared_ptr<Session> load(const std::string& path) {
  auto s = load_session(path);
  if (!s) qFatal("cannot open %s: %s", path.c_str(), s.status().to_string().c_str());
  return *s;
}

// The tree as indented text, the way hotspot's model tests compare trees.
QString dump(const QAbstractItemModel& m, const QModelIndex& parent = {}, int depth = 0, int max_depth = 3) {
  QString out;
  for (int r = 0; r < m.rowCount(parent); ++r) {
    QModelIndex i = m.index(r, 0, parent);
    out += QString(depth * 2, ' ') + i.data().toString() + " | " + m.index(r, 1, parent).data().toString() + "\n";
    if (depth + 1 < max_depth) out += dump(m, i, depth + 1, max_depth);
  }
  return out;
}

}  // namespace

class TestSessionModel : public QObject {
  Q_OBJECT
 private:
  std::shared_ptr<Session> demo_;

 private slots:
  void initTestCase() { demo_ = load(example()); }

  void programSessionHasBreakAndRecompile() {
    const Session& s = *demo_;
    QCOMPARE(s.kind, Session::Kind::Program);
    QCOMPARE(s.frames(), (std::vector<std::string>{"0", "1"}));
    QCOMPARE(int(s.compiles.size()), 4);  // forward and its resume function, each compiled twice (batch 8, then 12)
    int breaks = 0, recompiles = 0;
    for (const SessionCompile& c : s.compiles) {
      breaks += !c.breaks.empty();
      recompiles += !c.recompile_reasons.empty();
      QVERIFY2(c.status != CompileStatus::Failed, c.status_note.c_str());
    }
    QCOMPARE(breaks, 2);
    QCOMPARE(recompiles, 2);
    const SessionCompile* first = s.find("0/0");
    QVERIFY(first);
    QCOMPARE(first->breaks.front().line, 15);  // print("hidden", h.shape)
    QCOMPARE(first->status, CompileStatus::GraphBreak);
    const SessionCompile* again = s.find("1/1");
    QVERIFY(again);
    QCOMPARE(again->status, CompileStatus::Recompile);
    QVERIFY(QString::fromStdString(again->recompile_reasons.front()).contains("size mismatch at index 0. expected 8, actual 12"));
    // Training stages, the passes of both halves, and generated code.
    for (const char* st : {"dynamo_output_graph", "to_aten", "aot_joint_graph", "aot_forward_graph", "aot_backward_graph",
                           "forward decompose #2", "backward decompose #2", "forward llvm_ir", "forward assembly"})
      QVERIFY2(first->stage(st), st);
    QCOMPARE(first->stage("forward assembly")->kind, StageKind::Code);
    QCOMPARE(first->stage("forward assembly")->language, std::string("asm"));
    QCOMPARE(first->stage("aot_joint_graph")->nodes, 13);
    // The GPU code of the same graph, emitted without CUDA.
    const SessionStage* cuda = first->stage("forward cuda_source");
    QVERIFY(cuda);
    QCOMPARE(cuda->language, std::string("cuda"));
    QVERIFY(cuda->text.find("__global__") != std::string::npos);
    // The last graph stage of each half knows its fused groups: every op in one,
    // and fewer groups than ops (something fused).
    const SessionStage* last = nullptr;
    for (const SessionStage& st : first->stages)
      if (st.group == "forward" && st.kind == StageKind::Graph && !st.fusion_groups.empty()) last = &st;
    QVERIFY(last && last->graph);
    QCOMPARE(last->fusion_groups.size(), last->graph->size());
    std::set<int> groups;
    int ops = 0;
    for (NodeId i = 0; i < NodeId(last->graph->size()); ++i)
      if ((*last->graph)[i].op == OpKind::CallFunction) {
        ++ops;
        QVERIFY2(last->fusion_groups[size_t(i)] >= 0, (*last->graph)[i].name.c_str());
        groups.insert(last->fusion_groups[size_t(i)]);
      }
    QVERIFY2(!groups.empty() && int(groups.size()) < ops, (std::to_string(groups.size()) + " groups, " + std::to_string(ops) + " ops").c_str());
  }

  void sessionTreeModel() {
    SessionModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.addSession(demo_);
    QCOMPARE(m.rowCount(), 1);
    QModelIndex entry = m.index(0, 0);
    QCOMPARE(m.rowCount(entry), 2);  // frames 0 and 1
    QModelIndex frame0 = m.index(0, 0, entry);
    QCOMPARE(frame0.data().toString(), QString("frame 0"));
    QCOMPARE(m.rowCount(frame0), 2);
    QModelIndex c0 = m.index(0, 0, frame0);
    QVERIFY(c0.data().toString().startsWith("[0/0"));
    QCOMPARE(m.index(0, SessionModel::Detail, frame0).data().toString(), QString("graph break"));
    QCOMPARE(c0.data(Qt::DecorationRole).value<QColor>(), SessionModel::statusColor(CompileStatus::GraphBreak));
    QCOMPARE(m.index(1, SessionModel::Detail, m.index(1, 0, entry)).data().toString(), QString("recompile"));
    QCOMPARE(m.rowCount(c0), int(demo_->compiles[0].stages.size()));
    SessionModel::Ref r = m.ref(m.index(3, 0, c0));
    QCOMPARE(r.level, SessionModel::Level::Stage);
    QCOMPARE(r.stage, 3);
    QCOMPARE(m.stageIndex(0, 0, 3), m.index(3, 0, c0));
    // Reopening the same path replaces the entry; another path adds one.
    m.addSession(load(example()));
    QCOMPARE(m.rowCount(), 1);
    auto trace = load(reference_dir_trace("s03_graph_breaks"));
    m.addSession(trace);
    QCOMPARE(m.rowCount(), 2);
    QString text = dump(m, m.index(1, 0), 0, 2);
    QVERIFY2(text.contains("[2/0] f_data_dep | graph break"), qPrintable(text));
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  void traceSession() {
    auto s = load(reference_dir_trace("s03_graph_breaks"));
    QCOMPARE(s->kind, Session::Kind::Trace);
    const SessionCompile* c = s->find("2/0");
    QVERIFY(c);
    QCOMPARE(c->function, std::string("f_data_dep"));
    QCOMPARE(c->status, CompileStatus::GraphBreak);
    QCOMPARE(c->breaks.front().line, 8);
    QVERIFY(!c->guards.empty());
    // Tensor guards read from dynamo_cpp_guards_str feed the signature check (sizes measured by PyTorch 2.11: x is 8x16).
    std::vector<SignatureInput> sig = signature_of(*c);
    QCOMPARE(int(sig.size()), 1);
    QCOMPARE(sig[0].source, std::string("L['x']"));
    QCOMPARE(sig[0].dtype, std::string("float32"));
    QCOMPARE(sig[0].sizes, (std::vector<int64_t>{8, 16}));
    sig[0].sizes = {4, 16};
    std::string why;
    QVERIFY(first_failing_guard(c->guards, sig, &why) >= 0);
    QCOMPARE(QString::fromStdString(why), QString("tensor 'x' size mismatch at index 0. expected 8, actual 4"));
    bool guard_line = false;
    for (const SessionGuard& g : c->guards) guard_line |= g.kind == "TENSOR_MATCH" && g.line == 7;
    QVERIFY(guard_line);  // y = x * 3 (line 7) read x
    const SessionStage* st = c->stage("aot_inference_graph");
    QVERIFY(st);
    auto g = stage_graph(*s, *c, *st);
    QVERIFY2(g.ok(), g.ok() ? "" : g.status().message().c_str());
    QCOMPARE(int((*g)->size()), 5);
    // The dump was made on another machine: the source view has the lines it quotes.
    QVERIFY(!s->known_lines.empty());
    bool has_code = false;
    for (const SessionStage& x : c->stages) has_code |= x.kind == StageKind::Code && x.language == "python";
    QVERIFY(has_code);  // inductor_output_code
  }

  void stepping() {
    const SessionCompile& c = *demo_->find("0/0");
    int fw = c.stage_index("aot_forward_graph");
    QCOMPARE(step_stage(c, fw, 1, false), fw + 1);
    // "forward functionalize #1" left the graph unchanged; "changed only" skips it.
    int next_changed = step_stage(c, fw, 1, true);
    QVERIFY(next_changed > fw);
    for (int i = fw + 1; i <= next_changed; ++i) QVERIFY(i == next_changed ? c.stages[size_t(i)].changed : true);
    QVERIFY(c.stages[size_t(next_changed)].changed);
    QCOMPARE(step_stage(c, 0, -1, false), 0);
    QCOMPARE(step_stage(c, int(c.stages.size()) - 1, 5, false), int(c.stages.size()) - 1);
  }

  void provenanceAndDiff() {
    const SessionCompile& c = *demo_->find("0/0");
    auto lookup = [&](int i) { return c.stages[size_t(i)].graph; };
    int fw = c.stage_index("aot_forward_graph");
    int decomp = c.stage_index("forward decompose #2");
    int dyn = c.stage_index("dynamo_output_graph");
    int bw = c.stage_index("aot_backward_graph");
    QVERIFY(fw >= 0 && decomp >= 0 && dyn >= 0 && bw >= 0);
    const Graph& fg = *c.stages[size_t(fw)].graph;
    NodeId linear = kNoNode;
    for (NodeId i = 0; i < NodeId(fg.size()); ++i)
      if (fg[i].target.find("linear") != std::string::npos) linear = i;
    QVERIFY(linear != kNoNode);
    // Down: the decomposition of aten.linear (a transpose, a matmul, an add...).
    std::vector<NodeId> down = linked_nodes(c, fw, decomp, {fg[linear].name}, lookup);
    QVERIFY2(down.size() >= 2, qPrintable(QString::number(down.size())));
    // Up: the torch-level node it came from in the captured graph.
    std::vector<NodeId> up = linked_nodes(c, fw, dyn, {fg[linear].name}, lookup);
    QCOMPARE(int(up.size()), 1);
    QVERIFY(QString::fromStdString((*c.stages[size_t(dyn)].graph)[up[0]].target).contains("linear"));
    // And across to the backward graph through the joint graph.
    QCOMPARE(provenance_path(c, fw, bw).size(), size_t(3));
    // The decompose pass: aten.linear is gone, new nodes came.
    StageDiff d = diff_graphs(*c.stages[size_t(diff_base(c, decomp))].graph, *c.stages[size_t(decomp)].graph);
    QVERIFY(!d.added.empty());
    QVERIFY(std::find(d.removed_names.begin(), d.removed_names.end(), fg[linear].name) != d.removed_names.end());
    // An unchanged stage differs from nothing.
    int func = c.stage_index("forward functionalize #1");
    QVERIFY(!c.stages[size_t(func)].changed);
    QVERIFY(diff_graphs(*c.stages[size_t(diff_base(c, func))].graph, *c.stages[size_t(func)].graph).empty());
  }

  void guardsAndSignature() {
    const SessionCompile& c = *demo_->find("0/0");
    GuardModel gm;
    QAbstractItemModelTester t1(&gm, QAbstractItemModelTester::FailureReportingMode::QtTest);
    gm.setGuards(c.guards);
    QCOMPARE(gm.rowCount(), int(c.guards.size()));
    gm.setFailedRow(1);
    QVERIFY(gm.index(1, 0).data(Qt::BackgroundRole).isValid());

    RecompileModel rm;
    QAbstractItemModelTester t2(&rm, QAbstractItemModelTester::FailureReportingMode::QtTest);
    rm.setSession(demo_);
    QCOMPARE(rm.rowCount(), 4);
    QVERIFY(rm.index(1, RecompileModel::Reason).data().toString().contains("size mismatch"));

    SignatureModel sm;
    QAbstractItemModelTester t3(&sm, QAbstractItemModelTester::FailureReportingMode::QtTest);
    sm.setInputs(signature_of(c));
    QCOMPARE(sm.rowCount(), 1);  // L['x']; the parameters are not the caller's
    QCOMPARE(sm.index(0, SignatureModel::Shape).data().toString(), QString("8, 16"));
    std::string why;
    QCOMPARE(first_failing_guard(c.guards, sm.inputs(), &why), -1);
    QVERIFY(sm.setData(sm.index(0, SignatureModel::Shape), "12, 16"));
    QVERIFY(first_failing_guard(c.guards, sm.inputs(), &why) >= 0);
    QCOMPARE(QString::fromStdString(why), QString("tensor 'x' size mismatch at index 0. expected 8, actual 12"));
    // The recompiled entry takes batch 12.
    QCOMPARE(first_failing_guard(demo_->find("0/1")->guards, sm.inputs(), &why), -1);
    QVERIFY(sm.setData(sm.index(0, SignatureModel::DType), "float64"));
    QVERIFY(first_failing_guard(c.guards, sm.inputs(), &why) >= 0);
    QCOMPARE(QString::fromStdString(why), QString("tensor 'x' dtype mismatch. expected Float, actual Double"));
    QVERIFY(!sm.setData(sm.index(0, SignatureModel::Shape), "8, x"));
    QVERIFY(!sm.setData(sm.index(0, SignatureModel::DType), "float128"));
    QCOMPARE(parse_shape("[2, 3]"), (std::optional<std::vector<int64_t>>{{2, 3}}));
  }

  void numerics() {
    const SessionCompile& c = *demo_->find("0/0");
    const Graph& g = *c.stage("aot_forward_graph")->graph;
    auto r = measure_numerics(g, 1e-4);
    QVERIFY2(r.ok(), r.ok() ? "" : r.status().message().c_str());
    QVERIFY(!r->rows.empty());
    // Every rung ran and agrees with float64 to float32 rounding.
    for (const NodeNumerics& n : r->rows) {
      QVERIFY2(!std::isnan(n.rel[0]), n.name.c_str());
      QVERIFY2(n.rel[0] < 1e-5, n.name.c_str());
    }
    // The ladder the issue names, in order, each rung measured on some node.
    QCOMPARE(kRungs, 4);
    const char* ladder[] = {"eager", "aot_eager", "decomp_eager", "kiln"};
    for (int k = 0; k < kRungs; ++k) {
      QCOMPARE(QString(rung_name(k)), QString(ladder[k]));
      bool measured = false;
      for (const NodeNumerics& n : r->rows) measured |= !std::isnan(n.rel[k]);
      QVERIFY2(measured, qPrintable(QString("%1: %2").arg(ladder[k], r->notes.empty() ? "" : r->notes.front().c_str())));
    }
    QVERIFY2(r->notes.empty(), r->notes.empty() ? "" : r->notes.front().c_str());
    // aten::linear is a node of eager and aot_eager; decomposition replaces it (permute, mm, add).
    for (const NodeNumerics& n : r->rows)
      if (n.target == "aten::linear.default") {
        QVERIFY(!std::isnan(n.rel[kEagerRung]) && !std::isnan(n.rel[kAotEagerRung]));
        QVERIFY(std::isnan(n.rel[kDecompEagerRung]) && std::isnan(n.rel[kKilnRung]));
      }
    QCOMPARE(r->first_divergent, -1);
    // A tolerance of zero makes the first rounded node divergent.
    auto strict = measure_numerics(g, 0);
    QVERIFY(strict.ok());
    QVERIFY(strict->first_divergent >= 0);

    NumericsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setResult(*strict);
    QCOMPARE(m.rowCount(), int(strict->rows.size()));
    QCOMPARE(m.columnCount(), int(NumericsModel::FirstRung) + 2 * kRungs);  // node, op, elements, over, share, then abs and rel per rung
    QCOMPARE(m.headerData(NumericsModel::FirstRung + 2, Qt::Horizontal).toString(), QString("aot_eager abs"));
    QCOMPARE(m.headerData(NumericsModel::FirstRung + 7, Qt::Horizontal).toString(), QString("kiln rel"));
    QVERIFY(m.headerData(NumericsModel::FirstRung + 3, Qt::Horizontal, Qt::ToolTipRole).toString().contains("functionalized"));
    m.clear();
    QCOMPARE(m.rowCount(), 0);
  }

  // The ladder tells which layer is wrong: with relu miscompiled on purpose
  // (KILN_INJECT_BUG) only the kiln rung diverges, and first at relu.
  void numericsLadderFindsTheLayer() {
    const Graph& g = *demo_->find("0/0")->stage("aot_forward_graph")->graph;
    qputenv("KILN_INJECT_BUG", "relu:accuracy");
    auto r = measure_numerics(g, 1e-4);
    qunsetenv("KILN_INJECT_BUG");
    QVERIFY2(r.ok(), r.ok() ? "" : r.status().message().c_str());
    QVERIFY(r->first_divergent >= 0);
    const NodeNumerics& bad = r->rows[size_t(r->first_divergent)];
    QCOMPARE(bad.target, std::string("aten::relu.default"));
    QCOMPARE(r->first_divergent_rung, int(kKilnRung));
    for (int k : {kEagerRung, kAotEagerRung, kDecompEagerRung}) QVERIFY2(bad.rel[k] < 1e-5, rung_name(k));
    QVERIFY(bad.rel[kKilnRung] > 1e-4);
  }

  // A folder of rank files: each rank's compiles stay apart (labels and frames
  // carry the rank), and Kiln's pipeline runs on each rank's joint graph.
  void ranksStayApart() {
    QTemporaryDir dir;
    const std::string log = reference_dir_trace("s02_linear_relu") + "/dedicated_log_torch_trace_31md1peq.log";
    for (const char* rank : {"0", "1"})
      QVERIFY(QFile::copy(QString::fromStdString(log), dir.filePath(QString("dedicated_log_torch_trace_rank_%1_x.log").arg(rank))));
    auto s = load_session(dir.path().toStdString());
    QVERIFY2(s.ok(), s.ok() ? "" : s.status().to_string().c_str());
    QCOMPARE((*s)->compiles.size(), size_t(2));
    QCOMPARE((*s)->compiles[0].id, std::string("r0:0/0"));
    QCOMPARE((*s)->compiles[1].id, std::string("r1:0/0"));
    QCOMPARE((*s)->frames(), (std::vector<std::string>{"r0:0", "r1:0"}));
    for (const SessionCompile& c : (*s)->compiles) {
      QVERIFY(c.stage("aot_joint_graph"));
      QVERIFY2(c.stage("kiln aot_forward_graph"), c.id.c_str());
    }
  }

  // The source view of a dump from another machine lists the user's lines the
  // graphs quote above their nodes ("# File: ...:7 in forward, code: ...").
  void dumpQuotesItsSourceLines() {
    auto s = load_session(reference_dir_trace("s02_linear_relu"));
    QVERIFY(s.ok());
    QVERIFY((*s)->source_text.empty());  // /home/dev/models is not here
    bool forward_line = false;
    for (const SourceLine& l : (*s)->known_lines)
      forward_line |= l.line == 7 && l.code == "return torch.nn.functional.relu(self.lin(x))";
    QVERIFY(forward_line);
  }

  // A dump from a GPU run: devices become the CPU, `add.Tensor(x, 1)` runs,
  // and an op Kiln has no kernel for ends the measurement there, said in a note.
  void numericsOnAGpuDump() {
    auto t = load_session(reference_dir_trace("s05_resnet18_train"));
    QVERIFY(t.ok());
    const SessionCompile& c = (*t)->compiles[0];
    for (const char* name : {"aot_forward_graph", "aot_backward_graph"}) {
      auto g = stage_graph(**t, c, *c.stage(name));
      QVERIFY(g.ok());
      auto r = measure_numerics(**g, 1e-4);
      QVERIFY2(r.ok(), r.ok() ? "" : r.status().message().c_str());
      int calls = 0, eager = 0, kiln = 0;
      for (const Node& n : (*g)->nodes) calls += n.op == OpKind::CallFunction && n.meta.val.is_tensor();
      for (const NodeNumerics& n : r->rows) {
        eager += !std::isnan(n.rel[kEagerRung]);
        kiln += !std::isnan(n.rel[kKilnRung]);
        QCOMPARE(n.target, (**g)[n.node].target);  // as the graph says it
        // Each run gets its own inputs: the graph's copy_ into num_batches_tracked
        // once made `add` differ by 1 between the runs.
        if (!std::isnan(n.rel[kEagerRung])) QVERIFY2(n.rel[kEagerRung] < 1e-4, n.name.c_str());
      }
      for (const std::string& note : r->notes) qInfo("note: %s", note.substr(0, 300).c_str());
      qInfo("%s: %zu of %d tensor nodes measured (%d on kiln); %s", name, r->rows.size(), calls, kiln,
            r->notes.empty() ? "" : r->notes.front().c_str());
      QVERIFY2(eager >= 20 && kiln >= 20, name);
      // Either everything was measured or a note says where it stopped.
      QVERIFY(int(r->rows.size()) == calls || !r->notes.empty());
    }
  }

  // The partitioner is the one kiln-cli stages --partitioner picks (it was
  // always the default one in the workbench); an unknown name is an error.
  void partitionerIsAnOption() {
    QTemporaryDir dir;
    QFile f(dir.filePath("train.py"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import torch\n"
            "w = torch.randn(3, 5, requires_grad=True)\n"
            "@torch.compile\n"
            "def step(x):\n"
            "    return torch.exp(torch.relu(x @ w)).sum()\n"
            "step(torch.randn(4, 3)).backward()\n");
    f.close();
    LoadOptions o;
    o.codegen = false;
    for (const std::string name : {"default", "min-cut"}) {
      o.partitioner = name;
      auto s = load_program(f.fileName().toStdString(), o);
      QVERIFY2(s.ok(), s.ok() ? "" : s.status().message().c_str());
      QVERIFY(!(*s)->compiles.empty());
      const SessionStage* fw = (*s)->compiles.front().stage("aot_forward_graph");
      QVERIFY2(fw, "no forward graph");
      QVERIFY2(fw->summary.rfind(name + " partition, saves ", 0) == 0, fw->summary.c_str());
    }
    o.partitioner = "mincut";
    auto bad = load_program(f.fileName().toStdString(), o);
    QVERIFY(!bad.ok());
    QVERIFY2(bad.status().message().find("unknown partitioner 'mincut'") != std::string::npos, bad.status().message().c_str());
  }

  // The workbench runs programs under the same limits as kiln-cli: a time
  // limit (a loop once hung the loader) and no file access unless allowed.
  void programsRunUnderLimits() {
    QTemporaryDir dir;
    auto write = [&](const char* name, const QByteArray& text) {
      QFile f(dir.filePath(name));
      f.open(QIODevice::WriteOnly);
      f.write(text);
      return f.fileName().toStdString();
    };
    LoadOptions o;
    o.time_limit_s = 1;
    auto loop = load_program(write("loop.py", "import torch\nx = torch.ones(2)\nwhile True:\n    x = x + 1\n"), o);
    QVERIFY2(loop.ok(), loop.status().to_string().c_str());
    QVERIFY(!(*loop)->diagnostics.empty());
    QVERIFY2((*loop)->diagnostics.front().find("TimeoutError") != std::string::npos, (*loop)->diagnostics.front().c_str());
    const QByteArray saver = "import torch\nfrom safetensors.torch import save_file\nsave_file({'x': torch.ones(2)}, '" +
                             dir.filePath("w.safetensors").toUtf8() + "')\n";
    auto denied = load_program(write("save.py", saver), LoadOptions{});
    QVERIFY(denied.ok() && !(*denied)->diagnostics.empty());
    QVERIFY((*denied)->diagnostics.front().find("PermissionError") != std::string::npos);
    QVERIFY(!QFile::exists(dir.filePath("w.safetensors")));
    LoadOptions allowed;
    allowed.allow_write = {dir.path().toStdString()};
    auto written = load_program(write("save2.py", saver), allowed);
    QVERIFY(written.ok());
    QVERIFY(QFile::exists(dir.filePath("w.safetensors")));
  }

  void badInputIsAnError() {
    auto s = load_session("/nonexistent/trace.log");
    QVERIFY(!s.ok());
    QVERIFY(QString::fromStdString(s.status().message()).contains("/nonexistent/trace.log"));
    QTemporaryDir dir;
    QString bad = dir.filePath("bad.py");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("import torch\ndef f(x):\n    return x +\n");
    f.close();
    auto p = load_session(bad.toStdString());
    QVERIFY(!p.ok());
    QVERIFY2(QString::fromStdString(p.status().to_string()).contains("bad.py:3"), p.status().to_string().c_str());
  }

 private:
  static std::string reference_dir_trace(const char* name) { return test::reference_dir() + "/traces/" + name; }
};

QTEST_MAIN(TestSessionModel)
#include "test_session_model.moc"
