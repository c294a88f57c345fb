// Eager autograd in the interpreter (core/python/autograd.h) on Kiln's
// derivative formulas (compiler/aot/eager_autograd.h): gradients checked
// against float64 finite differences computed by the same programs, PyTorch's
// errors, and compiled regions (eager, aot_eager, decomp_eager) giving the
// gradients eager autograd gives.
#include <QtTest>

#include <string>

#include "program_run_util.h"

using namespace kiln;

namespace {

using Run = test::ProgramRun;

Run run(const std::string& source, const std::string& backend = "eager") { return test::run_program(source, backend); }

// A float64 program that defines `inputs` (tensors requiring grad) and
// `loss(*inputs)`; appended: backward, then a central finite difference for
// every element, printing the largest disagreement.
const char* kCheckGrad = R"(
def check(inputs, loss, eps=1e-6):
    out = loss(*inputs)
    out.backward()
    worst = 0.0
    with torch.no_grad():
        for x in inputs:
            flat = x.view(-1)
            g = x.grad.reshape(-1)
            for i in range(flat.numel()):
                old = flat[i].item()
                flat[i] = old + eps
                up = loss(*inputs).item()
                flat[i] = old - eps
                down = loss(*inputs).item()
                flat[i] = old
                fd = (up - down) / (2 * eps)
                worst = max(worst, abs(fd - g[i].item()) / max(1.0, abs(fd)))
    print("worst", worst)
)";

double worst_of(const Run& r) {
  size_t at = r.out.rfind("worst ");
  if (at == std::string::npos) return 1e9;
  return std::stod(r.out.substr(at + 6));
}

}  // namespace

class TestEagerAutograd : public QObject {
  Q_OBJECT

  void expect_fd(const std::string& body) {
    Run r = run(std::string("import torch\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n") + kCheckGrad + body);
    QVERIFY2(r.code == 0, (r.status.to_string() + "\n" + r.err).c_str());
    QVERIFY2(worst_of(r) < 1e-6, r.out.c_str());
  }

 private slots:
  void pointwise_and_reductions() {
    expect_fd(R"(
a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
b = torch.randn(4, dtype=torch.float64, requires_grad=True)
check([a, b], lambda a, b: ((a * b).sin() + a.exp() / (1 + b * b)).sum() + (a - b).abs().mean() + a.max())
)");
  }

  void linear_softmax_layer_norm() {
    expect_fd(R"(
x = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
w = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
b = torch.randn(3, dtype=torch.float64, requires_grad=True)
def loss(x, w, b):
    h = F.layer_norm(F.linear(x, w, b), (3,))
    return (F.log_softmax(h, dim=1) * torch.tensor([[1.0, 0.0, 2.0]], dtype=torch.float64)).sum() + F.gelu(h).sum()
check([x, w, b], loss)
)");
  }

  void views_indexing_and_joins() {
    expect_fd(R"(
x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
y = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
def loss(x, y):
    parts = torch.split(x, 3, dim=1)
    z = torch.cat([parts[0] * y, parts[1].t().t()], dim=0)
    v = z.view(2, 4, 3).transpose(0, 1)[1:, :, 1]
    return (v * v).sum() + x[torch.tensor([0, 2, 2])].sum() + torch.stack([x[0], x[3]]).prod()
check([x, y], loss)
)");
  }

  void in_place_ops_on_intermediates() {
    expect_fd(R"(
x = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
def loss(x):
    h = x * 2
    h.add_(1)
    h = F.relu(h, inplace=True)
    h += x
    h.mul_(h.detach() * 0 + 3)
    return (h * h).sum()
check([x], loss)
)");
  }

  void conv_batch_norm_pool() {
    expect_fd(R"(
x = torch.randn(2, 2, 5, 5, dtype=torch.float64, requires_grad=True)
w = torch.randn(3, 2, 3, 3, dtype=torch.float64, requires_grad=True)
g = torch.randn(3, dtype=torch.float64, requires_grad=True)
def loss(x, w, g):
    h = F.conv2d(x, w, padding=1)
    h = F.batch_norm(h, None, None, g, None, training=True)
    h = F.max_pool2d(F.relu(h), 2)
    return F.cross_entropy(F.adaptive_avg_pool2d(h, 1).flatten(1), torch.tensor([0, 2]))
check([x, w, g], loss)
)");
  }

