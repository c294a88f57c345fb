// reuse_row_values: a reduction stores an expensive per-element value into a
// later pointwise kernel's output, which loads it instead of recomputing. Each
// case checks the plan (reused or not, and why) and the compiled numbers
// against the ATen interpreter.
#include <random>

#include "compiler/codegen/cpu/loop_plan.h"
#include "compiler/codegen/cpu/reuse_row_values.h"
#include "compiler/loopir/lower.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/sched/schedule.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;

namespace {

using test::random_f32;

// Every reuse note of every group of `g`'s schedule.
std::vector<std::string> reuse_notes(const Graph& g) {
  loopir::Program p = loopir::lower_to_loops(g);
  sched::ScheduledProgram s = sched::schedule(p);
  std::vector<std::string> notes;
  for (const sched::FusedGroup& group : s.groups) {
    codegen::cpu::GroupLoops plan = codegen::cpu::plan_group(s.program, group);
    for (std::string& n : codegen::cpu::reuse_row_values(s.program, plan)) notes.push_back(std::move(n));
  }
  return notes;
}

std::string compiled_vs_aten(const Graph& g, const std::vector<Tensor>& inputs, double tol = 1e-5) {
  runtime::CompileOptions o;
  o.use_cache = false;
  o.inject_bug = "none";
  auto c = runtime::CompiledGraph::compile(g, o);
  if (!c) return c.status().message();
  auto got = (*c)->run(inputs);
  if (!got) return got.status().message();
  return test::compare_outputs(*got, test::aten_outputs(g, inputs), tol);
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

}  // namespace

class TestCodegenReuse : public QObject {
  Q_OBJECT
 private slots:
  void softmax_computes_exp_once() {
    std::mt19937 rng(1);
    for (Shape shape : {Shape{64, 2048}, Shape{3, 17}, Shape{7, 5, 33}}) {
      Tensor x = random_f32(shape, rng, -8.f, 8.f);
      Graph g = test::softmax_graph(x);
      std::vector<std::string> notes = reuse_notes(g);
      QVERIFY2(notes.size() == 1, (shape_str(shape) + ": " + joined(notes)).c_str());
      QVERIFY2(notes[0].find("reuses exp computed by") != std::string::npos, notes[0].c_str());
      std::string d = compiled_vs_aten(g, {x});
      QVERIFY2(d.empty(), (shape_str(shape) + ": " + d).c_str());
    }
  }

  // Reduced over two dimensions: the pointwise kernel's two inner loops map
  // onto the reduction's two loops.
  void reduction_over_two_dims() {
    std::mt19937 rng(2);
    Tensor x = random_f32({6, 9, 11}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    Var s = e.call1("aten::sin.default", {a});
    Var total = e.call1("aten::sum.dim_IntList", {s, std::vector<int64_t>{1, 2}, true});
    e.output({e.call1("aten::mul.Tensor", {e.call1("aten::mul.Tensor", {s, total}), a})});
    QCOMPARE(reuse_notes(g).size(), size_t(1));
    std::string d = compiled_vs_aten(g, {x});
    QVERIFY2(d.empty(), d.c_str());
  }

  // Only expensive values are worth a store and a reload, and only into an
  // output of the value's own dtype.
  void not_reused() {
    std::mt19937 rng(3);
    Tensor x = random_f32({16, 64}, rng);
    {
      Graph g;  // x - mean(x): a subtraction is cheaper than a reload
      GraphEmitter e(g);
      Var a = e.placeholder("x", x);
      Var m = e.call1("aten::sum.dim_IntList", {e.call1("aten::mul.Scalar", {a, 2.0}), std::vector<int64_t>{-1}, true});
      e.output({e.call1("aten::sub.Tensor", {e.call1("aten::mul.Scalar", {a, 2.0}), m})});
      QVERIFY2(reuse_notes(g).empty(), joined(reuse_notes(g)).c_str());
      std::string d = compiled_vs_aten(g, {x});
      QVERIFY2(d.empty(), d.c_str());
    }
    {
      Graph g;  // exp(x) * sum(exp(x)) stored as float64: the float exp cannot live there
      GraphEmitter e(g);
      Var a = e.placeholder("x", x);
      Var ex = e.call1("aten::exp.default", {a});
      Var s = e.call1("aten::sum.dim_IntList", {ex, std::vector<int64_t>{-1}, true});
      Var prod = e.call1("aten::mul.Tensor", {ex, s});
      e.output({e.call1("aten::_to_copy.default", {prod}, {{"dtype", DType::Float64}})});
      QVERIFY2(reuse_notes(g).empty(), joined(reuse_notes(g)).c_str());
      std::string d = compiled_vs_aten(g, {x});
      QVERIFY2(d.empty(), d.c_str());
    }
  }

  // The reduction writes the output before the pointwise kernel does: a second
  // output that reads the first keeps seeing the final values.
  void later_kernels_see_final_values() {
    std::mt19937 rng(4);
    Tensor x = random_f32({32, 100}, rng, -4.f, 4.f);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    Var th = e.call1("aten::tanh.default", {a});
    Var s = e.call1("aten::sum.dim_IntList", {th, std::vector<int64_t>{-1}, true});
    Var scaled = e.call1("aten::div.Tensor", {th, s});
    Var again = e.call1("aten::sum.dim_IntList", {e.call1("aten::mul.Tensor", {scaled, scaled}), std::vector<int64_t>{-1}, true});
    e.output({scaled, again});
    QCOMPARE(reuse_notes(g).size(), size_t(1));
    std::string d = compiled_vs_aten(g, {x}, 1e-4);
    QVERIFY2(d.empty(), d.c_str());
  }
};

QTEST_MAIN(TestCodegenReuse)
#include "test_codegen_reuse.moc"
