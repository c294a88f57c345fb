// The CPU code generator and runtime: graphs built with GraphEmitter are
// compiled through LLVM and run, and checked against the ATen interpreter
// (the eager kernels). Also the stage texts, the injected bugs and the
// per-node intermediates.
#include <cmath>
#include <cstring>
#include <random>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/compiled_graph.h"
#include "core/graph/parser.h"
#include "core/util/status.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using namespace kiln::pipeline;
using runtime::CompiledGraph;
using runtime::CompileOptions;

namespace {

using test::random_f32;

std::shared_ptr<CompiledGraph> compile_or_fail(const Graph& g, CompileOptions o = {}) {
  o.use_cache = false;
  if (o.inject_bug.empty()) o.inject_bug = "none";
  auto c = CompiledGraph::compile(g, o);
  if (!c) qFatal("compile failed: %s", c.status().message().c_str());
  return *c;
}

// Compiled outputs against the ATen interpreter's, within `tol` relative.
std::string check(const Graph& g, const std::vector<Tensor>& inputs, double tol = 1e-5, CompileOptions o = {}) {
  auto c = compile_or_fail(g, o);
  auto got = c->run(inputs);
  if (!got) return got.status().message();
  return test::compare_outputs(*got, test::aten_outputs(g, inputs), tol);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <class T>
std::string hex(T v) {
  char s[64];
  std::snprintf(s, sizeof s, "%a", double(v));
  return s;
}

// A divisor that is one value per row (softmax's sum) is inverted once per
// row; the quotient must still be the division's, bit for bit, for
// divisors of every magnitude and the special values.
template <class T>
std::string row_divisor_case() {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-60, 60), sign(0, 1);
  const T inf = std::numeric_limits<T>::infinity(), tiny = std::numeric_limits<T>::denorm_min();
  std::vector<T> divisors = {1,    3,         -7,      T(0.1), tiny,  T(1e-40), std::numeric_limits<T>::min(),
                             -tiny, std::numeric_limits<T>::max(), T(3e38), 0, T(-0.0), inf, -inf,
                             std::numeric_limits<T>::quiet_NaN()};
  while (divisors.size() < 64) divisors.push_back(T((sign(rng) ? -1 : 1) * std::ldexp(mantissa(rng), exponent(rng))));
  const int64_t rows = int64_t(divisors.size()), cols = 1000;
  std::vector<T> xs(size_t(rows * cols));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = T((sign(rng) ? -1 : 1) * std::ldexp(mantissa(rng), exponent(rng)));
  const T specials[] = {0, T(-0.0), inf, -inf, std::numeric_limits<T>::quiet_NaN(), tiny, std::numeric_limits<T>::max()};
  for (int64_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < std::size(specials); ++j) xs[size_t(r * cols) + j * 97] = specials[j];
  Tensor x = Tensor::from_vector(xs, {rows, cols});
  Tensor y = Tensor::from_vector(divisors, {rows, 1});
  Graph g;
  GraphEmitter e(g);
  e.output({e.call1("aten::div.Tensor", {e.placeholder("x", x), e.placeholder("y", y)})});
  CompileOptions o;
  o.keep_text = true;
  auto c = compile_or_fail(g, o);
  if (contains(c->stages()[3].text, "fdiv <")) return "a vector division is left in the loop";
  auto got = c->run({x, y});
  if (!got) return got.status().message();
  const T* out = (*got)[0].data<T>();
  int64_t wrong = 0;
  std::string first;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      T want = xs[size_t(r * cols + j)] / divisors[size_t(r)], have = out[r * cols + j];
      bool same = std::isnan(want) ? std::isnan(have) : std::memcmp(&want, &have, sizeof(T)) == 0;
      if (!same && wrong++ == 0)
        first = hex(xs[size_t(r * cols + j)]) + " / " + hex(divisors[size_t(r)]) + ": " + hex(have) + " instead of " +
                hex(want);
    }
  return wrong == 0 ? "" : std::to_string(wrong) + " quotients differ; first " + first;
}


}  // namespace

