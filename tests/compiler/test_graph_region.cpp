// A torch-level graph read from text (a Dynamo graph, an after-dynamo repro's
// forward) lowers to ATen through lower_torch_graph: only ATen ops remain,
// each names the torch-level node it came from, and the ATen graph computes
// what the torch-level calls compute (checked against values worked out here
// from the inputs). What cannot be lowered is refused by node.
#include <QtTest>

#include "compiler/capture/graph_region.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/to_aten.h"
#include "core/graph/parser.h"
#include "core/tensor/generator.h"
#include "test_support.h"

using namespace kiln;

namespace {

constexpr const char* kDynamoGraph = R"(class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4, 8][8, 1]cpu", L_w_: "f32[16, 8][8, 1]cpu", L_b_: "f32[16][1]cpu"):
        l_x_ = L_x_
        l_w_ = L_w_
        l_b_ = L_b_
        linear = torch._C._nn.linear(l_x_, l_w_, l_b_);  l_x_ = l_w_ = None
        relu = torch.nn.functional.relu(linear, inplace = False);  linear = None
        expand_as = l_b_.expand_as(relu);  l_b_ = None
        add = relu + expand_as;  relu = expand_as = None
        sum_1 = add.sum(dim = -1, dtype = torch.float64)
        getitem = add[(slice(None, None, None), 0)];  add = None
        mul = getitem * 2.5;  getitem = None
        return (sum_1, mul)
)";

Graph parse(const char* text) {
  Expected<Graph> g = parse_graph_module(text, "<test>");
  if (!g) qFatal("%s", g.status().to_string().c_str());
  return std::move(*g);
}

std::vector<Tensor> random_inputs(const std::vector<Shape>& shapes) {
  CpuGenerator gen(7);
  std::vector<Tensor> out;
  for (const Shape& s : shapes) {
    Tensor t = Tensor::empty(s, DType::Float32);
    normal_(t, 0, 1, gen);
    out.push_back(t);
  }
  return out;
}

}  // namespace

class TestGraphRegion : public QObject {
  Q_OBJECT

 private slots:
  void dynamo_graph_lowers_to_aten_with_the_same_values() {
    Graph g = parse(kDynamoGraph);
    QVERIFY(capture::is_torch_level(g));
    std::vector<Tensor> in = random_inputs({{4, 8}, {16, 8}, {16}});
    Expected<Graph> aten = pipeline::lower_torch_graph(g, in);
    QVERIFY2(aten.ok(), aten.status().to_string().c_str());
    QVERIFY(!capture::is_torch_level(*aten));
    bool from_linear = false;
    for (const Node& n : aten->nodes) {
      if (n.op != OpKind::CallFunction) continue;
      QVERIFY2(n.target.find("::") != std::string::npos || n.target == "operator.getitem", n.target.c_str());
      QVERIFY2(!n.meta.from.empty(), n.name.c_str());
      from_linear |= n.meta.from.front() == "linear";
    }
    QVERIFY(from_linear);

    std::vector<Value> args(in.begin(), in.end());
    Expected<std::vector<Value>> out = pipeline::run_aten_graph(*aten, args);
    QVERIFY2(out.ok(), out.status().to_string().c_str());
    QCOMPARE(out->size(), size_t(2));
    const Tensor sum = (*out)[0].to_tensor(), mul = (*out)[1].to_tensor();
    QCOMPARE(sum.dtype(), DType::Float64);
    QCOMPARE(sum.sizes(), (Shape{4}));
    QCOMPARE(mul.sizes(), (Shape{4}));
    // relu(x W^T + b) + b, worked out element by element.
    std::vector<double> x = test::values(in[0]), w = test::values(in[1]), b = test::values(in[2]);
    std::vector<double> got_sum = test::values(sum), got_mul = test::values(mul);
    for (int i = 0; i < 4; ++i) {
      double row = 0, first = 0;
      for (int j = 0; j < 16; ++j) {
        double dot = b[size_t(j)];
        for (int k = 0; k < 8; ++k) dot += x[size_t(i * 8 + k)] * w[size_t(j * 8 + k)];
        const double v = std::max(0.0, dot) + b[size_t(j)];
        row += v;
        if (j == 0) first = v;
      }
      QVERIFY2(std::fabs(got_sum[size_t(i)] - row) < 1e-4, qPrintable(QString("sum row %1").arg(i)));
      QVERIFY2(std::fabs(got_mul[size_t(i)] - 2.5 * first) < 1e-4, qPrintable(QString("mul row %1").arg(i)));
    }
  }

