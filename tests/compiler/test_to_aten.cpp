// Every region captured from Kiln's example programs lowers to an ATen graph
// (placeholders, aten:: call_function nodes, operator.getitem, output) whose
// outputs, run by run_aten_graph, equal the torch-level region's on the same inputs.
#include <QtTest>

#include <fstream>

#include <QDir>
#include <QTemporaryDir>

#include "compiler/capture/capture.h"
#include "compiler/passes/op_properties.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/to_aten.h"
#include "core/python/torch_bridge.h"
#include "core/python/vm.h"
#include "core/tensor/generator.h"
#include "capture_test_util.h"
#include "test_support.h"

using namespace kiln;

namespace {

int skipped_regions = 0;

bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  std::vector<double> x = test::values(a), y = test::values(b);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (std::fabs(x[i] - y[i]) > 1e-5 * std::max(1.0, std::fabs(y[i]))) return false;
  }
  return true;
}

}  // namespace

class TestToAten : public QObject {
  Q_OBJECT
 private slots:
  void examples_lower_and_agree_data() {
    QTest::addColumn<QString>("path");
    const QString dir = QStringLiteral(KILN_SOURCE_DIR "/resources/examples");
    for (const QString& f : QDir(dir).entryList({"*.py"}, QDir::Files, QDir::Name)) QTest::newRow(qPrintable(f)) << dir + "/" + f;
  }
  void examples_lower_and_agree() {
    QFETCH(QString, path);
    int code = 0;
    Status st;
    std::unique_ptr<py::VM> owner = test::run_captured(path.toStdString(), code, &st);
    py::VM& vm = *owner;
    if (code != 0) QSKIP(qPrintable("the program itself does not run to the end in Kiln yet: " + QString::fromStdString(st.to_string())));
    auto regions = capture::compiled_regions(vm);
    QVERIFY(!regions.empty());
    skipped_regions = 0;
    for (const auto& [id, region] : regions) {
      if (region->op_count == 0) continue;
      Expected<Graph> g = pipeline::lower_to_aten(vm, *region);
      if (!g.ok() && g.status().message().find("not lowered yet") != std::string::npos) {
        qWarning("%s: skipped, %s", id.c_str(), g.status().message().c_str());
        ++skipped_regions;
        continue;
      }
      QVERIFY2(g.ok(), qPrintable(QString::fromStdString(id + ": " + (g.ok() ? "" : g.status().message()))));
      for (const Node& n : g->nodes) {
        if (n.op != OpKind::CallFunction) continue;
        QVERIFY2(n.target.starts_with("aten::") || n.target == "operator.getitem", n.target.c_str());
        QVERIFY2(!n.meta.from.empty(), qPrintable(QString::fromStdString(n.name + " has no provenance")));
      }
      // The region's own replay is the reference; both run on copies of the inputs.
      std::vector<Value> inputs;
      std::vector<py::Value> py_inputs;
      for (const py::Value& v : region->input_values) {
        if (v.is(py::ObjKind::Tensor)) {
          Tensor c = v.as<py::TensorObj>()->t.clone();
          inputs.push_back(Value(c));
          py_inputs.push_back(py::Value(py::make<py::TensorObj>(c.clone())));
        } else {
          inputs.push_back(v.is_int() ? Value(v.as_int()) : Value(v.is_float() ? v.as_float() : 0.0));
          py_inputs.push_back(v);
        }
      }
      // Both draw from the same generator state (dropout's bernoulli).
      default_cpu_generator().manual_seed(0);
      auto got = pipeline::run_aten_graph(*g, inputs);
      QVERIFY2(got.ok(), qPrintable(QString::fromStdString(id + ": " + (got.ok() ? "" : got.status().message()))));
      default_cpu_generator().manual_seed(0);
      std::vector<py::Value> want = capture::run_graph(vm, *region, py_inputs);
      // Written-back inputs follow the region's outputs.
      QVERIFY(got->size() >= want.size());
      for (size_t i = 0; i < want.size(); ++i)
        QVERIFY2(same((*got)[i].to_tensor(), want[i].as<py::TensorObj>()->t), qPrintable(QString::fromStdString(id + " output " + std::to_string(i))));
    }
    if (skipped_regions) QSKIP(qPrintable(QString("%1 region(s) need what the lowering does not do yet (tensor constants made without an ATen op); see the warnings").arg(skipped_regions)));
  }

