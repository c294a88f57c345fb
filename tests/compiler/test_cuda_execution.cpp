// CudaExecution's services for benchmarks that keep state on the device: an
// output copied into an input between launches and replays (a training
// step's new parameters), refused between buffers of another layout; and the
// per-group profile (`bench gpu --profile`). Without a GPU the cases skip
// with the reason (KILN_REQUIRE_GPU=1 makes that a failure, as on the lent
// GPU machine).
#include <QtTest>

#include <vector>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/cuda_graph.h"
#include "cuda_test_util.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::codegen::cuda;
using runtime::CudaCompiledGraph;
using runtime::CudaExecution;

namespace {

// out0 = x * 2 (as [10, 100]), out1 = w + x: one step of "w += x".
Graph accumulate_graph(const Tensor& x, const Tensor& w) {
  Graph g;
  GraphEmitter e(g);
  Var vx = e.placeholder("x", x), vw = e.placeholder("w", w);
  Var doubled = e.call1("aten::view.default", {e.call1("aten::mul.Scalar", {vx, 2.0}), std::vector<int64_t>{10, 100}});
  e.output({doubled, e.call1("aten::add.Tensor", {vw, vx})});
  return g;
}

std::vector<float> values(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::vector<float>(c.data<float>(), c.data<float>() + c.numel());
}

}  // namespace

class TestCudaExecution : public QObject {
  Q_OBJECT

  bool gpu() {
    if (std::string why = test::no_gpu_reason(); !why.empty()) {
      if (qgetenv("KILN_REQUIRE_GPU") == "1") qFatal("%s", why.c_str());
      qInfo("skipped: %s", why.c_str());
      return false;
    }
    return true;
  }

 private slots:
  void outputs_carried_into_inputs() {
    if (!gpu()) QSKIP("no GPU");
    std::vector<float> xs(1000), ws(1000);
    for (int i = 0; i < 1000; ++i) xs[i] = float(i % 7) - 3, ws[i] = 0.5f * float(i);
    Tensor x = Tensor::from_vector(xs, {1000}), w = Tensor::from_vector(ws, {1000});
    runtime::CudaCompileOptions o;
    o.use_cache = false;
    auto compiled = CudaCompiledGraph::compile(accumulate_graph(x, w), o);
    QVERIFY2(compiled.ok(), compiled.status().message().c_str());
    auto exec = CudaExecution::create(*compiled);
    QVERIFY2(exec.ok(), exec.status().message().c_str());
    CudaExecution& run = **exec;
    QVERIFY(run.set_input(0, x).ok() && run.set_input(1, w).ok());
    Expected<Stream> stream = Stream::create();
    QVERIFY(stream.ok());
    // Three steps, the first plain and the next two replayed from a CUDA graph: w ends at w + 3x.
    for (int step = 0; step < 3; ++step) {
      Status st = step == 0 ? run.launch(&*stream) : run.replay(*stream);
      QVERIFY2(st.ok(), st.message().c_str());
      QVERIFY2(run.copy_output_to_input(1, 1, &*stream).ok(), "carry");
    }
    QVERIFY(stream->synchronize().ok());
    auto out = run.outputs();
    QVERIFY2(out.ok(), out.status().message().c_str());
    const std::vector<float> got = values((*out)[1]);
    for (int i = 0; i < 1000; ++i) QCOMPARE(got[i], ws[i] + 3 * xs[i]);
    // [10, 100] into a [1000] input: another layout, refused with the names.
    Status wrong = run.copy_output_to_input(0, 1, &*stream);
    QVERIFY(!wrong.ok());
    QVERIFY2(wrong.message().find("differ in dtype or layout") != std::string::npos, wrong.message().c_str());
    QVERIFY(!run.copy_output_to_input(2, 1, &*stream).ok());  // no output 2
  }

  void profile_times_every_group() {
    if (!gpu()) QSKIP("no GPU");
    Tensor x = Tensor::from_vector(std::vector<float>(1000, 1.0f), {1000});
    runtime::CudaCompileOptions o;
    o.use_cache = false;
    auto compiled = CudaCompiledGraph::compile(accumulate_graph(x, x), o);
    QVERIFY2(compiled.ok(), compiled.status().message().c_str());
    auto exec = CudaExecution::create(*compiled);
    QVERIFY2(exec.ok(), exec.status().message().c_str());
    QVERIFY((*exec)->set_input(0, x).ok() && (*exec)->set_input(1, x).ok());
    Expected<Stream> stream = Stream::create();
    QVERIFY(stream.ok());
    auto groups = (*exec)->profile(*stream, 5);
    QVERIFY2(groups.ok(), groups.status().message().c_str());
    QVERIFY(!groups->empty());
    for (const auto& g : *groups) {
      QVERIFY2(g.ms >= 0 && g.ms < 1000, g.group.c_str());
      QCOMPARE(g.what, std::string("kernel"));
    }
  }
};

QTEST_GUILESS_MAIN(TestCudaExecution)
#include "test_cuda_execution.moc"