  void a_bare_output_is_one_result() {
    Graph g = parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3]"):
        sin = torch.sin(x)
        return sin
)");
    Expected<Graph> aten = pipeline::lower_torch_graph(g, random_inputs({{3}}));
    QVERIFY2(aten.ok(), aten.status().to_string().c_str());
    std::vector<std::string> targets;
    for (const Node& n : aten->nodes)
      if (n.op == OpKind::CallFunction) targets.push_back(n.target);
    QCOMPARE(targets, std::vector<std::string>{"aten::sin.default"});
  }

  // Dynamo graphs keep direct ATen calls as they are (torch.ops.aten.round(x),
  // an overload packet; torch.ops.aten.mul.Tensor): they run through the same
  // observed entry as the bindings, so they are lowered too.
  void direct_aten_calls_beside_torch_calls() {
    Graph g = parse(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4]", y: "f32[4]"):
        sigmoid = torch.sigmoid(x)
        mul = torch.ops.aten.mul.Tensor(sigmoid, y)
        round_1 = torch.ops.aten.round(mul)
        return (round_1,)
)");
    std::vector<Tensor> in = random_inputs({{4}, {4}});
    Expected<Graph> aten = pipeline::lower_torch_graph(g, in);
    QVERIFY2(aten.ok(), aten.status().to_string().c_str());
    std::vector<std::string> targets;
    for (const Node& n : aten->nodes)
      if (n.op == OpKind::CallFunction) targets.push_back(n.target);
    QCOMPARE(targets, (std::vector<std::string>{"aten::sigmoid.default", "aten::mul.Tensor", "aten::round.default"}));
    std::vector<Value> args(in.begin(), in.end());
    Expected<std::vector<Value>> out = pipeline::run_aten_graph(*aten, args);
    QVERIFY2(out.ok(), out.status().to_string().c_str());
    std::vector<double> x = test::values(in[0]), y = test::values(in[1]), got = test::values((*out)[0].to_tensor());
    for (size_t i = 0; i < 4; ++i) {
      const double unrounded = y[i] / (1 + std::exp(-x[i]));
      QVERIFY2(got[i] == std::nearbyint(got[i]) && std::fabs(got[i] - unrounded) <= 0.5 + 1e-5,
               qPrintable(QString("element %1: %2 for %3").arg(i).arg(got[i]).arg(unrounded)));
    }
  }

  void what_cannot_be_lowered_is_refused_by_node() {
    auto refusal = [](const char* text, std::vector<Tensor> in) {
      Expected<Graph> aten = pipeline::lower_torch_graph(parse(text), std::move(in));
      return aten.ok() ? std::string("(lowered)") : aten.status().message();
    };
    std::string m = refusal(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3, 4]"):
        fc = self.fc(x)
        return (fc,)
)",
                            random_inputs({{3, 4}}));
    QVERIFY2(m.starts_with("node 'fc' calls the submodule 'fc'"), m.c_str());
    m = refusal(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3]"):
        frob = torch.frobnicate(x)
        return (frob,)
)",
                random_inputs({{3}}));
    QVERIFY2(m.starts_with("node 'frob' calls torch.frobnicate, which Kiln has no torch binding for"), m.c_str());
    m = refusal(R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3]", y: "f32[3]"):
        add = x + y
        return (add,)
)",
                random_inputs({{3}}));
    QVERIFY2(m.starts_with("node 'y' has no input value (1 given)"), m.c_str());
  }
};

QTEST_GUILESS_MAIN(TestGraphRegion)
#include "test_graph_region.moc"