  // Writes into views (x[i] = v, a slice's +=, through a transpose, into an
  // input) lower to copy_ into the view, which the functionalize pass turns
  // into scatters: the lowered graph has no writes left, and its outputs and
  // written-back inputs equal the region's.
  void writes_into_views_lower_to_scatters() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("view_writes.py").toStdString();
    {
      std::ofstream f(path);
      f << "import torch\n"
           "def writes(x, y):\n"
           "    z = x.clone()\n"
           "    z[0] = y[0] * 2\n"
           "    z[:, 1:3] += 1\n"
           "    z[1:3, 0] = y[1:3, 1]\n"
           "    w = z.t()\n"
           "    w[0, 1] = 5.0\n"
           "    return z * 3, w.sum()\n"
           "def write_input(x):\n"
           "    x[0, :] = 0.0\n"
           "    x[:, 2] *= 2\n"
           "    return x.sum()\n"
           "torch.manual_seed(0)\n"
           "x = torch.randn(4, 5)\n"
           "y = torch.randn(4, 5)\n"
           "print(torch.compile(writes)(x, y))\n"
           "print(torch.compile(write_input)(x), x)\n";
    }
    int code = 0;
    Status st;
    std::unique_ptr<py::VM> owner = test::run_captured(path, code, &st);
    QVERIFY2(code == 0, st.to_string().c_str());
    py::VM& vm = *owner;
    auto regions = capture::compiled_regions(vm);
    QCOMPARE(int(regions.size()), 2);
    int scatters = 0, written_inputs = 0;
    for (const auto& [id, region] : regions) {
      Expected<Graph> g = pipeline::lower_to_aten(vm, *region);
      QVERIFY2(g.ok(), qPrintable(QString::fromStdString(id + ": " + (g.ok() ? "" : g.status().message()))));
      for (const Node& n : g->nodes) {
        QVERIFY2(!pipeline::writes_an_input(n), qPrintable(QString::fromStdString(id + ": " + n.name + " still writes")));
        scatters += n.target.find("_scatter") != std::string::npos;
        if (n.op == OpKind::CallFunction) QVERIFY2(!n.meta.from.empty(), n.name.c_str());
      }
      std::vector<Value> inputs;
      std::vector<py::Value> py_inputs;
      for (const py::Value& v : region->input_values) {
        Tensor c = v.as<py::TensorObj>()->t.clone();
        inputs.push_back(Value(c));
        py_inputs.push_back(py::Value(py::make<py::TensorObj>(c.clone())));
      }
      // Both draw from the same generator state (dropout's bernoulli).
      default_cpu_generator().manual_seed(0);
      auto got = pipeline::run_aten_graph(*g, inputs);
      QVERIFY2(got.ok(), qPrintable(QString::fromStdString(id + ": " + (got.ok() ? "" : got.status().message()))));
      default_cpu_generator().manual_seed(0);
      std::vector<py::Value> want = capture::run_graph(vm, *region, py_inputs);
      const Node& out = g->nodes.back();
      QCOMPARE(got->size(), out.meta.output_descs.size());
      for (size_t i = 0; i < want.size(); ++i)
        QVERIFY2(same((*got)[i].to_tensor(), want[i].as<py::TensorObj>()->t), qPrintable(QString::fromStdString(id + " output " + std::to_string(i))));
      // The written input, returned after the outputs, equals what the region left in it.
      for (size_t i = want.size(); i < got->size(); ++i) {
        QCOMPARE(out.meta.output_descs[i], std::string("mutated input ") + g->nodes[0].name);
        QVERIFY2(same((*got)[i].to_tensor(), py_inputs[0].as<py::TensorObj>()->t), qPrintable(QString::fromStdString(id + " written input")));
        ++written_inputs;
      }
    }
    QVERIFY(scatters >= 5);
    QCOMPARE(written_inputs, 1);
  }
};

QTEST_GUILESS_MAIN(TestToAten)
#include "test_to_aten.moc"
