// Tensors on device("cuda") in the interpreter (core/python/torch_device.h)
// and the regions that run them on the GPU (compiler/pipeline/cuda_region.h).
// The placement rules need no GPU: the device counter is told there is one,
// and compiled regions, which then cannot load a CUDA module, say so and run
// on the eager kernels. With a real GPU (KILN_TEST_GPU=1 on the GPU machine)
// the same programs check the GPU's results against the CPU's.
#include <QtTest>

#include <cstdlib>
#include <string>

#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/pipeline/cuda_region.h"
#include "core/python/torch_api.h"
#include "program_run_util.h"

using namespace kiln;

namespace {

using Run = test::ProgramRun;

Run run(const std::string& source, const std::string& backend = "kiln") {
  return test::run_program("import torch\n" + source, backend);
}

bool real_gpu() { return codegen::cuda::cuda_init().ok(); }

}  // namespace

class TestCudaPlacement : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    if (real_gpu()) pipeline::install_cuda_device_counter();
    else torchapi::set_cuda_device_counter([] { return 1; });
  }
  void cleanup() { torchapi::set_cuda_device_counter(nullptr); }

  void no_device_is_a_clear_error() {
    torchapi::set_cuda_device_counter([] { return 0; });
    Run r = run("print(torch.cuda.is_available())\nx = torch.ones(2, device='cuda')\n");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.out.starts_with("False"), r.out.c_str());
    QVERIFY2(r.status.message().find("CUDA device is not available") != std::string::npos, r.status.message().c_str());
  }

  void factories_and_ops_carry_the_device() {
    Run r = run(
        "x = torch.ones(2, 3, device='cuda')\n"
        "y = x * 2 + 1\n"
        "print(x.device, y.device, y.is_cuda, torch.cuda.device_count())\n"
        "print(y.sum(0))\n"
        "print(y.cpu().device, y.cpu().is_cuda)\n"
        "z = torch.zeros(3).cuda()\n"
        "print(z.device, torch.zeros(3).to(y).device, torch.zeros(3).to(torch.device('cuda', 0)).device)\n"
        "v, i = y.max(1)\n"
        "print(v.device, i.device)\n");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out),
             QString("cuda:0 cuda:0 True 1\n"
                     "tensor([6., 6., 6.], device='cuda:0')\n"
                     "cpu False\n"
                     "cuda:0 cuda:0 cuda:0\n"
                     "cuda:0 cuda:0\n"));
  }

  void moving_copies_and_mixing_devices_is_an_error() {
    Run r = run(
        "x = torch.ones(2)\n"
        "y = x.cuda()\n"
        "y.add_(1)\n"
        "print(x.sum().item(), y.sum().item())\n"
        "print((y + torch.tensor(2.0)).device)\n"
        "x + y\n");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.out.starts_with("2.0 4.0\ncuda:0\n"), r.out.c_str());
    QVERIFY2(r.status.message().find("Expected all tensors to be on the same device") != std::string::npos,
             r.status.message().c_str());
  }

  void modules_move_their_parameters_and_buffers() {
    Run r = run(
        "m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))\n"
        "w = m[0].weight\n"
        "m.to('cuda')\n"
        "print(m[0].weight is w, w.device, m[1].running_mean.device)\n"
        "out = m(torch.ones(4, 3, device='cuda'))\n"
        "out.sum().backward()\n"
        "print(out.device, w.grad.device)\n"
        "m.cpu()\n"
        "print(w.device)\n");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("True cuda:0 cuda:0\ncuda:0 cuda:0\ncpu\n"));
  }

  // A region compiled for CUDA inputs runs on the GPU (or, here without one,
  // says why not and runs eagerly); its outputs are on the inputs' device, and
  // moving an input to another device recompiles.
  void compiled_regions_keep_the_device_and_guard_it() {
    Run r = run(
        "f = torch.compile(lambda a, b: (a.sin() * b + 1).relu(), mode='reduce-overhead')\n"
        "x = torch.linspace(-2, 2, 12).reshape(3, 4)\n"
        "w = torch.linspace(0, 1, 4)\n"
        "ref = (x.sin() * w + 1).relu()\n"
        "for _ in range(3):\n"
        "    out = f(x.cuda(), w.cuda())\n"
        "print(out.device, (out.cpu() - ref).abs().max().item() < 1e-5)\n"
        "print(f(x, w).device)\n",
        "inductor");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("cuda:0 True\ncpu\n"));
    if (!real_gpu())
      QVERIFY2(r.err.find("W kiln kiln-cuda") != std::string::npos, r.err.c_str());
    else
      QVERIFY2(r.err.find("W kiln kiln-cuda") == std::string::npos, r.err.c_str());
  }

  // The precision switches a region is compiled under: PyTorch's defaults
  // (TF32 convolutions, exact float32 matmuls), and the program may change them.
  void tf32_switches_have_pytorchs_defaults() {
    Run r = run(
        "print(torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)\n"
        "torch.backends.cudnn.allow_tf32 = False\n"
        "print(torch.backends.cudnn.allow_tf32)\n");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("True False\nFalse\n"));
  }

  // torch.compile's modes as the GPU backend takes them (PyTorch's docs:
  // max-autotune also uses CUDA graphs, max-autotune-no-cudagraphs does not).
  void modes_choose_replay_and_autotuning() {
    using O = pipeline::CudaRegionCode;
    QVERIFY(!O::options_for_mode("default").reduce_overhead && !O::options_for_mode("default").autotune);
    QVERIFY(O::options_for_mode("reduce-overhead").reduce_overhead && !O::options_for_mode("reduce-overhead").autotune);
    QVERIFY(O::options_for_mode("max-autotune").reduce_overhead && O::options_for_mode("max-autotune").autotune);
    QVERIFY(!O::options_for_mode("max-autotune-no-cudagraphs").reduce_overhead &&
            O::options_for_mode("max-autotune-no-cudagraphs").autotune);
    // A softmax (a row reduction, so the variants differ) tuned at its first call.
    for (const char* mode : {"max-autotune", "max-autotune-no-cudagraphs"}) {
      Run r = run(std::string("f = torch.compile(lambda a: (a * 3).softmax(-1) + 1, mode='") + mode + "')\n"
                  "x = torch.linspace(-4, 4, 4096).reshape(8, 512)\n"
                  "want = (x * 3).softmax(-1) + 1\n"
                  "for _ in range(2):\n"
                  "    got = f(x.cuda())\n"
                  "print(got.device, (got.cpu() - want).abs().max().item() < 1e-5)\n",
                  "inductor");
      QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
      QCOMPARE(QString::fromStdString(r.out), QString("cuda:0 True\n"));
      QVERIFY2(real_gpu() == (r.err.find("W kiln kiln-cuda") == std::string::npos), r.err.c_str());
    }
  }

  // Kiln's own guard listing (kiln-cli explain) names the device; explain()'s
  // text is 2.11's, whose TENSOR_MATCH lines do not.
  void guards_name_the_device() {
    std::string guards;
    Run r = test::run_program(
        "import torch\nimport torch._dynamo\n"
        "f = torch.compile(lambda a: a + 1, backend='eager')\n"
        "f(torch.ones(2))\n"
        "f(torch.ones(2, device='cuda'))\n",
        "eager", [&guards](py::VM& vm) {
          for (const capture::CallableReport& c : capture::capture_reports(vm))
            for (const auto& entry : c.guards)
              for (const std::string& g : entry) guards += g + "\n";
          for (const capture::CallableReport& c : capture::capture_reports(vm))
            for (const auto& rc : c.recompiles)
              for (const std::string& why : rc.reasons) guards += "recompile: " + why + "\n";
        });
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QVERIFY2(guards.find("AutogradCUDA") != std::string::npos, guards.c_str());
    QVERIFY2(guards.find("AutogradCPU") != std::string::npos, guards.c_str());
  }
};

QTEST_GUILESS_MAIN(TestCudaPlacement)
#include "test_cuda_placement.moc"
