// Programs run through the interpreter with torch, torch.nn and math, checked
// against what PyTorch 2.11 prints. Expected texts marked "PyTorch 2.11" were
// printed by PyTorch 2.11.0 (CPU, ATEN_CPU_CAPABILITY avx512) for the same
// program; the s02/s03 figures are read from the reference logs.
#include <QtTest/QtTest>

#include <fstream>
#include <sstream>

#include "core/python/compiler.h"
#include "core/python/torch_api.h"
#include "core/python/tracer.h"
#include "core/python/vm.h"
#include "test_support.h"

using kiln::DType;
using kiln::Scalar;
using kiln::Shape;
using kiln::Status;
using kiln::Tensor;
using namespace kiln::py;

namespace {

struct Run {
  std::string out, err;
  int exit = -1;
  Status status;
};

// `folder`: where the program may read and write files (none by default).
Run run(const std::string& source, const std::string& folder = "") {
  Run r;
  VMOptions options;
  if (!folder.empty()) options.allow_write = {folder};
  options.out = [&r](std::string_view s) { r.out += s; };
  options.err = [&r](std::string_view s) { r.err += s; };
  VM vm(options);
  r.status = vm.run_source(source, "prog.py", &r.exit);
  return r;
}

// Runs `source` and fails unless it exits cleanly with exactly `expected` on stdout.
void expect_output(const std::string& source, const std::string& expected, const std::string& folder = "") {
  Run r = run(source, folder);
  if (r.exit != 0) QFAIL(qPrintable(QString::fromStdString("program failed: " + r.status.to_string() + "\n" + r.err)));
  QCOMPARE(QString::fromStdString(r.out), QString::fromStdString(expected));
}

// Runs `source` and expects it to fail with `exit_code` and a last traceback line containing `needle`.
void expect_error(const std::string& source, int exit_code, const std::string& needle, const std::string& folder = "") {
  Run r = run(source, folder);
  QCOMPARE(r.exit, exit_code);
  if (r.err.find(needle) == std::string::npos)
    QFAIL(qPrintable(QString::fromStdString("expected '" + needle + "' in:\n" + r.err)));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) qFatal("cannot read %s", path.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Records every torch call and answers in Meta mode, as capture does, without a graph.
class RecordingTracer : public Tracer {
 public:
  std::vector<std::string> targets;
  Value record(VM&, const TorchCall& call, const std::function<Value(const CallArgs&)>& run_meta) override {
    targets.push_back(call.graph_target);
    ValueVec fakes;
    for (size_t i = 0; i < call.args.npos; ++i) fakes.push_back(fake(call.args[i]));
    std::vector<std::pair<std::string, Value>> kw;
    if (call.args.kw)
      for (const auto& [k, v] : *call.args.kw) kw.emplace_back(k, fake(v));
    return run_meta(CallArgs{fakes.data(), fakes.size(), kw.empty() ? nullptr : &kw});
  }
  bool is_traced_tensor(const Value& v) const override { return v.is(ObjKind::Tensor); }
  Value inspect_tensor(VM&, const Value& v) override { return fake(v); }
  [[noreturn]] void graph_break(VM&, BreakInfo info) override { throw GraphBreakSignal{std::move(info)}; }
  void note_mutation(VM&, const Value&) override {}

 private:
  static Value fake(const Value& v) {
    if (!v.is(ObjKind::Tensor) || v.as<TensorObj>()->t.is_meta()) return v;
    const Tensor& t = v.as<TensorObj>()->t;
    auto f = make<TensorObj>(Tensor::meta_strided(t.sizes(), t.strides(), t.dtype()));
    f->requires_grad = v.as<TensorObj>()->requires_grad;
    return Value(f);
  }
};

// Defines the functions in `source`, then calls `fn` on torch.ones(shape) under a RecordingTracer.
struct Traced {
  std::vector<std::string> targets;
  Value result;
  std::optional<BreakInfo> brk;
};
Traced trace(const std::string& source, const std::string& fn, Shape shape) {
  VM vm;
  int code = 0;
  Status s = vm.run_source(source, "prog.py", &code);
  if (!s.ok()) qFatal("%s", s.to_string().c_str());
  RecordingTracer tracer;
  Traced out;
  Value f = *vm.module("__main__")->dict->find_str(fn);
  Value x = tensor_value(Tensor::full(shape, Scalar(1.0), DType::Float32));
  vm.tracer = &tracer;
  try {
    out.result = vm.call(f, ValueVec{x});
  } catch (GraphBreakSignal& b) {
    out.brk = b.info;
  }
  vm.tracer = nullptr;
  out.targets = tracer.targets;
  return out;
}

}  // namespace

class TestPythonTorch : public QObject {
  Q_OBJECT

 private slots:
  // s02 (the PyTorch 2.0 introduction's example): torch.compile without capture
  // returns the module, so this is the eager value, which PyTorch's compiled
  // run printed too.
  // A sum over a GEMM printed to full precision: its last digits follow the
  // BLAS kernel OpenBLAS picks for the CPU (a generic one where it cannot name
  // the model), so it is compared to PyTorch's within 1e-6.
  void s02_linear_relu_eager() {
    std::string dir = kiln::test::reference_dir();
    Run r = run(read_file(dir + "/programs/s02_linear_relu.py"));
    QCOMPARE(r.exit, 0);
    QString got = QString::fromStdString(r.out).trimmed();
    QString want = QString::fromStdString(read_file(dir + "/logs/s02_linear_relu/stdout.log")).trimmed();
    QVERIFY2(kiln::test::same_printed_line(got, want, 1e-6), qPrintable(got + " vs " + want));
  }

