// torch.finfo / torch.iinfo, torch.accelerator, nn.DataParallel, Tensor.grad_fn
// and globals(): what programs read to choose a device, a tolerance or a
// configuration.
// Expected values are PyTorch 2.11's (finfo and iinfo are the IEEE and
// two's-complement limits) and CPython's.
#include <QtTest/QtTest>

#include "core/python/vm.h"

using namespace kiln::py;

namespace {

std::string output_of(const std::string& source) {
  std::string out, err;
  VMOptions options;
  options.out = [&out](std::string_view s) { out += s; };
  options.err = [&err](std::string_view s) { err += s; };
  VM vm(options);
  kiln::Status s = vm.run_source(source, "prog.py");
  if (!s.ok()) QTest::qFail((s.to_string() + "\n" + err).c_str(), __FILE__, __LINE__);
  return out;
}

}  // namespace

class TestTorchInfo : public QObject {
  Q_OBJECT
 private slots:
  void finfo_and_iinfo() {
    QCOMPARE(QString::fromStdString(output_of(
                 "import torch\n"
                 "f = torch.finfo(torch.float32)\n"
                 "print(f.eps, f.max, f.tiny, f.bits, f.resolution)\n"
                 "print(torch.finfo(torch.float16).max, torch.finfo(torch.bfloat16).eps, torch.finfo().bits)\n"
                 "print(torch.finfo(torch.float64).eps)\n"
                 "print(torch.iinfo(torch.int64).max, torch.iinfo(torch.uint8).max, torch.iinfo(torch.int8).min)\n")),
             QString("1.1920928955078125e-07 3.4028234663852886e+38 1.1754943508222875e-38 32 1e-06\n"
                     "65504.0 0.0078125 32\n"
                     "2.220446049250313e-16\n"
                     "9223372036854775807 255 -128\n"));
  }

  void accelerator_follows_cuda() {
    QCOMPARE(QString::fromStdString(output_of(
                 "import torch\n"
                 "print(torch.accelerator.is_available() == torch.cuda.is_available())\n"
                 "print(torch.accelerator.device_count() == torch.cuda.device_count())\n"
                 "d = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device('cpu')\n"
                 "print(d.type in ('cpu', 'cuda'))\n")),
             QString("True\nTrue\nTrue\n"));
  }

  // Without CUDA, PyTorch's DataParallel keeps no devices and calls its module.
  void data_parallel_without_an_accelerator() {
    if (output_of("import torch\nprint(torch.cuda.is_available())\n") == "True\n")
      QSKIP("a CUDA device is present: DataParallel is refused there (exit 3)");
    QCOMPARE(QString::fromStdString(output_of(
                 "import torch\nimport torch.nn as nn\nimport torch.nn.parallel\n"
                 "torch.manual_seed(0)\n"
                 "lin = nn.Linear(2, 1)\n"
                 "m = nn.DataParallel(lin)\n"
                 "print(m)\n"
                 "print(list(m.state_dict().keys()), torch.equal(m(torch.ones(1, 2)), lin(torch.ones(1, 2))))\n"
                 "print(nn.parallel.data_parallel(nn.Identity(), torch.ones(2), None))\n")),
             QString("DataParallel(\n  (module): Linear(in_features=2, out_features=1, bias=True)\n)\n"
                     "['module.weight', 'module.bias'] True\n"
                     "tensor([1., 1.])\n"));
  }

