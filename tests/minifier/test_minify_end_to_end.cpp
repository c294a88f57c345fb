// The issue's acceptance cases: the reference launcher graphs, with Kiln's CPU
// code generator miscompiling relu on purpose (KILN_INJECT_BUG), minify to
// the one relu node under each check, each candidate in a child process.
#include <QtTest/QtTest>

#include "minifier/minify.h"
#include "minify_test_util.h"

using namespace kiln;
using namespace kiln::minify;

class TestMinifyEndToEnd : public QObject {
  Q_OBJECT

  void minifies_to_relu(const std::string& file, CheckKind check, const std::string& bug) {
    Candidate input = test::launcher_candidate(test::reference_dir() + "/minifier/" + file);
    MinifyOptions o;
    o.predicate.kind = check;
    o.predicate.inject_bug = bug;
    o.jobs = 2;
    o.limits.timeout_s = 60;
    QElapsedTimer timer;
    timer.start();
    Expected<MinifyResult> r = minify::minify(input, o);
    QVERIFY2(r.ok(), r.status().message().c_str());
    qInfo("%s %s: %zu -> %zu ops, %d oracle calls, %d cache hits, %d reference runs, %lld ms", file.c_str(), bug.c_str(),
          r->initial_nodes, op_count(r->result.graph), r->stats.oracle_calls, r->stats.cache_hits,
          r->stats.reference_runs, (long long)timer.elapsed());
    for (const Step& s : r->steps)
      qInfo("  step %d [%s] %s: %zu -> %zu", s.index, s.strategy.c_str(), s.description.c_str(), s.nodes_before, s.nodes_after);
    QCOMPARE(r->initial_nodes, size_t(27));
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::relu.default"});
    QCOMPARE(r->result.inputs.size(), size_t(1));
    QVERIFY(r->original.failed());
  }

 private slots:
  void held_out_graph_each_bug() {
    // Not the reference graph: relu between a view and a softmax, fed by a
    // matmul; sizes spelled out by view (softmax alone would hide relu's +1:
    // it is shift-invariant, hence the product). Each bug must end at relu.
    const char* text = R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[6, 16]", w: "f32[16, 12]", b: "f32[12]"):
        mm: "f32[6, 12]" = torch.ops.aten.mm.default(x, w)
        add: "f32[6, 12]" = torch.ops.aten.add.Tensor(mm, b)
        view: "f32[6, 3, 4]" = torch.ops.aten.view.default(add, [6, 3, 4])
        tanh: "f32[6, 3, 4]" = torch.ops.aten.tanh.default(view)
        mul: "f32[6, 3, 4]" = torch.ops.aten.mul.Tensor(tanh, 3.0)
        relu: "f32[6, 3, 4]" = torch.ops.aten.relu.default(mul)
        amax: "f32[6, 3, 1]" = torch.ops.aten.amax.default(relu, [-1], True)
        sub: "f32[6, 3, 4]" = torch.ops.aten.sub.Tensor(relu, amax)
        exp: "f32[6, 3, 4]" = torch.ops.aten.exp.default(sub)
        sum_1: "f32[6, 3, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div: "f32[6, 3, 4]" = torch.ops.aten.div.Tensor(exp, sum_1)
        mul_1: "f32[6, 3, 4]" = torch.ops.aten.mul.Tensor(div, relu)
        sum_2: "f32[6]" = torch.ops.aten.sum.dim_IntList(mul_1, [1, 2])
        return (sum_2, view)
)";
    for (auto [bug, o] : test::relu_bug_options()) {
      Expected<MinifyResult> r = minify::minify(test::candidate_of(text, 7), o);
      QVERIFY2(r.ok(), r.status().message().c_str());
      qInfo("held-out %s: %zu -> %zu ops, %d oracle calls", bug, r->initial_nodes, op_count(r->result.graph), r->stats.oracle_calls);
      QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::relu.default"});
    }
  }

  void accuracy_cuda_relu_accuracy() { minifies_to_relu("accuracy_cuda/minifier_launcher.py", CheckKind::Accuracy, "relu:accuracy"); }
  void accuracy_cuda_relu_compile_error() {
    minifies_to_relu("accuracy_cuda/minifier_launcher.py", CheckKind::CompileError, "relu:compile-error");
  }
  void accuracy_cuda_relu_crash() { minifies_to_relu("accuracy_cuda/minifier_launcher.py", CheckKind::Crash, "relu:crash"); }
  void accuracy_cpu_relu_accuracy() { minifies_to_relu("accuracy_cpu/minifier_launcher.py", CheckKind::Accuracy, "relu:accuracy"); }
  void accuracy_cpu_relu_compile_error() {
    minifies_to_relu("accuracy_cpu/minifier_launcher.py", CheckKind::CompileError, "relu:compile-error");
  }
  void accuracy_cpu_relu_crash() { minifies_to_relu("accuracy_cpu/minifier_launcher.py", CheckKind::Crash, "relu:crash"); }
};

QTEST_GUILESS_MAIN(TestMinifyEndToEnd)
#include "test_minify_end_to_end.moc"