  // s03's first part: each function compiled (here: run eagerly) and summed.
  void s03_graph_breaks_eager() {
    std::string dir = kiln::test::reference_dir();
    std::string program = read_file(dir + "/programs/s03_graph_breaks.py");
    size_t cut = program.find("for fn in (f_print, f_data_dep, f_item, f_explicit, net):");
    QVERIFY(cut != std::string::npos);
    Run r = run(program.substr(0, cut));
    QCOMPARE(r.exit, 0);
    QStringList got = QString::fromStdString(r.out).split('\n');
    QStringList want = QString::fromStdString(read_file(dir + "/logs/s03_graph_breaks/stdout.log")).split('\n');
    QCOMPARE(got.size(), 8);  // seven lines and the empty rest
    for (int i = 0; i < 7; ++i) {
      if (got[i] == want[i]) continue;
      // Known gap in the eager kernels, not in the bindings: sin/cos differ by an
      // ulp from SLEEF's; f_print and f_explicit sum 128 such values. f_item's
      // sums follow ATen's eager order (torch 1.13 eager prints Kiln's
      // 0.8703398108482361); the reference ran them in Inductor's kernel.
      QVERIFY2(got[i].startsWith("f_print ") || got[i].startsWith("f_explicit ") || got[i].startsWith("f_item "),
               qPrintable(got[i] + " vs " + want[i]));
      QStringList g = got[i].split(' '), w = want[i].split(' ');
      QCOMPARE(g[0], w[0]);
      QVERIFY(std::abs(g[1].toDouble() - w[1].toDouble()) <= 1e-6 * std::abs(w[1].toDouble()));
      QEXPECT_FAIL("", "float sum order / sin-cos ulps of the eager kernels (see above)", Continue);
      QCOMPARE(got[i], want[i]);
    }
  }

  void tensors_print_as_pytorch() {
    expect_output(
        "import torch\n"
        "x = torch.arange(6.0).reshape(2, 3)\n"
        "print(x)\n"
        "print(x.shape, x.dtype, x.device, repr(x.device), x.ndim, x.numel(), x.size(1), x.stride())\n"
        "print(x[1], x[:, 0], x[0, 1].item(), x.tolist())\n"
        "print((x * 2 + 1).sum(), -x[0], x @ x.T)\n"
        "print(torch.ones(2, 3).max(1))\n"
        "print(f'{x.sum():.3f}', f'{torch.tensor(3):4d}', f'{x[0]}')\n",
        "tensor([[0., 1., 2.],\n        [3., 4., 5.]])\n"
        "torch.Size([2, 3]) torch.float32 cpu device(type='cpu') 2 6 3 (3, 1)\n"
        "tensor([3., 4., 5.]) tensor([0., 3.]) 1.0 [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]\n"
        "tensor(36.) tensor([-0., -1., -2.]) tensor([[ 5., 14.],\n        [14., 50.]])\n"
        "torch.return_types.max(\nvalues=tensor([1., 1.]),\nindices=tensor([0, 0]))\n"
        "15.000    3 tensor([0., 1., 2.])\n");
  }

  void tensor_mutation_and_iteration() {
    expect_output(
        "import torch\n"
        "x = torch.zeros(2, 3)\n"
        "x[0] = 1.0\n"
        "x[1, 1:] = torch.tensor([2.0, 3.0])\n"
        "x += 1\n"
        "for row in x:\n"
        "    print(row)\n"
        "print(len(x), bool(x[0, 0] > 1), int(x[1, 2]), float(x[0, 0]))\n"
        "print(x.float() is x, x.contiguous() is x, isinstance(x, torch.Tensor), type(x).__name__)\n",
        "tensor([2., 2., 2.])\ntensor([1., 3., 4.])\n"
        "2 True 4 2.0\n"
        "True True True Tensor\n");
  }

  // out= on torch functions (resized when empty, a (values, indices) tuple,
  // PyTorch's cast and autograd errors), Dropout1d/2d/3d with and without a
  // batch dim (one draw per channel), and a range as an index. Expected: what
  // Debian's torch 1.13 prints for the same program.
  void out_arguments_dropout_nd_range_index() {
    expect_output(
        "import torch\n"
        "t = torch.arange(6.0).reshape(2, 3)\n"
        "y3 = torch.rand_like(t @ t.T)\n"
        "r = torch.matmul(t, t.T, out=y3)\n"
        "print(r is y3, y3)\n"
        "z = torch.empty(0)\n"
        "torch.mul(t, t, out=z)\n"
        "print(z)\n"
        "v = torch.empty(2)\n"
        "i = torch.empty(2, dtype=torch.long)\n"
        "print(torch.max(t, 1, out=(v, i)), v, i)\n"
        "try:\n"
        "    torch.add(t, t, out=torch.zeros(2, 3, dtype=torch.long))\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
        "try:\n"
        "    torch.mul(torch.ones(2, requires_grad=True), 2, out=torch.empty(2))\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
        "torch.manual_seed(0)\n"
        "d = torch.nn.Dropout2d(0.5)\n"
        "print(d(torch.ones(4, 3)), torch.nn.Dropout1d(0.5)(torch.ones(3, 4)), torch.nn.Dropout3d(0.5)(torch.ones(2, 2, 1, 1)).flatten())\n"
        "print(isinstance(d, torch.nn.Dropout), d, torch.nn.Dropout1d(0.2, inplace=True))\n"
        "x_ = torch.zeros(3, 4)\n"
        "x_[range(3), torch.tensor([0, 2, 3])] = 5.0\n"
        "print(x_, x_[range(0, 3, 2)])\n",
        "True tensor([[ 5., 14.],\n"
        "        [14., 50.]])\n"
        "tensor([[ 0.,  1.,  4.],\n"
        "        [ 9., 16., 25.]])\n"
        "torch.return_types.max_out(\n"
        "values=tensor([2., 5.]),\n"
        "indices=tensor([2, 2])) tensor([2., 5.]) tensor([2, 2])\n"
        "result type Float can't be cast to the desired output type Long\n"
        "mul(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.\n"
        "tensor([[0., 0., 2.],\n"
        "        [0., 0., 0.],\n"
        "        [2., 2., 0.],\n"
        "        [2., 2., 2.]]) tensor([[2., 2., 2., 2.],\n"
        "        [0., 0., 0., 0.],\n"
        "        [2., 2., 2., 2.]]) tensor([2., 2., 2., 2.])\n"
        "False Dropout2d(p=0.5, inplace=False) Dropout1d(p=0.2, inplace=True)\n"
        "tensor([[5., 0., 0., 0.],\n"
        "        [0., 0., 5., 0.],\n"
        "        [0., 0., 0., 5.]]) tensor([[5., 0., 0., 0.],\n"
        "        [0., 0., 0., 5.]])\n");
  }

