// Derivative formulas (compiler/aot/derivatives.h): every formula against
// float64 central differences, eagerly and as an ATen graph; the op corpus'
// PyTorch gradients; and the bookkeeping formulas rely on (broadcast
// reduction, dtype, argument order, non-differentiable outputs).
#include <QtTest>

#include <nlohmann/json.hpp>

#include "compiler/aot/derivative_samples.h"
#include "compiler/aot/derivatives.h"
#include "compiler/aot/grad_check.h"
#include "compiler/pipeline/emitter.h"
#include "core/corpus/corpus.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::aot;
using pipeline::EagerEmitter;
using pipeline::GraphEmitter;

class TestDerivatives : public QObject {
  Q_OBJECT
 private slots:
  void every_formula_matches_finite_differences() {
    std::vector<std::string> ops = differentiable_ops();
    QVERIFY2(ops.size() >= 300, qPrintable(QString("only %1 formulas").arg(ops.size())));
    QStringList failures;
    for (const std::string& op : ops) {
      CaseResult r = finite_difference_check(op);
      if (r.status != CaseStatus::Pass)
        failures << QString("%1 %2: %3").arg(QString::fromStdString(std::string(case_status_name(r.status))),
                                             QString::fromStdString(op), QString::fromStdString(r.reason));
    }
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
  }