  // A module imported for an optional path imports; its functions are refused
  // by name with exit code 3.
  void optional_modules_import_and_refuse_their_calls() {
    QCOMPARE(QString::fromStdString(output_of("import torch\nimport torch.onnx\nimport torch.jit\nimport torch.hub\nprint('imported')\n")),
             QString("imported\n"));
    VMOptions options;
    options.out = [](std::string_view) {};
    options.err = [](std::string_view) {};
    VM vm(options);
    int code = -1;
    kiln::Status s = vm.run_source("import torch\ntorch.jit.save(None, 'm.pt')\n", "prog.py", &code);
    QCOMPARE(code, 3);
    QVERIFY2(s.message().find("torch.jit.save (it writes a file)") != std::string::npos, s.to_string().c_str());
    QCOMPARE(s.where().line, 2);
    // torch.fx's API beyond what Kiln models stops with exit 3, not an AttributeError.
    code = -1;
    s = vm.run_source("import torch.fx\ng = torch.fx.Graph()\ng.find_nodes(op='placeholder')\n", "prog.py", &code);
    QCOMPARE(code, 3);
    QVERIFY2(s.message().find("torch.fx.Graph.find_nodes is not modelled") != std::string::npos, s.to_string().c_str());
    // torch.jit.trace records through capture; an interpreter without it refuses by name.
    code = -1;
    s = vm.run_source("import torch\nf = torch.jit.trace(lambda x: x, (torch.ones(1),))\n", "prog.py", &code);
    QCOMPARE(code, 3);
    QVERIFY2(s.message().find("torch.jit.trace needs Kiln's capture") != std::string::npos, s.to_string().c_str());
    // Imports a program makes for a path it never takes (the annotated transformer's).
    QCOMPARE(QString::fromStdString(output_of("import torch.multiprocessing as mp\nimport torch.utils.data.distributed\n"
                                              "from torch.utils.data.distributed import DistributedSampler\n"
                                              "print(mp.__name__, torch.utils.data.distributed.__name__)\n")),
             QString("torch.multiprocessing torch.utils.data.distributed\n"));
    code = -1;
    s = vm.run_source("from torch.utils.data.distributed import DistributedSampler\nDistributedSampler(range(3))\n",
                      "prog.py", &code);
    QCOMPARE(code, 3);
    QVERIFY2(s.message().find("DistributedSampler (multi-process training is not modelled") != std::string::npos,
             s.to_string().c_str());
  }

  // The legacy type classes as Tensor.type's argument (older GAN code's
  // `imgs.type(Tensor)`) and nn.KLDivLoss; PyTorch 1.13 printed the same text
  // here, and these conversions and this loss have not changed since.
  void legacy_type_classes_and_kl_div_loss() {
    QCOMPARE(QString::fromStdString(output_of(
                 "import torch\n"
                 "x = torch.arange(4)\n"
                 "y = x.type(torch.FloatTensor)\n"
                 "print(y, x.type('torch.DoubleTensor').dtype, y.type(torch.FloatTensor) is y)\n"
                 "print(torch.ones(2, requires_grad=True).type(torch.DoubleTensor))\n"
                 "torch.manual_seed(0)\n"
                 "a = torch.log_softmax(torch.randn(3, 5), 1)\n"
                 "b = torch.softmax(torch.randn(3, 5), 1)\n"
                 "print(torch.nn.KLDivLoss(reduction='batchmean'), torch.nn.KLDivLoss(reduction='batchmean')(a, b))\n")),
             QString("tensor([0., 1., 2., 3.]) torch.float64 True\n"
                     "tensor([1., 1.], dtype=torch.float64, grad_fn=<ToCopyBackward0>)\n"
                     "KLDivLoss() tensor(0.6929)\n"));
  }