  // torch.FloatTensor and the other legacy constructors (data, sizes, a
  // torch.Size, none, an alias of a tensor of their dtype), as Debian's torch
  // 1.13 prints them.
  void legacy_tensor_constructors() {
    expect_output(
        "import torch\n"
        "a = torch.FloatTensor([[1, 2], [3, 4]])\n"
        "b = torch.LongTensor([3, 1, 2])\n"
        "c = torch.FloatTensor(2, 3).zero_()\n"
        "d = torch.ByteTensor(torch.Size([2])).zero_()\n"
        "print(a, a.dtype, b, b.dtype, c.shape, c.dtype, d.dtype, torch.FloatTensor().shape, torch.DoubleTensor([0.5]).dtype)\n"
        "print(torch.FloatTensor(a) is a, torch.BoolTensor([True, False]))\n",
        "tensor([[1., 2.],\n"
        "        [3., 4.]]) torch.float32 tensor([3, 1, 2]) torch.int64 torch.Size([2, 3]) torch.float32 torch.uint8 torch.Size([0]) torch.float64\n"
        "False tensor([ True, False])\n");
  }

  // Module reprs, PyTorch 2.11 (container compression included).
  void module_repr() {
    expect_output(
        "import torch.nn as nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.l1 = nn.Linear(16, 32)\n"
        "        self.act = nn.GELU()\n"
        "        self.seq = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2))\n"
        "        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)] + [nn.Tanh()])\n"
        "        self.d = nn.ModuleDict({'a': nn.Dropout(0.1), 'b': nn.Identity()})\n"
        "print(Net())\n"
        "for m in [nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.Conv2d(3, 8, (3, 5), padding='same'),\n"
        "          nn.Conv2d(4, 8, 3, groups=2, dilation=2, padding_mode='reflect'), nn.Conv1d(2, 4, 3),\n"
        "          nn.LayerNorm(32), nn.LayerNorm([4, 8], elementwise_affine=False), nn.Embedding(10, 3, padding_idx=0),\n"
        "          nn.GELU('tanh'), nn.Softmax(dim=-1), nn.Softmax(), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),\n"
        "          nn.LeakyReLU(0.2), nn.CrossEntropyLoss(), nn.Linear(3, 2, bias=False), nn.Sequential(),\n"
        "          nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh(), nn.ReLU()])]:\n"
        "    print(repr(m))\n",
        "Net(\n"
        "  (l1): Linear(in_features=16, out_features=32, bias=True)\n"
        "  (act): GELU(approximate='none')\n"
        "  (seq): Sequential(\n"
        "    (0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))\n"
        "    (1): BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
        "    (2): ReLU(inplace=True)\n"
        "    (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "  )\n"
        "  (blocks): ModuleList(\n"
        "    (0-2): 3 x Linear(in_features=4, out_features=4, bias=True)\n"
        "    (3): Tanh()\n"
        "  )\n"
        "  (d): ModuleDict(\n"
        "    (a): Dropout(p=0.1, inplace=False)\n"
        "    (b): Identity()\n"
        "  )\n"
        ")\n"
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)\n"
        "Conv2d(3, 8, kernel_size=(3, 5), stride=(1, 1), padding=same)\n"
        "Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), dilation=(2, 2), groups=2, padding_mode=reflect)\n"
        "Conv1d(2, 4, kernel_size=(3,), stride=(1,))\n"
        "LayerNorm((32,), eps=1e-05, elementwise_affine=True)\n"
        "LayerNorm((4, 8), eps=1e-05, elementwise_affine=False)\n"
        "Embedding(10, 3, padding_idx=0)\n"
        "GELU(approximate='tanh')\n"
        "Softmax(dim=-1)\n"
        "Softmax(dim=None)\n"
        "AdaptiveAvgPool2d(output_size=(1, 1))\n"
        "Flatten(start_dim=1, end_dim=-1)\n"
        "LeakyReLU(negative_slope=0.2)\n"
        "CrossEntropyLoss()\n"
        "Linear(in_features=3, out_features=2, bias=False)\n"
        "Sequential()\n"
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n  (3): ReLU()\n)\n");
  }

  // Seeded initialisation draws PyTorch 2.11's numbers.
  void seeded_layers_match_pytorch() {
    expect_output(
        "import torch\nimport torch.nn as nn\n"
        "torch.manual_seed(0)\n"
        "l = nn.Linear(4, 3)\n"
        "print(l.weight)\nprint(l.bias)\nprint(l(torch.ones(2, 4)))\n"
        "c = nn.Conv2d(2, 3, 3)\n"
        "print(c.weight[0, 0])\nprint(c.bias)\n"
        "e = nn.Embedding(5, 3, padding_idx=1)\nprint(e.weight)\n"
        "bn = nn.BatchNorm2d(3)\n"
        "y = bn(torch.randn(2, 3, 4, 4))\n"
        "print(bn.running_mean, bn.running_var, bn.num_batches_tracked)\n"
        "bn.eval()\nprint(bn(torch.ones(1, 3, 1, 1)))\n"
        "print(torch.randn(3))\n"
        "ln = nn.LayerNorm(4)\nprint(ln(torch.arange(8.0).reshape(2, 4)))\n"
        "print(nn.init.xavier_uniform_(torch.empty(2, 3)))\n"
        "print(nn.init.kaiming_normal_(torch.empty(2, 3)))\n"
        "with torch.no_grad():\n    print(l(torch.ones(4)))\n",
        "Parameter containing:\n"
        "tensor([[-0.0037,  0.2682, -0.4115, -0.3680],\n"
        "        [-0.1926,  0.1341, -0.0099,  0.3964],\n"
        "        [-0.0444,  0.1323, -0.1511, -0.0983]], requires_grad=True)\n"
        "Parameter containing:\n"
        "tensor([-0.4777, -0.3311, -0.2061], requires_grad=True)\n"
        "tensor([[-0.9927, -0.0031, -0.3676],\n"
        "        [-0.9927, -0.0031, -0.3676]], grad_fn=<AddmmBackward0>)\n"
        "tensor([[ 0.0087,  0.0932,  0.1414],\n"
        "        [-0.1598, -0.1026,  0.0856],\n"
        "        [ 0.1957, -0.0485,  0.1764]], grad_fn=<SelectBackward0>)\n"
        "Parameter containing:\n"
        "tensor([ 0.2263, -0.1816, -0.0864], requires_grad=True)\n"
        "Parameter containing:\n"
        "tensor([[-1.0297, -0.5008,  0.2734],\n"
        "        [ 0.0000,  0.0000,  0.0000],\n"
        "        [-0.0075, -0.9145, -1.0886],\n"
        "        [-0.2666,  0.1894, -0.2190],\n"
        "        [ 2.0576, -0.0354,  0.0627]], requires_grad=True)\n"
        "tensor([-0.0103, -0.0144,  0.0390]) tensor([0.9668, 0.9904, 1.0309]) tensor(1)\n"
        "tensor([[[[1.0275]],\n\n         [[1.0193]],\n\n         [[0.9464]]]], grad_fn=<NativeBatchNormBackward0>)\n"
        "tensor([-0.7663,  1.3441,  2.3832])\n"
        "tensor([[-1.3416, -0.4472,  0.4472,  1.3416],\n"
        "        [-1.3416, -0.4472,  0.4472,  1.3416]],\n"
        "       grad_fn=<NativeLayerNormBackward0>)\n"
        "tensor([[-0.6361,  0.7667, -0.3938],\n"
        "        [ 0.9240,  0.3961,  0.1387]])\n"
        "tensor([[ 0.9471, -0.1793,  1.6273],\n"
        "        [-0.2904,  0.1619,  1.2795]])\n"
        "tensor([-0.9927, -0.0031, -0.3676])\n");
  }

  // nn.init's generator= draws from that generator, as PyTorch 2.x's init
  // functions pass it to Tensor.uniform_/normal_ (once accepted and ignored:
  // llm.c's weights came from the global generator, silently).
  void init_functions_draw_from_their_generator() {
    expect_output(
        "import torch\nimport torch.nn as nn\n"
        "torch.manual_seed(0)\ng = torch.Generator()\n"
        "def fresh():\n    g.manual_seed(42)\n    return g\n"
        "def same(a, b):\n    return torch.equal(a, b)\n"
        "shape = (3, 4)\n"
        "print(same(nn.init.uniform_(torch.empty(shape), -1, 1, generator=fresh()), torch.empty(shape).uniform_(-1, 1, generator=fresh())))\n"
        "print(same(nn.init.normal_(torch.empty(shape), 0, 0.02, generator=fresh()), torch.empty(shape).normal_(0, 0.02, generator=fresh())))\n"
        "print(same(nn.init.xavier_uniform_(torch.empty(shape), generator=fresh()), nn.init.uniform_(torch.empty(shape), -(6 / 7) ** 0.5, (6 / 7) ** 0.5, generator=fresh())))\n"
        "print(same(nn.init.xavier_normal_(torch.empty(shape), generator=fresh()), torch.empty(shape).normal_(0, (2 / 7) ** 0.5, generator=fresh())))\n"
        "print(same(nn.init.kaiming_uniform_(torch.empty(shape), a=5 ** 0.5, generator=fresh()), nn.init.kaiming_uniform_(torch.empty(shape), a=5 ** 0.5, generator=fresh())))\n"
        "print(same(nn.init.kaiming_normal_(torch.empty(shape), generator=fresh()), torch.empty(shape).normal_(0, (2 / 4) ** 0.5, generator=fresh())))\n"
        "print(same(nn.init.trunc_normal_(torch.empty(shape), generator=fresh()), nn.init.trunc_normal_(torch.empty(shape), generator=fresh())))\n"
        "print(same(nn.init.orthogonal_(torch.empty(shape), generator=fresh()), nn.init.orthogonal_(torch.empty(shape), generator=fresh())))\n"
        "a = torch.randn(2)\ntorch.manual_seed(0)\nprint(torch.equal(a, torch.randn(2)))\n",
        "True\nTrue\nTrue\nTrue\nTrue\nTrue\nTrue\nTrue\nTrue\n");
  }

  void state_dict_and_modes() {
    expect_output(
        "import torch\nimport torch.nn as nn\n"
        "net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))\n"
        "sd = net.state_dict()\n"
        "print(list(sd.keys()))\n"
        "print(net.load_state_dict(sd))\n"
        "print(net.load_state_dict({k: v for k, v in sd.items() if k != '1.weight'}, strict=False))\n"
        "print(len(list(net.parameters())), [n for n, _ in net.named_parameters()], [n for n, _ in net.named_buffers()])\n"
        "print([n for n, _ in net.named_modules()])\n"
        "print(net.training, net.eval().training, net[1].training, net.train().training)\n"
        "print(len(net), type(net[0]).__name__, isinstance(net[0].weight, nn.Parameter))\n",
        "['0.weight', '0.bias', '1.weight', '1.bias', '1.running_mean', '1.running_var', '1.num_batches_tracked']\n"
        "<All keys matched successfully>\n"
        "_IncompatibleKeys(missing_keys=['1.weight'], unexpected_keys=[])\n"
        "4 ['0.weight', '0.bias', '1.weight', '1.bias'] ['1.running_mean', '1.running_var', '1.num_batches_tracked']\n"
        "['', '0', '1']\n"
        "True False False True\n"
        "2 Linear True\n");
  }

  void load_state_dict_errors() {
    expect_error(
        "import torch\nimport torch.nn as nn\n"
        "net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))\n"
        "sd = net.state_dict()\n"
        "sd.pop('0.bias')\nsd['extra'] = torch.ones(1)\nsd['0.weight'] = torch.ones(3, 3)\n"
        "net.load_state_dict(sd)\n",
        1,
        "RuntimeError: Error(s) in loading state_dict for Sequential:\n"
        "\tMissing key(s) in state_dict: \"0.bias\". \n"
        "\tUnexpected key(s) in state_dict: \"extra\". \n"
        "\tsize mismatch for 0.weight: copying a param with shape torch.Size([3, 3]) from checkpoint, the shape in "
        "current model is torch.Size([3, 2]).\n");
  }

  void grad_mode_and_grad_fn() {
    expect_output(
        "import torch\n"
        "x = torch.ones(2, requires_grad=True)\n"
        "y = x * 2\n"
        "print(y, y.requires_grad, y.is_leaf, x.is_leaf)\n"
        "with torch.no_grad():\n"
        "    z = x * 2\n"
        "    print(torch.is_grad_enabled())\n"
        "print(z, z.requires_grad, torch.is_grad_enabled())\n"
        "print(x[0], x // 2, (x * 1).sum(), x.detach())\n",
        "tensor([2., 2.], grad_fn=<MulBackward0>) True False True\n"
        "False\n"
        "tensor([2., 2.]) False True\n"
        "tensor(1., grad_fn=<SelectBackward0>) tensor([0., 0.], grad_fn=<NotImplemented>) "
        "tensor(2., grad_fn=<SumBackward0>) tensor([1., 1.])\n");
  }

  void errors_read_as_pytorch() {
    expect_error("import torch.nn as nn\nimport torch\nnn.Linear(4, 3)(torch.ones(2, 5))\n", 1,
                 "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x5 and 4x3)");
    expect_error("import torch\nlen(torch.tensor(1.0))\n", 1, "TypeError: len() of a 0-d tensor");
    expect_error("import torch\nint(torch.ones(3))\n", 1,
                 "ValueError: only one element tensors can be converted to Python scalars");
    expect_error("import torch\ntorch.ones(3).item()\n", 1,
                 "RuntimeError: a Tensor with 3 elements cannot be converted to Scalar");
    expect_error("import torch\nif torch.ones(3):\n    pass\n", 1,
                 "RuntimeError: Boolean value of Tensor with more than one value is ambiguous");
    expect_error("import torch\ntorch.ones(2, requires_grad=True).add_(1)\n", 1,
                 "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.");
    expect_error("import torch\nf'{torch.ones(1):.2f}'\n", 1,
                 "TypeError: unsupported format string passed to Tensor.__format__");
    expect_error("import torch.nn as nn\nnn.Linear(2, 2).foo\n", 1, "AttributeError: 'Linear' object has no attribute 'foo'");
    expect_error("import torch\ntorch.ones(2) + 'a'\n", 1, "TypeError: unsupported operand type(s) for +: 'Tensor' and 'str'");
    expect_error("import torch\ntorch.ones(2).size(3)\n", 1,
                 "IndexError: Dimension out of range (expected to be in range of [-1, 0], but got 3)");
    expect_error("import torch.nn as nn\nimport torch\nnn.BatchNorm2d(3)(torch.ones(2, 3))\n", 1,
                 "ValueError: expected 4D input (got 2D input)");
    expect_error("import torch.nn as nn\nnn.Module()(1)\n", 1,
                 "NotImplementedError: Module [Module] is missing the required \"forward\" function");
    expect_error("import torch\nimport torch.nn as nn\nm = nn.Linear(2, 2)\nm.weight = torch.ones(2)\n", 1,
                 "TypeError: cannot assign 'torch.FloatTensor' as parameter 'weight' (torch.nn.Parameter or None expected)");
    expect_error("import torch\ntorch.compile(mode='fast')\n", 1,
                 "RuntimeError: Unrecognized mode=fast, should be one of: default, lite, reduce-overhead, "
                 "max-autotune-no-cudagraphs, max-autotune");
    // Outside the subset: exit code 3.
    expect_error("import torch\ntorch.stft\n", 3, "module 'torch' has no attribute 'stft' (PyTorch has it; not in Kiln's subset)");
    // A name PyTorch lacks as well is the program's error, as under PyTorch.
    expect_error("import torch\ntorch.frobnicate\n", 1, "module 'torch' has no attribute 'frobnicate'");
    expect_error("import torch\ntorch.ones(1).cuda()\n", 1, "CUDA device is not available here");
  }

  // F.affine_grid / F.grid_sample: PyTorch 2.11's checks (exception types
  // and texts, from torch 1.13, whose functional.py says the same), the
  // align_corners warnings once per calling line, the refusals of
  // volumetric sampling (exit 3).
  void spatial_transformer_arguments() {
    expect_output(R"(import torch
import torch.nn.functional as F
def t(name, f):
    try:
        r = f()
        print(name, "OK", tuple(r.shape))
    except Exception as e:
        print(name, type(e).__name__, str(e))
x = torch.randn(2, 3, 4, 5); g = torch.rand(2, 6, 7, 2) * 2 - 1; th = torch.randn(2, 2, 3)
t("mode", lambda: F.grid_sample(x, g, mode="linear", align_corners=False))
t("padding", lambda: F.grid_sample(x, g, padding_mode="reflect", align_corners=False))
t("3d", lambda: F.grid_sample(torch.randn(2, 3, 4), torch.rand(2, 6, 1), align_corners=False))
t("dtype", lambda: F.grid_sample(x, g.double(), align_corners=False))
t("kw", lambda: F.grid_sample(input=x, grid=g, mode="nearest", padding_mode="border", align_corners=True))
t("bicubic", lambda: F.grid_sample(x, g, mode="bicubic", padding_mode="reflection", align_corners=False))
t("int theta", lambda: F.affine_grid(th.long(), (2, 1, 4, 5), align_corners=False))
t("theta", lambda: F.affine_grid(torch.randn(2, 3, 3), (2, 1, 4, 5), align_corners=False))
t("size", lambda: F.affine_grid(th, (2, 1, 4), align_corners=False))
t("zero", lambda: F.affine_grid(th, [2, 1, 0, 5], align_corners=False))
t("batch", lambda: F.affine_grid(th, x.size(), align_corners=True))
t("generator", lambda: torch.affine_grid_generator(th, (2, 1, 4), False))
grid = F.affine_grid(th.requires_grad_(), (2, 1, 4, 5), align_corners=False)
print(F.grid_sample(x, grid, align_corners=False).grad_fn.name(), grid.grad_fn.name())
for i in range(2):
    F.grid_sample(x, g)
)",
                  "mode ValueError nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
                  "'bicubic', but got: 'linear'\n"
                  "padding ValueError nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                  "'reflection', but got: 'reflect'\n"
                  "3d RuntimeError grid_sampler(): expected 5D input and grid with same number of dimensions, but got "
                  "input with sizes [2, 3, 4] and grid with sizes [2, 6, 1]\n"
                  "dtype RuntimeError expected scalar type Float but found Double\n"
                  "kw OK (2, 3, 6, 7)\n"
                  "bicubic OK (2, 3, 6, 7)\n"
                  "int theta ValueError Expected theta to have floating point type, but got torch.int64\n"
                  "theta ValueError Expected a batch of 2D affine matrices of shape Nx2x3 for size (2, 1, 4, 5). Got "
                  "torch.Size([2, 3, 3]).\n"
                  "size NotImplementedError affine_grid only supports 4D and 5D sizes, for 2D and 3D affine "
                  "transforms, respectively. Got size (2, 1, 4).\n"
                  "zero ValueError Expected non-zero, positive output size. Got [2, 1, 0, 5]\n"
                  "batch OK (2, 4, 5, 2)\n"
                  "generator RuntimeError AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.\n"
                  "GridSampler2DBackward0 AffineGridGeneratorBackward0\n");
    Run r = run("import torch\nimport torch.nn.functional as F\nth = torch.zeros(1, 2, 3)\n"
                "for i in range(3):\n    g = F.affine_grid(th, (1, 1, 2, 2))\n"
                "F.affine_grid(th, (1, 1, 1, 3), align_corners=True)\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(QString::fromStdString(r.err),
             QString("prog.py:5: UserWarning: Default grid_sample and affine_grid behavior has changed to "
                     "align_corners=False since 1.3.0. Please specify align_corners=True if the old behavior is "
                     "desired. See the documentation of grid_sample for details.\n"
                     "  g = F.affine_grid(th, (1, 1, 2, 2))\n"
                     "prog.py:6: UserWarning: Since version 1.3.0, affine_grid behavior has changed for unit-size "
                     "grids when align_corners=True. This is not an intended use case of affine_grid. See the "
                     "documentation of affine_grid for details.\n"
                     "  F.affine_grid(th, (1, 1, 1, 3), align_corners=True)\n"));
    const char* x = "import torch\nimport torch.nn.functional as F\nx = torch.ones(1, 1, 2, 2)\n";
    expect_error(std::string(x) + "F.grid_sample(torch.ones(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3))\n", 3,
                 "grid_sampler_3d (F.grid_sample on 5-D volumetric input) is not supported by Kiln");
    expect_error(std::string(x) + "F.affine_grid(torch.zeros(1, 3, 4), (1, 1, 2, 2, 2), align_corners=False)\n", 3,
                 "5-D sizes (volumetric grids, F.affine_grid with 3-D affine matrices) are not supported by Kiln");
  }

  void compile_without_capture_returns_the_function() {
    expect_output(
        "import torch\n"
        "@torch.compile\ndef f(x):\n    return x + 1\n"
        "@torch.compile(fullgraph=True, mode='max-autotune')\ndef g(x):\n    return x * 2\n"
        "print(f(torch.ones(1)), g(torch.ones(1)), torch._dynamo.list_backends())\n"
        "torch._dynamo.graph_break()\ntorch._dynamo.reset()\n"
        "print(torch.cuda.is_available(), torch.cuda.device_count(), torch.get_default_dtype())\n",
        "tensor([2.]) tensor([2.]) ['cudagraphs', 'inductor', 'openxla', 'tvm']\n"
        "False 0 torch.float32\n");
  }

  // torch.lu and Tensor.lu are deprecated in PyTorch 2: the first call in a
  // program warns (ATen's TORCH_WARN_ONCE), through the warnings module so
  // filters silence it; torch.linalg.lu_factor never warns.
  void torch_lu_warns_once() {
    Run r = run("import torch\nA = torch.eye(2)\nprint(torch.linalg.lu_factor(A)[1])\n"
                "for i in range(2):\n    LU, piv = torch.lu(A)\nLU, piv = A.lu()\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(QString::fromStdString(r.err),
             QString("prog.py:5: UserWarning: torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                     "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
                     "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\n"
                     "LU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
                     "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\nshould be replaced with\n"
                     "LU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)\n"
                     "  LU, piv = torch.lu(A)\n"));
    Run quiet = run("import torch, warnings\nwarnings.simplefilter('ignore')\nLU, piv = torch.eye(2).lu()\n");
    QCOMPARE(quiet.exit, 0);
    QCOMPARE(QString::fromStdString(quiet.err), QString());
  }

  // F.dropout2d warns off 4-D input as PyTorch 2.11's functional.py does (at the caller's
  // line, once per line), then drops channels of the input taken as batched.
  void dropout2d_warns_off_4d_input() {
    Run r = run("import torch\nimport torch.nn.functional as F\nfor i in range(2):\n"
                "    y = F.dropout2d(torch.ones(4, 6), 0.5)\n"
                "z = F.dropout2d(torch.ones(2, 3, 4), 0.5, training=False)\n"
                "print(y.shape, z.shape, F.dropout2d(torch.ones(1, 2, 3, 3), 0.0).sum())\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(QString::fromStdString(r.out), QString("torch.Size([4, 6]) torch.Size([2, 3, 4]) tensor(18.)\n"));
    QCOMPARE(QString::fromStdString(r.err),
             QString("prog.py:4: UserWarning: dropout2d: Received a 2-D input to dropout2d, which is deprecated and "
                     "will result in an error in a future release. To retain the behavior and silence this warning, "
                     "please use dropout instead. Note that dropout2d exists to provide channel-wise dropout on "
                     "inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                     "3D or 4D inputs).\n"
                     "  y = F.dropout2d(torch.ones(4, 6), 0.5)\n"
                     "prog.py:5: UserWarning: dropout2d: Received a 3D input to dropout2d and assuming that "
                     "channel-wise 1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
                     "is the channel dim. This behavior will change in a future release to interpret the input as "
                     "one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                     "behavior, please switch to using dropout1d instead.\n"
                     "  z = F.dropout2d(torch.ones(2, 3, 4), 0.5, training=False)\n"));
    expect_error("import torch\nimport torch.nn.functional as F\nF.dropout2d(torch.ones(1, 2, 2, 2), 1.5)\n", 1,
                 "ValueError: dropout probability has to be between 0 and 1, but got 1.5");
  }

  // An instance's __module__ is its class's (nn.Module subclasses' too);
  // torch._C._log_api_usage_once is PyTorch's no-op without a logger.
  void module_names_and_no_op_hooks() {
    expect_output("import torch\nclass A:\n    pass\n"
                  "print(A().__module__, torch.nn.Linear(1, 1).__module__, torch.nn.ReLU().__module__)\n"
                  "print(torch._C._log_api_usage_once('python.nn_module'))\n",
                  "__main__ torch.nn.modules.linear torch.nn.modules.activation\nNone\n");
    expect_error("import torch\ntorch._C._log_api_usage_once(1)\n", 1, "TypeError: _log_api_usage_once(): incompatible");
  }

  // One process loads the data: get_worker_info() is None, as in PyTorch's main process.
  // Annotations are evaluated at def time; one naming what PyTorch has and
  // Kiln's subset lacks (torch.distributed.ProcessGroup, torch.types.Number)
  // becomes its text, a forward reference, so the def still runs as in CPython.
  void annotations_naming_outside_the_subset_are_texts() {
    expect_output("import torch\nfrom typing import Optional\n"
                  "def f(x: torch.Tensor, g: Optional[torch.distributed.ProcessGroup] = None, n: torch.types.Number = 1) -> torch.Tensor:\n"
                  "    return x * n\n"
                  "print(f(torch.ones(1), n=2), f.__annotations__['n'], f.__annotations__['x'] is torch.Tensor)\n",
                  "tensor([2.]) torch.types.Number True\n");
  }

  void get_worker_info_is_none() {
    expect_output("import torch\nfrom torch.utils.data import get_worker_info\n"
                  "print(get_worker_info(), torch.utils.data.get_worker_info())\n", "None None\n");
  }

  // The activation modules PyTorch 2.11 has beside ReLU & co., over the F.* functions: repr
  // as PyTorch's (floats for Softplus' defaults, as 2.11 declares them), values as PyTorch's
  // (checked against PyTorch; Softplus() printed 1.13's ints there), Softmax2d's 2.11 error.
  void activation_modules() {
    expect_output(
        "import torch\n"
        "import torch.nn as nn\n"
        "x = torch.tensor([-4.0, -1.0, -0.25, 0.5, 2.0, 4.0])\n"
        "for m in [nn.Threshold(0.1, 20, True), nn.RReLU(0.1, 0.3).eval(), nn.Hardsigmoid(True), nn.Hardswish(), nn.Mish(True),\n"
        "          nn.ELU(0.5, True), nn.CELU(), nn.SELU(), nn.GLU(), nn.Hardshrink(), nn.LogSigmoid(), nn.Softplus(2, 10),\n"
        "          nn.Softshrink(), nn.Softsign(), nn.Tanhshrink(), nn.Softmin(0)]:\n"
        "    print(m, m(x.clone()))\n"
        "print(nn.Softmax2d()(x.reshape(2, 3, 1)).flatten(), nn.Softplus(), type(nn.Mish()).__module__)\n",
        "Threshold(threshold=0.1, value=20, inplace=True) tensor([20.0000, 20.0000, 20.0000,  0.5000,  2.0000,  4.0000])\n"
        "RReLU(lower=0.1, upper=0.3) tensor([-0.8000, -0.2000, -0.0500,  0.5000,  2.0000,  4.0000])\n"
        "Hardsigmoid() tensor([0.0000, 0.3333, 0.4583, 0.5833, 0.8333, 1.0000])\n"
        "Hardswish() tensor([-0.0000, -0.3333, -0.1146,  0.2917,  1.6667,  4.0000])\n"
        "Mish(inplace=True) tensor([-0.0726, -0.3034, -0.1299,  0.3752,  1.9440,  3.9974])\n"
        "ELU(alpha=0.5, inplace=True) tensor([-0.4908, -0.3161, -0.1106,  0.5000,  2.0000,  4.0000])\n"
        "CELU(alpha=1.0) tensor([-0.9817, -0.6321, -0.2212,  0.5000,  2.0000,  4.0000])\n"
        "SELU() tensor([-1.7259, -1.1113, -0.3889,  0.5254,  2.1014,  4.2028])\n"
        "GLU(dim=-1) tensor([-2.4898, -0.8808, -0.2455])\n"
        "Hardshrink(0.5) tensor([-4., -1.,  0.,  0.,  2.,  4.])\n"
        "LogSigmoid() tensor([-4.0181, -1.3133, -0.8259, -0.4741, -0.1269, -0.0181])\n"
        "Softplus(beta=2, threshold=10) tensor([1.6770e-04, 6.3464e-02, 2.3704e-01, 6.5663e-01, 2.0091e+00, 4.0002e+00])\n"
        "Softshrink(0.5) tensor([-3.5000, -0.5000,  0.0000,  0.0000,  1.5000,  3.5000])\n"
        "Softsign() tensor([-0.8000, -0.5000, -0.2000,  0.3333,  0.6667,  0.8000])\n"
        "Tanhshrink() tensor([-3.0007, -0.2384, -0.0051,  0.0379,  1.0360,  3.0007])\n"
        "Softmin(dim=0) tensor([9.1977e-01, 4.5793e-02, 2.1631e-02, 1.0218e-02, 2.2799e-03, 3.0855e-04])\n"
        "tensor([0.0110, 0.0474, 0.0141, 0.9890, 0.9526, 0.9859]) Softplus(beta=1.0, threshold=20.0) torch.nn.modules.activation\n");
    expect_error("import torch\nimport torch.nn as nn\nnn.Softmax2d()(torch.ones(3))\n", 1,
                 "ValueError: Softmax2d: expected input to be 3D or 4D, got 1D instead");
  }

  void math_module() {
    expect_output(
        "import math\n"
        "print(math.pi, math.sqrt(2), math.log(8, 2), math.floor(-1.5), math.ceil(1.2), math.isclose(1.0, 1.0 + 1e-12))\n"
        "print(math.prod([1, 2, 3]), math.gcd(12, 18), math.factorial(5), math.comb(5, 2), math.inf, math.isnan(math.nan))\n",
        "3.141592653589793 1.4142135623730951 3.0 -2 2 True\n"
        "6 6 120 10 inf True\n");
    expect_error("import math\nmath.sqrt(-1)\n", 1, "ValueError: math domain error");
  }

  void safetensors_round_trip() {
    QTemporaryDir dir;
    std::string path = dir.filePath("w.safetensors").toStdString();
    expect_output(
        "import torch\nfrom safetensors.torch import save_file, load_file\n"
        "save_file({'b': torch.arange(3), 'a': torch.ones(2, 2)}, '" + path + "')\n"
        "d = load_file('" + path + "')\n"
        "print(list(d.keys()), d['a'], d['b'])\n",
        "['a', 'b'] tensor([[1., 1.],\n        [1., 1.]]) tensor([0, 1, 2])\n", dir.path().toStdString());
    expect_error("from safetensors.torch import load_file\nload_file('" + path + ".missing')\n", 1,
                 path + ".missing", dir.path().toStdString());
  }

  // While tracing, every torch call reaches the tracer with Dynamo's target names.
  void tracing_records_dynamo_targets() {
    Traced t = trace(
        "import torch\nimport torch.nn as nn\n"
        "lin = nn.Linear(4, 2)\n"
        "def f(x):\n"
        "    y = torch.sin(x) * 2 + x.sum(dim=1, keepdim=True)\n"
        "    y = lin(y)[:, 0]\n"
        "    y += 1\n"
        "    return torch.nn.functional.relu(y).view(-1), y.shape, y.dim()\n",
        "f", {3, 4});
    QVERIFY(!t.brk);
    std::vector<std::string> want = {"torch.sin", "operator.mul", "sum", "operator.add", "torch._C._nn.linear",
                                     "operator.getitem", "operator.iadd", "torch.nn.functional.relu", "view"};
    QCOMPARE(t.targets, want);
    const ValueVec& items = t.result.as<Tuple>()->items;
    QVERIFY(items[0].as<TensorObj>()->t.is_meta());
    QCOMPARE(QString::fromStdString(repr(items[1])), QString("torch.Size([3])"));
    QCOMPARE(items[2].as_int(), int64_t(1));
  }

  // F.affine_grid and F.grid_sample are Python functions Dynamo traces into:
  // the graph shows the builtins they call.
  void tracing_records_grid_sampler_builtins() {
    Traced t = trace(
        "import torch\nimport torch.nn.functional as F\n"
        "def f(x):\n"
        "    theta = torch.eye(2, 3).unsqueeze(0)\n"
        "    return F.grid_sample(x, F.affine_grid(theta, x.size(), align_corners=True), padding_mode='border',\n"
        "                         align_corners=True)\n",
        "f", {1, 2, 3, 4});
    QVERIFY(!t.brk);
    QStringList got;
    for (const std::string& target : t.targets) got << QString::fromStdString(target);
    QCOMPARE(got.join(' '), QString("torch.eye unsqueeze torch.affine_grid_generator torch.grid_sampler"));
    QCOMPARE(t.result.as<TensorObj>()->t.sizes(), (Shape{1, 2, 3, 4}));
  }

  void tracing_breaks_on_values() {
    Traced item = trace("import torch\ndef f(x):\n    return x * x.sum().item()\n", "f", {2});
    QVERIFY(item.brk);
    QCOMPARE(int(item.brk->kind), int(BreakKind::ScalarOutput));
    QCOMPARE(QString::fromStdString(item.brk->reason),
             QString("Unsupported Tensor.item() call with capture_scalar_outputs=False"));
    Traced jump = trace("import torch\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n", "f", {2});
    QVERIFY(jump.brk);
    QCOMPARE(int(jump.brk->kind), int(BreakKind::DataDependentJump));
    QCOMPARE(QString::fromStdString(jump.brk->reason), QString("generic_jump TensorVariable()"));
    Traced explicit_break = trace("import torch\ndef f(x):\n    torch._dynamo.graph_break()\n    return x\n", "f", {2});
    QVERIFY(explicit_break.brk);
    QCOMPARE(int(explicit_break.brk->kind), int(BreakKind::Explicit));
    Traced tolist = trace("import torch\ndef f(x):\n    return x.tolist()\n", "f", {2});
    QVERIFY(tolist.brk);
    QCOMPARE(int(tolist.brk->kind), int(BreakKind::ListOutput));
  }
};

QTEST_GUILESS_MAIN(TestPythonTorch)
#include "test_python_torch.moc"