  // A second draw of random inputs, so passing is not luck of one seed.
  void finite_differences_hold_for_another_seed() {
    QStringList failures;
    for (const std::string& op : differentiable_ops()) {
      CaseResult r = finite_difference_check(op, 7);
      if (r.status != CaseStatus::Pass) failures << QString::fromStdString(op + ": " + r.reason);
    }
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join("\n")));
  }

  void samples_and_formulas_cover_each_other() {
    std::vector<std::string> ops = differentiable_ops(), sampled = ops_with_samples();
    QCOMPARE(sampled, ops);
  }

  // The check must be able to fail: cos's formula (-sin) passed off as sin's.
  void a_wrong_formula_fails_the_check() {
    DerivativeDef wrong = *find_derivative("aten::cos.default");
    wrong.op = "aten::sin.default";
    CaseResult r = finite_difference_check(wrong, derivative_samples("aten::sin.default"));
    QCOMPARE(r.status, CaseStatus::Fail);
    QVERIFY2(r.reason.find("finite difference") != std::string::npos, r.reason.c_str());
    QCOMPARE(finite_difference_check("aten::no_such_op.default").status, CaseStatus::Fail);
  }

  void sample_notation_parses() {
    DerivativeSample s = parse_sample("f[2,3] {f[1] None} 'x' [1,2] i[4]<3 S[3]<9 alpha=2.0", 1);
    QCOMPARE(s.args.size(), size_t(6));
    QCOMPARE(s.kwargs.size(), size_t(1));
    QCOMPARE(s.kwargs[0].second.to_double(), 2.0);
    QCOMPARE(s.args[0].to_tensor().sizes(), (Shape{2, 3}));
    QVERIFY(s.args[1].to_list()[1].is_none());
    QCOMPARE(s.args[2].to_string(), std::string("x"));
    QCOMPARE(s.args[3].to_int_list(), (std::vector<int64_t>{1, 2}));
    for (double v : test::values(s.args[4].to_tensor())) QVERIFY(v >= 0 && v < 3);
    std::vector<double> sorted = test::values(s.args[5].to_tensor());
    QVERIFY(std::is_sorted(sorted.begin(), sorted.end()) && sorted[0] < sorted[1] && sorted[1] < sorted[2]);
  }

  void corpus_gradients_match_pytorch() {
    auto corpus = load_corpus(test::reference_dir() + "/opcorpus");
    QVERIFY2(corpus.ok(), corpus.ok() ? "" : corpus.status().message().c_str());
    int total = 0, passed = 0;
    QStringList failures;
    for (const CorpusCase& c : corpus->cases) {
      if (c.grad_outputs.empty()) continue;
      ++total;
      CaseResult r = grad_check_case(c);
      if (r.status == CaseStatus::Pass) ++passed;
      else failures << QString::fromStdString(c.id + " " + c.op + ": " + r.reason);
    }
    if (!failures.isEmpty()) qInfo("%s", qPrintable(failures.join("\n")));
    QVERIFY2(total >= 88, qPrintable(QString("only %1 differentiable cases").arg(total)));
    QVERIFY2(passed * 100 >= total * 95, qPrintable(QString("%1 of %2 passed").arg(passed).arg(total)));
  }

  void corpus_ops_all_have_formulas() {
    auto corpus = load_corpus(test::reference_dir() + "/opcorpus");
    QVERIFY(corpus.ok());
    for (const CorpusCase& c : corpus->cases)
      if (!c.grad_outputs.empty()) QVERIFY2(find_derivative(c.op), c.op.c_str());
  }

  void broadcast_and_dtype_come_back_to_the_inputs() {
    EagerEmitter e;
    Var a = e.input(test::arange_f32({3, 1}));
    Var b = e.input(Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {4}));
    GradCall call{"aten::mul.Tensor", {a, b}, {}, {}};
    call.outputs = e.call(call.op, call.args);
    QCOMPARE(e.dtype(call.outputs[0]), DType::Float64);
    Var g = e.input(Tensor::full({3, 4}, Scalar(1.0), DType::Float64));
    GradList gi = differentiate(e, call, {g});
    QCOMPARE(gi.size(), size_t(2));
    QCOMPARE(e.sizes(*gi[0]), (Shape{3, 1}));
    QCOMPARE(e.dtype(*gi[0]), DType::Float32);
    QCOMPARE(test::values(e.tensor(*gi[0])), (std::vector<double>{10, 10, 10}));  // sum of b per row
    QCOMPARE(e.sizes(*gi[1]), (Shape{4}));
    QCOMPARE(test::values(e.tensor(*gi[1])), (std::vector<double>{3, 3, 3, 3}));  // 0 + 1 + 2
  }

  void keyword_tensors_keep_schema_order() {
    EagerEmitter e;
    Var x = e.input(test::arange_f32({2})), y = e.input(test::arange_f32({2}, 5.f));
    GradCall call{"aten::sub.Tensor", {x}, {{"other", y}, {"alpha", 3.0}}, {}};
    QCOMPARE(tensor_inputs(call), (std::vector<Var>{x, y}));
    call.outputs = e.call(call.op, call.args, call.kwargs);
    GradList gi = differentiate(e, call, {e.input(Tensor::full({2}, Scalar(1.0), DType::Float32))});
    QCOMPARE(test::values(e.tensor(*gi[0])), (std::vector<double>{1, 1}));
    QCOMPARE(test::values(e.tensor(*gi[1])), (std::vector<double>{-3, -3}));
  }

  void index_outputs_and_index_inputs_take_no_gradient() {
    const DerivativeDef* max_dim = find_derivative("aten::max.dim");
    QVERIFY(max_dim);
    QVERIFY(output_is_differentiable(*max_dim, 0, DType::Float32));
    QVERIFY(!output_is_differentiable(*max_dim, 1, DType::Int64));
    const DerivativeDef* nll = find_derivative("aten::nll_loss_forward.default");
    QVERIFY(nll && !output_is_differentiable(*nll, 1, DType::Float32));  // total_weight

    EagerEmitter e;
    Var w = e.input(test::arange_f32({4, 2})), idx = e.input(Tensor::from_vector(std::vector<int64_t>{3, 0, 3}, {3}));
    GradCall call{"aten::embedding.default", {w, idx}, {}, {}};
    call.outputs = e.call(call.op, call.args);
    GradList gi = differentiate(e, call, {e.input(Tensor::full({3, 2}, Scalar(1.0f), DType::Float32))});
    QCOMPARE(gi.size(), size_t(2));
    QVERIFY(!gi[1]);
    QCOMPARE(test::values(e.tensor(*gi[0])), (std::vector<double>{1, 1, 0, 0, 0, 0, 2, 2}));
  }

  void no_gradient_in_gives_none_out() {
    EagerEmitter e;
    Var x = e.input(test::arange_f32({2, 3}));
    GradCall call{"aten::sort.default", {x, int64_t(1)}, {}, {}};
    call.outputs = e.call(call.op, call.args);
    GradList gi = differentiate(e, call, {std::nullopt, std::nullopt});
    QCOMPARE(gi.size(), size_t(1));
    QVERIFY(!gi[0]);
    QVERIFY(!find_derivative("aten::eq.Tensor"));
    QVERIFY(find_derivative("aten::sin"));  // the overload-less spelling means .default
  }

  // In a joint graph the backward is made of the kernels PyTorch's AOT graphs show.
  void graph_formulas_use_backward_kernels() {
    Graph g;
    GraphEmitter ge(g);
    Var x = ge.placeholder("x", Tensor::meta({2, 3, 8, 8}, DType::Float32));
    Var w = ge.placeholder("w", Tensor::meta({4, 3, 3, 3}, DType::Float32));
    GradCall conv{"aten::convolution.default",
                  {x, w, EArg::none(), std::vector<int64_t>{1, 1}, std::vector<int64_t>{1, 1},
                   std::vector<int64_t>{1, 1}, false, std::vector<int64_t>{0, 0}, int64_t(1)},
                  {}, {}};
    conv.outputs = ge.call(conv.op, conv.args);
    GradCall relu{"aten::relu.default", {conv.outputs[0]}, {}, {}};
    relu.outputs = ge.call(relu.op, relu.args);
    Var tangent = ge.placeholder("tangent", Tensor::meta({2, 4, 8, 8}, DType::Float32));
    GradList g_relu = differentiate(ge, relu, {tangent});
    GradList g_conv = differentiate(ge, conv, {g_relu[0]});
    QCOMPARE(g_conv.size(), size_t(2));
    QCOMPARE(ge.sizes(*g_conv[1]), (Shape{4, 3, 3, 3}));
    ge.output({*g_conv[0], *g_conv[1]});
    QStringList targets;
    for (const Node& n : g.nodes)
      if (n.op == OpKind::CallFunction) targets << QString::fromStdString(n.target);
    QVERIFY2(targets.contains("aten::threshold_backward.default"), qPrintable(targets.join(",")));
    QVERIFY2(targets.contains("aten::convolution_backward.default"), qPrintable(targets.join(",")));
  }

  void cli_reports_like_conformance() {
    test::CliRun run = test::run_cli({"grad-check", "--corpus", QString::fromStdString(test::reference_dir() + "/opcorpus"),
                                      "--json"});
    QVERIFY2(run.code == 0 || run.code == 1, run.err.constData());
    auto doc = nlohmann::json::parse(run.out.toStdString());
    int passed = doc["passed"], failed = doc["failed"];
    QVERIFY(doc["cases"].is_array());
    for (const auto& c : doc["cases"])
      for (const char* key : {"id", "op", "status", "max_abs", "max_rel", "reason"}) QVERIFY(c.contains(key));
    QVERIFY2(passed * 100 >= (passed + failed) * 95, run.out.constData());

    test::CliRun fd = test::run_cli({"grad-check", "--finite-diff", "--case", "aten::mul.Tensor"});
    QCOMPARE(fd.code, 0);
    QVERIFY(fd.out.contains("PASS fd:aten::mul.Tensor aten::mul.Tensor"));
    QVERIFY(fd.out.contains("1 passed, 0 failed, 0 skipped"));

    QCOMPARE(test::run_cli({"grad-check"}).code, 2);
    QCOMPARE(test::run_cli({"grad-check", "--corpus", "/nonexistent/corpus"}).code, 3);
  }
};

QTEST_GUILESS_MAIN(TestDerivatives)
#include "test_derivatives.moc"