class TestCodegenCpu : public QObject {
  Q_OBJECT
 private slots:
  void pointwise_chain() {
    std::mt19937 rng(1);
    for (Shape shape : {Shape{3, 4}, Shape{1000}, Shape{37, 129}, Shape{2, 3, 5, 7}}) {
      Tensor x = random_f32(shape, rng), y = random_f32(shape, rng);
      Graph g;
      GraphEmitter e(g);
      Var a = e.placeholder("x", x), b = e.placeholder("y", y);
      Var s = e.call1("aten::mul.Tensor", {e.call1("aten::sin.default", {a}), b});
      s = e.call1("aten::tanh.default", {e.call1("aten::add.Scalar", {s, 1.5})});
      Var c = e.call1("aten::sigmoid.default", {e.call1("aten::cos.default", {b})});
      e.output({e.call1("aten::exp.default", {s}), c});
      std::string d = check(g, {x, y});
      QVERIFY2(d.empty(), (shape_str(shape) + ": " + d).c_str());
    }
  }

  // The functionalized epilogue copy_(input, final) (batch norm's running
  // statistics in an AOT forward graph): the caller's tensor holds the final
  // value after the run, and the outputs are unaffected.
  void copy_into_an_input_writes_the_callers_tensor() {
    const char* text = R"(class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[2, 3][3, 1]cpu", primals_2: "f32[3][1]cpu"):
        add: "f32[2, 3][3, 1]cpu" = torch.ops.aten.add.Tensor(primals_1, primals_2)
        sum_1: "f32[3][1]cpu" = torch.ops.aten.sum.dim_IntList(add, [0])
        mul: "f32[3][1]cpu" = torch.ops.aten.mul.Tensor(sum_1, 0.5);  sum_1 = None
        copy_: "f32[3][1]cpu" = torch.ops.aten.copy_.default(primals_2, mul);  primals_2 = mul = copy_ = None
        return (add,)
)";
    Expected<Graph> g = parse_graph_module(text, "copy_epilogue.py");
    QVERIFY2(g.ok(), g.status().to_string().c_str());
    Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor stats = Tensor::from_vector(std::vector<float>{10, 20, 30}, {3});
    auto c = compile_or_fail(*g);
    auto got = c->run({x, stats});
    QVERIFY2(got.ok(), got.status().message().c_str());
    QCOMPARE(got->size(), size_t(1));
    QCOMPARE(test::values((*got)[0]), (std::vector<double>{11, 22, 33, 14, 25, 36}));
    QCOMPARE(test::values(stats), (std::vector<double>{12.5, 23.5, 34.5}));
  }

  // A backward graph returns None for an input that needs no gradient: the
  // compiled outputs line up with the graph's, an undefined tensor there.
  void none_outputs_keep_their_places() {
    const char* text = R"(class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4][1]cpu", tangents_1: "f32[4][1]cpu"):
        mul: "f32[4][1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, primals_1);  tangents_1 = primals_1 = None
        return (None, mul, None)
)";
    Expected<Graph> g = parse_graph_module(text, "backward.py");
    QVERIFY2(g.ok(), g.status().to_string().c_str());
    Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4});
    Tensor t = Tensor::from_vector(std::vector<float>{2, 2, 2, 2}, {4});
    auto got = compile_or_fail(*g)->run({x, t});
    QVERIFY2(got.ok(), got.status().message().c_str());
    QCOMPARE(got->size(), size_t(3));
    QVERIFY(!(*got)[0].defined());
    QCOMPARE(test::values((*got)[1]), (std::vector<double>{2, 4, 6, 8}));
    QVERIFY(!(*got)[2].defined());
  }

  void broadcast_and_transpose() {
    std::mt19937 rng(2);
    Tensor x = random_f32({64, 48}, rng), bias = random_f32({48}, rng), w = random_f32({48, 64}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x), b = e.placeholder("bias", bias), t = e.placeholder("w", w);
    Var wt = e.call1("aten::permute.default", {t, std::vector<int64_t>{1, 0}});
    Var r = e.call1("aten::add.Tensor", {e.call1("aten::mul.Tensor", {a, wt}), b});
    e.output({e.call1("aten::relu.default", {r})});
    std::string d = check(g, {x, bias, w});
    QVERIFY2(d.empty(), d.c_str());
  }

  void softmax_rows() {
    std::mt19937 rng(3);
    for (Shape shape : {Shape{5, 8}, Shape{64, 2048}, Shape{3, 7, 33}}) {
      Tensor x = random_f32(shape, rng, -6.f, 6.f);
      std::string d = check(test::softmax_graph(x), {x});
      QVERIFY2(d.empty(), (shape_str(shape) + ": " + d).c_str());
    }
  }

  void row_divisor_gives_the_divisions_bits() {
    std::string f = row_divisor_case<float>();
    QVERIFY2(f.empty(), ("float32: " + f).c_str());
    std::string d = row_divisor_case<double>();
    QVERIFY2(d.empty(), ("float64: " + d).c_str());
    // A constant divisor takes the same path (a power of two stays LLVM's).
    std::mt19937 rng(12);
    Tensor x = random_f32({4096}, rng, -1e3f, 1e3f);
    for (double k : {3.0, 0.1, -7.0, 1e-40, 3e38, 0.25}) {
      Graph g;
      GraphEmitter e(g);
      e.output({e.call1("aten::div.Scalar", {e.placeholder("x", x), k})});
      auto got = compile_or_fail(g)->run({x});
      QVERIFY(got.ok());
      for (int64_t i = 0; i < x.numel(); ++i) {
        float want = x.data<float>()[i] / float(k), have = (*got)[0].data<float>()[i];
        QVERIFY2(std::memcmp(&want, &have, sizeof want) == 0,
                 (hex(x.data<float>()[i]) + " / " + hex(float(k)) + ": " + hex(have) + " instead of " + hex(want)).c_str());
      }
    }
  }

  void reductions_of_every_kind() {
    std::mt19937 rng(4);
    Tensor x = random_f32({17, 300}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    Var s0 = e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{0}, false});
    Var s1 = e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{1}, false});
    Var mx = e.call1("aten::amax.default", {a, std::vector<int64_t>{1}, false});
    Var mn = e.call1("aten::amin.default", {a, std::vector<int64_t>{0}, false});
    Var all = e.call1("aten::sum.default", {a});
    e.output({s0, s1, mx, mn, all});
    std::string d = check(g, {x}, 1e-5);
    QVERIFY2(d.empty(), d.c_str());
  }

  // Float sums run in float over chunks of a row and in double across them:
  // the error must not grow with the row, as a plain float sum's does.
  void long_float_sums_stay_accurate() {
    std::mt19937 rng(11);
    for (Shape shape : {Shape{1, 3000001}, Shape{5, 1025}, Shape{3, 2, 2049}}) {
      Tensor x = random_f32(shape, rng, 0.f, 1.f);
      Graph g;
      GraphEmitter e(g);
      Var a = e.placeholder("x", x);
      e.output({e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{-1}, false})});
      auto got = compile_or_fail(g)->run({x});
      QVERIFY2(bool(got), got.status().message().c_str());
      const int64_t row = shape.back(), rows = shape_numel(shape) / row;
      const float* in = x.data<float>();
      const float* out = (*got)[0].data<float>();
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0;
        for (int64_t i = 0; i < row; ++i) exact += in[r * row + i];
        // float's own rounding of the result is 6e-8; allow a few times that.
        QVERIFY2(std::abs(out[r] - exact) <= 3e-7 * exact,
                 (shape_str(shape) + " row " + std::to_string(r) + ": " + std::to_string(out[r]) + " vs " +
                  std::to_string(exact)).c_str());
      }
    }
  }

  void integer_and_bool_dtypes() {
    std::vector<int64_t> iv;
    for (int i = 0; i < 60; ++i) iv.push_back(i * 7 % 23 - 11);
    Tensor xi = Tensor::from_vector(iv, {6, 10});
    std::mt19937 rng(5);
    Tensor xf = random_f32({6, 10}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("i", xi), f = e.placeholder("f", xf);
    Var gt = e.call1("aten::gt.Scalar", {a, int64_t(0)});
    Var w = e.call1("aten::where.self", {gt, f, e.call1("aten::neg.default", {f})});
    Var isum = e.call1("aten::sum.dim_IntList", {a, std::vector<int64_t>{1}, false});
    Var mixed = e.call1("aten::mul.Tensor", {a, f});
    e.output({w, isum, gt, mixed});
    std::string d = check(g, {xi, xf});
    QVERIFY2(d.empty(), d.c_str());
  }

  void nan_propagates_through_max_and_relu() {
    Tensor x = Tensor::from_vector(std::vector<float>{1.f, NAN, -2.f, 3.f, -1.f, 0.5f}, {2, 3});
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    e.output({e.call1("aten::relu.default", {a}), e.call1("aten::amax.default", {a, std::vector<int64_t>{1}, false})});
    std::string d = check(g, {x}, 0);
    QVERIFY2(d.empty(), d.c_str());
  }

  void non_contiguous_input_is_copied_to_the_compiled_layout() {
    std::mt19937 rng(6);
    Tensor x = random_f32({8, 16}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    e.output({e.call1("aten::exp.default", {a})});
    auto c = compile_or_fail(g);
    Tensor xt = random_f32({16, 8}, rng).t();  // same sizes, transposed strides
    auto got = c->run({xt});
    QVERIFY(got.ok());
    std::string d = test::compare_outputs(*got, test::aten_outputs(g, {xt}), 1e-6);
    QVERIFY2(d.empty(), d.c_str());
    auto wrong = c->run({random_f32({8, 15}, rng)});
    QVERIFY(!wrong.ok());
    QVERIFY2(contains(wrong.status().message(), "compiled for"), wrong.status().message().c_str());
  }

  void stages_show_ir_and_vectorized_assembly() {
    std::mt19937 rng(7);
    Tensor x = random_f32({4096}, rng);
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    e.output({e.call1("aten::add.Tensor", {e.call1("aten::sin.default", {a}), e.call1("aten::cos.default", {a})})});
    CompileOptions o;
    o.keep_text = true;
    auto c = compile_or_fail(g, o);
    std::vector<std::string> names;
    for (const runtime::CodegenStage& s : c->stages()) names.push_back(s.name);
    QCOMPARE(names, (std::vector<std::string>{"ir_pre_fusion", "ir_post_fusion", "llvm_ir", "llvm_ir_optimized", "assembly"}));
    const std::string& before = c->stages()[2].text;
    const std::string& after = c->stages()[3].text;
    QVERIFY2(contains(before, "call float @sinf"), before.c_str());
    // The loop vectorizer called glibc's vector sin and cos.
    QVERIFY2(contains(after, "_ZGV") && contains(after, "v_sinf") && contains(after, "v_cosf"), after.c_str());
    QVERIFY(contains(c->stages()[4].text, "kiln_group0"));
    QVERIFY(c->stats().object_bytes > 0);
  }

  // float exp is Kiln's own inlined routine: within 2 ulp of libm over the
  // whole range, subnormal results, overflow, -inf, +inf and NaN included.
  void float_exp_matches_libm() {
    std::vector<float> xs = {0.f, -0.f, 1.f, -1.f, 88.7f, 88.72283f, 88.73f, 100.f, -87.3f, -100.f, -103.9f,
                             -104.f, -200.f, INFINITY, -INFINITY, NAN, 1e-8f, -1e-8f, 0.34657359f};
    for (int i = 0; i <= 200000; ++i) xs.push_back(-105.f + 195.f * float(i) / 200000.f);
    // Every float around where the result overflows and where it underflows to 0.
    for (float edge : {88.72283935546875f, -103.972084045410f, 88.8f, -104.f})
      for (float v = edge, steps = 0; steps < 300; v = std::nextafter(v, INFINITY), ++steps) xs.push_back(v);
    for (float edge : {88.72283935546875f, -103.972084045410f, 88.8f, -104.f})
      for (float v = edge, steps = 0; steps < 300; v = std::nextafter(v, -INFINITY), ++steps) xs.push_back(v);
    Tensor x = Tensor::from_vector(xs, {int64_t(xs.size())});
    Graph g;
    GraphEmitter e(g);
    e.output({e.call1("aten::exp.default", {e.placeholder("x", x)})});
    auto got = compile_or_fail(g)->run({x});
    QVERIFY(got.ok());
    const float* y = (*got)[0].data<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      float want = std::exp(xs[i]);
      if (std::isnan(want)) {
        QVERIFY2(std::isnan(y[i]), qPrintable(QString("exp(%1) = %2").arg(xs[i]).arg(y[i])));
        continue;
      }
      // 2 ulp of the result, or of the smallest normal for subnormal results.
      float ulp = std::max(std::nextafter(want, INFINITY) - want, std::numeric_limits<float>::denorm_min());
      if (std::isinf(want)) QCOMPARE(y[i], want);
      else QVERIFY2(std::fabs(y[i] - want) <= 2 * ulp, qPrintable(QString("exp(%1): %2 vs libm %3").arg(double(xs[i]), 0, 'g', 9).arg(double(y[i]), 0, 'g', 9).arg(double(want), 0, 'g', 9)));
    }
  }

  void injected_relu_bugs() {
    Tensor x = Tensor::from_vector(std::vector<float>{-1.f, 2.f, -3.f, 4.f}, {4});
    Graph g;
    GraphEmitter e(g);
    Var a = e.placeholder("x", x);
    e.output({e.call1("aten::relu.default", {a})});
    CompileOptions o;
    o.inject_bug = "relu:accuracy";
    auto c = compile_or_fail(g, o);
    auto got = c->run({x});
    QVERIFY(got.ok());
    QCOMPARE(test::values((*got)[0]), (std::vector<double>{1, 3, 1, 5}));
    o.inject_bug = "relu:compile-error";
    o.use_cache = false;
    auto failed = CompiledGraph::compile(g, o);
    QVERIFY(!failed.ok());
    QVERIFY2(contains(failed.status().message(), "relu:compile-error"), failed.status().message().c_str());
    o.inject_bug = "relu:sometimes";
    auto bad = CompiledGraph::compile(g, o);
    QVERIFY(!bad.ok());
    QVERIFY2(contains(bad.status().message(), "not one of"), bad.status().message().c_str());
  }

  void intermediates_of_every_node() {
    std::mt19937 rng(8);
    Tensor x = random_f32({4, 8}, rng);
    Graph g = test::softmax_graph(x);
    CompileOptions o;
    o.fuse = false;
    auto c = compile_or_fail(g, o);
    auto values = c->run_with_intermediates({x});
    QVERIFY(values.ok());
    for (const Node& n : g.nodes) {
      if (n.op != OpKind::CallFunction) continue;
      QVERIFY2(values->count(n.name), n.name.c_str());
    }
    // Each intermediate equals the ATen value of its node: the exp node, say.
    Tensor max_row = x.contiguous();
    for (const Node& n : g.nodes)
      if (n.target == "aten::exp.default") {
        std::vector<double> got = test::values(values->at(n.name));
        QCOMPARE(got.size(), size_t(32));
        for (double v : got) QVERIFY(v > 0 && v <= 1.0 + 1e-6);
      }
  }
};

QTEST_APPLESS_MAIN(TestCodegenCpu)
#include "test_codegen_cpu.moc"