  void accumulation_retain_graph_and_gradient_argument() {
    Run r = run(R"(
import torch
x = torch.ones(2, 2, requires_grad=True)
y = (x * 3).sum()
y.backward(retain_graph=True)
y.backward()
print(x.grad.tolist())
z = x * x
z.backward(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
print(x.grad.tolist())
x.grad = None
with torch.no_grad():
    w = x * 5
print(w.requires_grad, x.grad)
p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
loss = (p ** 2).sum()
loss.backward()
print(p.grad.tolist(), p.is_leaf, loss.is_leaf)
)");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out),
             QString("[[6.0, 6.0], [6.0, 6.0]]\n[[8.0, 10.0], [12.0, 14.0]]\nFalse None\n[2.0, 4.0] True False\n"));
  }

  // retain_grad() on intermediates fills their .grad (it was a silent no-op,
  // leaving None where PyTorch gives the gradient): through a chain, after an
  // in-place write (the gradient of the tensor's current value), accumulated
  // over two passes, and on a view (squeeze) of a node's output.
  void retain_grad_on_intermediates() {
    Run r = run(R"(
import torch
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * 2
y.retain_grad()
z = y.unsqueeze(0)
z.retain_grad()
loss = (z * z).sum()
loss.backward(retain_graph=True)
print(y.grad.tolist(), z.grad.tolist(), y.retains_grad, x.retains_grad, y.grad.requires_grad)
loss.backward()
print(y.grad.tolist())
a = x * 1
a.retain_grad()
a.add_(1)
(a * 3).sum().backward()
print(a.grad.tolist(), a.is_leaf)
x.retain_grad()
b = torch.ones(2)
try:
    b.retain_grad()
except RuntimeError as e:
    print(e)
)");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out),
             QString("[4.0, 8.0, 12.0] [[4.0, 8.0, 12.0]] True False False\n[8.0, 16.0, 24.0]\n[3.0, 3.0, 3.0] False\n"
                     "can't retain_grad on Tensor that has requires_grad=False\n"));
  }

  void pytorch_errors() {
    struct Case {
      const char* program;
      const char* message;
    } cases[] = {
        {"x = torch.randn(3, requires_grad=True)\nh = x * 2\ns = h.sin()\nh.add_(1)\ns.sum().backward()\n",
         "one of the variables needed for gradient computation has been modified by an inplace operation: "
         "[torch.FloatTensor [3]], which is output 0 of MulBackward0, is at version 1; expected version 0 instead."},
        {"x = torch.randn(3, requires_grad=True)\ny = x.exp()\ny.mul_(2)\ny.sum().backward()\n",
         "[torch.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead."},
        {"x = torch.randn(3, requires_grad=True)\ny = (x * x).sum()\ny.backward()\ny.backward()\n",
         "Trying to backward through the graph a second time"},
        {"x = torch.randn(3, requires_grad=True)\n(x * 2).backward()\n",
         "grad can be implicitly created only for scalar outputs"},
        {"x = torch.randn(3)\nx.sum().backward()\n",
         "element 0 of tensors does not require grad and does not have a grad_fn"},
        {"x = torch.randn(3, requires_grad=True)\nx.add_(1)\n",
         "a leaf Variable that requires grad is being used in an in-place operation."},
    };
    for (const Case& c : cases) {
      Run r = run(std::string("import torch\n") + c.program);
      QVERIFY2(r.code != 0, c.program);
      QVERIFY2(r.status.to_string().find(c.message) != std::string::npos, r.status.to_string().c_str());
    }
  }

  // A training step through torch.compile: every backend gives eager's
  // gradients, running statistics and losses.
  void compiled_training_step_matches_eager() {
    const std::string program = R"(
import torch
import torch.nn as nn
torch.manual_seed(0)
m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
x = torch.randn(2, 3, 8, 8)
t = torch.tensor([0, 1])
def step(x):
    return nn.functional.cross_entropy(m(x), t)
f = torch.compile(step)
for i in range(3):
    opt.zero_grad()
    loss = f(x)
    loss.backward()
    opt.step()
    print(loss.item(), m[0].weight.grad.sum().item(), m[1].running_var.sum().item())
)";
    Run eager = run(program, "eager");
    QVERIFY2(eager.code == 0, (eager.status.to_string() + eager.err).c_str());
    QCOMPARE(std::count(eager.out.begin(), eager.out.end(), '\n'), 3L);
    for (const char* backend : {"aot_eager", "decomp_eager"}) {
      Run r = run(program, backend);
      QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
      QCOMPARE(QString::fromStdString(r.out), QString::fromStdString(eager.out));
    }
  }
};

QTEST_APPLESS_MAIN(TestEagerAutograd)
#include "test_eager_autograd.moc"