  // A missing attribute PyTorch 2.11 has is Kiln's gap: refused, exit 3, at
  // the line; one PyTorch lacks as well is the program's AttributeError, exit
  // 1, as PyTorch raises it. hasattr and getattr with a default see neither.
  void gaps_are_told_from_typos() {
    struct Case {
      const char* source;
      int code;
      const char* message;
    };
    const Case cases[] = {
        {"import torch\ntorch.ones(2).to_mkldnn()\n", 3, "'Tensor' object has no attribute 'to_mkldnn' (PyTorch has it; not in Kiln's subset)"},
        {"import torch\ntorch.ones(2).to_mkldnnn()\n", 1, "'Tensor' object has no attribute 'to_mkldnnn'"},
        {"import torch\ntorch.kron(1, 2)\n", 3, "module 'torch' has no attribute 'kron' (PyTorch has it; not in Kiln's subset)"},
        {"import torch\ntorch.kronn(1, 2)\n", 1, "module 'torch' has no attribute 'kronn'"},
        {"import torch.nn as nn\nnn.Bilinear(1, 2, 3)\n", 3, "module 'torch.nn' has no attribute 'Bilinear' (PyTorch has it"},
        {"import torch\nimport torch.nn.functional as F\nF.gumbel_softmax(torch.ones(2))\n", 3, "has no attribute 'gumbel_softmax' (PyTorch has it"},
    };
    for (const Case& c : cases) {
      VMOptions options;
      options.out = [](std::string_view) {};
      options.err = [](std::string_view) {};
      VM vm(options);
      int code = -1;
      kiln::Status s = vm.run_source(c.source, "prog.py", &code);
      QCOMPARE(code, c.code);
      QVERIFY2(s.message().find(c.message) != std::string::npos, s.to_string().c_str());
      QCOMPARE(s.where().line, std::string_view(c.source).find("F.gumbel") != std::string_view::npos ? 3 : 2);
    }
    QCOMPARE(QString::fromStdString(output_of("import torch\nprint(hasattr(torch.ones(1), 'to_mkldnn'), getattr(torch, 'kron', None))\n")),
             QString("False None\n"));
  }

  // What library code (torchvision's models, llama2.c, old tutorials) asks of
  // torch on the way: scripting and tracing are never on, fx.wrap returns what
  // it marks, torch._assert is assert, struct imports, the in-place view
  // methods and the deprecated add_(alpha, other) overload work as PyTorch's.
  void library_code_helpers() {
    QCOMPARE(QString::fromStdString(output_of(R"PY(import struct
import torch
import torch.fx
def f(x):
    return x + 1
print(torch.jit.is_scripting(), torch.jit.is_tracing(), torch.fx.wrap(f) is f, torch.fx.wrap("len"))
torch._assert(True, "fine")
try:
    torch._assert(1 > 2, "one is not above two")
except AssertionError as e:
    print("AssertionError:", e)
x = torch.arange(6.0).view(2, 3)
x.unsqueeze_(0)
print(x.shape, x.squeeze_().shape, x.t_().shape, x.transpose_(0, 1).shape)
p = torch.ones(2)
p.add_(-0.5, torch.tensor([2.0, 4.0]))
print(p.tolist(), torch.sub(p, 2, torch.ones(2)).tolist())
)PY")),
             QString("False False True len\n"
                     "AssertionError: one is not above two\n"
                     "torch.Size([1, 2, 3]) torch.Size([2, 3]) torch.Size([3, 2]) torch.Size([2, 3])\n"
                     "[0.0, -1.0] [-2.0, -3.0]\n"));
  }

  void grad_fn_names_the_node() {
    QCOMPARE(QString::fromStdString(output_of(
                 "import torch\n"
                 "x = torch.ones(2, requires_grad=True)\n"
                 "y = (x * 2).sum()\n"
                 "print(x.grad_fn, y.grad_fn.name(), type(y.grad_fn).__name__, (x + 1).grad_fn is not None)\n"
                 "print(str(y.grad_fn).startswith('<SumBackward0 object at 0x'), x.is_xpu, x.is_mps)\n")),
             QString("None SumBackward0 SumBackward0 True\nTrue False False\n"));
  }

  void globals_is_the_module_namespace() {
    QCOMPARE(QString::fromStdString(output_of("batch_size = 4\n"
                                              "def configure():\n"
                                              "    g = globals()\n"
                                              "    g['batch_size'] = 8\n"
                                              "    g['lr'] = 0.5\n"
                                              "configure()\n"
                                              "keys = [k for k in globals() if not k.startswith('_')]\n"
                                              "print(batch_size, lr, 'configure' in keys)\n")),
             QString("8 0.5 True\n"));
  }
};

QTEST_GUILESS_MAIN(TestTorchInfo)
#include "test_torch_info.moc"
