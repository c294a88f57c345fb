// Eager autograd in the interpreter (core/python/autograd.h) on Kiln's
// derivative formulas (compiler/aot/eager_autograd.h): gradients checked
// against float64 finite differences computed by the same programs, PyTorch's
// errors, and compiled regions (eager, aot_eager, decomp_eager) giving the
// gradients eager autograd gives; second derivatives (create_graph=True)
// against finite differences of first ones, and torch.autograd.functional.
#include <QRegularExpression>
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

// Second derivatives: the gradient of sum(g . v) for g = autograd.grad(loss,
// inputs, create_graph=True) against central differences of that first-order
// sum, element by element.
const char* kCheckSecond = R"(
def check2(inputs, loss, eps=1e-6):
    vs = [torch.randn_like(x) for x in inputs]
    gs = torch.autograd.grad(loss(*inputs), inputs, create_graph=True)
    hs = torch.autograd.grad(sum([(g * v).sum() for g, v in zip(gs, vs)]), inputs)
    def first(xs):
        gg = torch.autograd.grad(loss(*xs), xs)
        return sum([(a * b).sum() for a, b in zip(gg, vs)]).item()
    worst = 0.0
    for x, h in zip(inputs, hs):
        flat = x.view(-1)
        hflat = h.reshape(-1)
        for i in range(flat.numel()):
            with torch.no_grad():
                old = flat[i].item()
                flat[i] = old + eps
            up = first(inputs)
            with torch.no_grad():
                flat[i] = old - eps
            down = first(inputs)
            with torch.no_grad():
                flat[i] = old
            fd = (up - down) / (2 * eps)
            worst = max(worst, abs(fd - hflat[i].item()) / max(1.0, abs(fd)))
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

  void expect_output(const std::string& program, const std::string& expected) {
    Run r = run(program);
    QVERIFY2(r.code == 0, (r.status.to_string() + "\n" + r.err).c_str());
    QCOMPARE(r.out, expected);
  }

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

  void second_derivatives_match_finite_differences() {
    Run r = run(std::string("import torch\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n") + kCheckSecond + R"(
x = torch.randn(1, 2, 5, 5, dtype=torch.float64, requires_grad=True)
w = torch.randn(3, 2, 3, 3, dtype=torch.float64, requires_grad=True)
b = torch.randn(3, dtype=torch.float64, requires_grad=True)
m = torch.randn(4, 27, dtype=torch.float64, requires_grad=True)
def loss(x, w, b, m):
    h = F.leaky_relu(F.conv2d(x, w, b, stride=2, padding=1), 0.2)
    h = torch.tanh(h.flatten(1) @ m.t()) + torch.sigmoid(m.sum(1)) * F.softplus(h.mean())
    h = F.layer_norm(h, (4,), m[:, 0] + 1, m[:, 1])
    h = F.batch_norm(h.t(), None, None, m[:1, 2], m[:1, 3], training=True).t() * h
    return (F.log_softmax(h, dim=1) * h.exp()).sum() + h.flatten().norm() + (m * m.sin()).sum()
check2([x, w, b, m], loss)
)");
    QVERIFY2(r.code == 0, (r.status.to_string() + "\n" + r.err).c_str());
    QVERIFY2(worst_of(r) < 1e-5, r.out.c_str());
  }

  // A custom Function that overrides setup_context and saves an input it
  // returns as-is: PyTorch refuses it at apply (the depyf walk-through's Cosine
  // hits this); a view of the input, or no grad, is fine.
  void setup_context_may_not_save_a_returned_input() {
    expect_output(R"PY(import torch
class Cosine(torch.autograd.Function):
    @staticmethod
    def forward(x0):
        return torch.cos(x0), x0
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output[1])
    @staticmethod
    def backward(ctx, grad_output, grad_x):
        (x0,) = ctx.saved_tensors
        return -torch.sin(x0) * grad_output
class ViewCosine(Cosine):
    @staticmethod
    def forward(x0):
        return torch.cos(x0), x0.view_as(x0)
x = torch.randn(3, requires_grad=True)
try:
    Cosine.apply(x)
except RuntimeError as e:
    print(str(e).split(".")[0])
y, _ = ViewCosine.apply(x)
y.sum().backward()
print(torch.allclose(x.grad, -torch.sin(x)))
with torch.no_grad():
    print(Cosine.apply(x)[1] is x)
)PY",
                  "A input that has been returned as-is as output is being saved for backward\nTrue\nTrue\n");
  }

  // gradgradcheck: random grad_outputs drawn as torch.testing.make_tensor draws
  // them (the random state after it is torch 1.13's, printed below), a true
  // second derivative passes, and a backward that detaches its input has no
  // differentiable outputs, so its numerical second derivative must be zero:
  // PyTorch's GradcheckError. Expected lines as torch 1.13 printed them
  // (gradcheck.py's slow mode is unchanged in 2.11).
  void gradgradcheck_as_pytorch() {
    expect_output(R"PY(import torch
torch.manual_seed(0)
x = torch.randn(3, dtype=torch.double, requires_grad=True)
w = torch.randn(3, 3, dtype=torch.double, requires_grad=True)
f = lambda x, w: torch.tanh(w @ x).pow(2)
print(torch.autograd.gradgradcheck(f, (x, w)))
print(torch.rand(2))
g = lambda x: torch.nn.functional.softplus(x) * x.sin()
print(torch.autograd.gradgradcheck(g, (x,), (torch.ones(3, dtype=torch.double),)))
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() ** 2
x = torch.tensor([0.5, -1.5], dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(Cube.apply, (x,)))
print(torch.autograd.gradgradcheck(Cube.apply, (x,), (torch.ones(2, dtype=torch.double),), raise_exception=False))
try:
    torch.autograd.gradgradcheck(Cube.apply, (x,), (torch.ones(2, dtype=torch.double),))
except RuntimeError as e:
    print(type(e).__name__, str(e).splitlines()[0])
)PY",
                  "True\n"
                  "tensor([0.3051, 0.9320])\n"
                  "True\n"
                  "True\n"
                  "False\n"
                  "GradcheckError Numerical gradient for function expected to be zero\n");
  }

  // torch.autograd.functional (jacobian, hessian, vjp, jvp and hvp by the
  // double-backward trick, vhp, create_graph=True): values as torch 1.13
  // printed them (the module is unchanged in 2.11).
  void autograd_functional() {
    expect_output(R"PY(import torch
from torch.autograd.functional import jacobian, hessian, vjp, jvp, hvp, vhp

def f(x, y):
    return (x.sin() * y).sum(0), x.exp() @ y

x = torch.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=torch.float64)
y = torch.tensor([[1.5, 0.5], [-0.5, 2.0]], dtype=torch.float64)
J = jacobian(f, (x, y))
print(len(J), len(J[0]), tuple(J[0][0].shape), tuple(J[1][1].shape))
print(" ".join("%.6f" % t for t in J[1][0].flatten()[:8].tolist()))
print(" ".join("%.6f" % t for t in jacobian(lambda a: a ** 3, torch.tensor([1.0, 2.0])).flatten().tolist()))

def g(a):
    return (a.tanh() * a.sum()).sum() + (a ** 4).sum()
a = torch.tensor([0.3, -0.7, 1.1], dtype=torch.float64)
print(" ".join("%.6f" % t for t in hessian(g, a).flatten().tolist()))
v = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
out, hv = hvp(g, a, v)
out2, vh = vhp(g, a, v)
print("%.6f" % out.item(), " ".join("%.6f" % t for t in hv.tolist()), " ".join("%.6f" % t for t in vh.tolist()))
out3, jv = jvp(lambda a: a.sin() * a, a, v)
print(" ".join("%.6f" % t for t in jv.tolist()))
out4, vj = vjp(lambda a: a.sin() * a, a, v)
print(" ".join("%.6f" % t for t in vj.tolist()), out4.requires_grad, vj.requires_grad)
H2 = hessian(lambda p, q: (p * q.exp()).sum(), (a, v))
print(len(H2), " ".join("%.6f" % t for t in H2[0][1].flatten().tolist()))
w = torch.tensor([0.2, 0.4], requires_grad=True)
Jg = jacobian(lambda t: t ** 2 * w.sum(), torch.tensor([1.0, 3.0]), create_graph=True)
Jg.sum().backward()
print(Jg.requires_grad, " ".join("%.6f" % t for t in w.grad.tolist()))
)PY",
                  "2 2 (2, 2, 2) (2, 2, 2, 2)\n"
                  "2.473082 -0.183940 0.000000 0.000000 0.824361 0.735759 0.000000 0.000000\n"
                  "3.000000 0.000000 0.000000 12.000000\n"
                  "2.537047 1.549877 1.274338 1.549877 7.686542 0.993941 1.274338 0.993941 14.835846\n"
                  "2.053511 0.074463 -13.326237 6.704380 0.074463 -13.326237 6.704380\n"
                  "0.582121 2.359214 0.695082\n"
                  "0.582121 2.359214 0.695082 False False\n"
                  "2 2.718282 0.000000 0.000000 0.000000 0.135335 0.000000 0.000000 0.000000 1.648721\n"
                  "True 8.000000 8.000000\n");
  }

  // torch.set_grad_enabled switches the mode as a call and restores it as a
  // context manager's exit (the transfer-learning tutorial's training phases).
  void set_grad_enabled_as_call_and_context() {
    expect_output(R"PY(import torch
x = torch.ones(2, requires_grad=True)
with torch.set_grad_enabled(False):
    y = x * 2
print(y.requires_grad, torch.is_grad_enabled())
torch.set_grad_enabled(False)
print(torch.is_grad_enabled(), (x * 2).requires_grad)
torch.set_grad_enabled(True)
for phase in ["train", "val"]:
    with torch.set_grad_enabled(phase == "train"):
        print(phase, (x * 3).requires_grad)
print(torch.is_grad_enabled(), type(torch.set_grad_enabled(True)).__name__)
)PY",
                  "False True\n"
                  "False False\n"
                  "train True\n"
                  "val False\n"
                  "True set_grad_enabled\n");
  }

  // torch.func.jvp and linearize by the double-backward trick: J v against
  // the analytic derivatives (exact here, float64), nested under grad.
  void func_jvp_and_linearize() {
    expect_output(R"PY(import torch
from torch.func import jvp, linearize, jacfwd, grad
x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
v = torch.tensor([1.0, 0.5, -2.0], dtype=torch.float64)
out, t = jvp(torch.sin, (x,), (v,))
print((t - torch.cos(x) * v).abs().max().item(), (out - x.sin()).abs().max().item())
f = lambda a, b: (a * b.exp(), a.sum() * b)
(o1, o2), (t1, t2) = jvp(f, (x, v), (v, x))
print((t1 - (v * v.exp() + x * v.exp() * x)).abs().max().item(), (t2 - (v.sum() * v + x.sum() * x)).abs().max().item())
out, fn = linearize(torch.tanh, x)
print((fn(v) - (1 - x.tanh() ** 2) * v).abs().max().item())
g = lambda a: jvp(torch.sin, (a,), (torch.ones_like(a),))[1].sum()
print((grad(g)(x) + x.sin()).abs().max().item())
print(jvp(lambda a: a * 2, (x,), (v,), has_aux=False)[1].tolist())
try:
    jvp(torch.sin, x, (v,))
except RuntimeError as e:
    print("RuntimeError:", e)
)PY",
                  "0.0 0.0\n"
                  "0.0 0.0\n"
                  "0.0\n"
                  "0.0\n"
                  "[2.0, 1.0, -4.0]\n"
                  "RuntimeError: jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to call f(*primals).\n");
  }

  // grid_sampler_2d_backward has no derivative in PyTorch either: the second
  // backward fails as PyTorch's does (the program's RuntimeError, exit 1),
  // never differentiated as a constant.
  void second_derivative_pytorch_lacks_fails_as_in_pytorch() {
    Run r = run(R"PY(import torch
import torch.nn.functional as F
x = torch.randn(1, 1, 4, 4, requires_grad=True)
grid = torch.rand(1, 3, 3, 2) * 2 - 1
(g,) = torch.autograd.grad(F.grid_sample(x, grid, align_corners=False).pow(3).sum(), x, create_graph=True)
g.sum().backward()
print("reached")
)PY");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.out.find("reached") == std::string::npos, r.out.c_str());
    QVERIFY2(r.err.find("RuntimeError: derivative for aten::grid_sampler_2d_backward is not implemented") !=
                 std::string::npos,
             r.err.c_str());
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

  // x[i] = v and in-place ops on views change the view's base (PyTorch's
  // CopySlices): the seq2seq tutorial's encoder_outputs[ei] = out[0, 0], a
  // write through a transposed view, v.mul_ on a row, += on a slice.
  void writes_into_views_reach_the_base() {
    expect_fd(R"(
w = torch.randn(4, dtype=torch.float64, requires_grad=True)
x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
def loss(w, x):
    buf = torch.zeros(3, 4, dtype=torch.float64)
    for i in range(3):
        buf[i] = torch.tanh(w * (i + 1))
    y = x * 1
    y[:, 1:3] *= 3
    y.t()[0] = w[:3]
    row = y[1]
    row.mul_(w)
    z = torch.zeros(2, 3, dtype=torch.float64)
    z.t()[1] = x[0, :2]
    z[1, 1:] += w[2:]
    h = w * 2
    h.unsqueeze_(1)
    h.t_()
    return (buf * y).sum() + (y ** 2).sum() + (z * z * 3).sum() + (h * torch.arange(4.0, dtype=torch.float64)).sum()
check([w, x], loss)
)");
  }

  // A view taken before an in-place write into its memory would be
  // differentiated through its old value; PyTorch regenerates its history,
  // Kiln refuses (exit 3). A view of a leaf that requires grad is PyTorch's error.
  void stale_views_are_refused() {
    Run r = run(R"PY(import torch
x = torch.randn(3, 4, requires_grad=True)
y = x * 1
v = y[0]
y.mul_(2)
(v * 1).sum().backward()
)PY");
    QCOMPARE(r.code, 3);
    QVERIFY2(r.err.find("PyTorch regenerates its gradient history, Kiln does not") != std::string::npos, r.err.c_str());
    r = run("import torch\nx = torch.randn(3, 4, requires_grad=True)\nx[0].mul_(2)\n");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.find("a view of a leaf Variable that requires grad is being used in an in-place operation.") !=
                 std::string::npos,
             r.err.c_str());
    // A view made under no_grad of a tensor with a history, written with grad on: PyTorch's error.
    r = run(R"PY(import torch
x = torch.randn(3, 4, requires_grad=True)
y = x * 1
with torch.no_grad():
    v = y[0]
v.mul_(2)
)PY");
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.find("A view was created in no_grad mode and is being modified inplace with grad mode enabled.") !=
                 std::string::npos,
             r.err.c_str());
    // Taken after the write, the same view is fine: the write's gradient reaches x twice over.
    r = run(R"PY(import torch
x = torch.ones(2, 2, requires_grad=True)
y = x * 1
y.mul_(2)
v = y[0]
v.sum().backward()
print(x.grad.tolist())
)PY");
    QVERIFY2(r.code == 0, r.err.c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("[[2.0, 2.0], [0.0, 0.0]]\n"));
  }

  // F.interpolate(mode='bicubic') (torchvision's ViT resizes its position
  // embeddings with it), both corner conventions and a scale factor.
  void interpolate_bicubic() {
    expect_fd(R"(
x = torch.randn(1, 2, 3, 4, dtype=torch.float64, requires_grad=True)
def loss(x):
    a = F.interpolate(x, size=(5, 6), mode="bicubic", align_corners=False)
    b = F.interpolate(x, size=(4, 7), mode="bicubic", align_corners=True)
    c = F.interpolate(x, scale_factor=1.5, mode="bicubic")
    return (a * a).sum() + (b * torch.arange(56.0, dtype=torch.float64).view(1, 2, 4, 7)).sum() + c.sum()
check([x], loss)
)");
  }

  // A spatial transformer (F.affine_grid, then F.grid_sample): theta's
  // gradient through the grid, the input's through the sampler, in every
  // padding mode and bicubic sampling (theta perturbed off round values,
  // whose positions land on pixel boundaries, where bilinear sampling has
  // kinks); nearest sampling gives the grid a zero gradient, not none.
  void affine_grid_and_grid_sample() {
    expect_fd(R"(
x = torch.randn(2, 2, 4, 5, dtype=torch.float64, requires_grad=True)
theta = (torch.tensor([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.3, 0.1, 0.05], [-0.1, 0.8, 0.3]]],
                      dtype=torch.float64) + 0.01 * torch.randn(2, 2, 3, dtype=torch.float64)).requires_grad_()
w = torch.arange(2 * 2 * 3 * 6, dtype=torch.float64).view(2, 2, 3, 6) / 50
def loss(x, theta):
    total = 0
    for pad in ["zeros", "border", "reflection"]:
        for align in [False, True]:
            grid = F.affine_grid(theta, (2, 2, 3, 6), align_corners=align)
            total = total + (F.grid_sample(x, grid, padding_mode=pad, align_corners=align) * w).sum()
    # Nearest sampling jumps where a position crosses a half: differentiated through x only.
    near = F.grid_sample(x, F.affine_grid(theta, (2, 2, 3, 6), align_corners=False).detach(), mode="nearest",
                         align_corners=False)
    cubic = F.grid_sample(x, F.affine_grid(theta, (2, 2, 3, 6), align_corners=True), mode="bicubic",
                          padding_mode="border", align_corners=True)
    return total + (near * near).sum() + (cubic * w).sum()
check([x, theta], loss)
)");
    Run r = run(R"(import torch
import torch.nn.functional as F
x = torch.randn(1, 1, 3, 3)
theta = torch.zeros(1, 2, 3, requires_grad=True)
F.grid_sample(x, F.affine_grid(theta, (1, 1, 2, 2), align_corners=False), mode="nearest", align_corners=False).sum().backward()
print(theta.grad.tolist())
)");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("[[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]\n"));
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

  // torch.autograd.Function: a ctx with saved tensors and attributes,
  // needs_input_grad, mark_non_differentiable, a non-tensor argument, no grad
  // when grad mode is off or no input needs one, PyTorch's error for a wrong
  // number of gradients. Expected: Debian's torch 1.13 on the same program.
  void custom_autograd_functions() {
    Run r = run(
        "import torch\n"
        "\n"
        "\n"
        "class Legendre3(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, input):\n"
        "        ctx.save_for_backward(input)\n"
        "        return 0.5 * (5 * input ** 3 - 3 * input)\n"
        "\n"
        "    @staticmethod\n"
        "    def backward(ctx, grad_output):\n"
        "        input, = ctx.saved_tensors\n"
        "        return grad_output * 1.5 * (5 * input ** 2 - 1)\n"
        "\n"
        "\n"
        "class MyExp(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(x):\n"
        "        return x.exp()\n"
        "\n"
        "    @staticmethod\n"
        "    def setup_context(ctx, inputs, output):\n"
        "        ctx.save_for_backward(output)\n"
        "\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        result, = ctx.saved_tensors\n"
        "        return g * result\n"
        "\n"
        "\n"
        "class ScaleSort(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x, scale):\n"
        "        ctx.scale = scale\n"
        "        print(\"needs\", ctx.needs_input_grad)\n"
        "        values, idx = (x * scale).sort()\n"
        "        ctx.mark_non_differentiable(idx)\n"
        "        ctx.save_for_backward(idx)\n"
        "        return values, idx\n"
        "\n"
        "    @staticmethod\n"
        "    def backward(ctx, g_values, g_idx):\n"
        "        idx, = ctx.saved_tensors\n"
        "        grad = torch.zeros_like(g_values)\n"
        "        grad[idx] = g_values\n"
        "        return grad * ctx.scale, None\n"
        "\n"
        "\n"
        "class Wrong(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x, y):\n"
        "        return x * y\n"
        "\n"
        "    @staticmethod\n"
        "    def backward(ctx, g):\n"
        "        return g\n"
        "\n"
        "\n"
        "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
        "y = Legendre3.apply(x)\n"
        "print(y, y.grad_fn is not None, y.requires_grad)\n"
        "y.sum().backward()\n"
        "print(x.grad)\n"
        "v, i = ScaleSort.apply(x, 3.0)\n"
        "print(v, i, i.requires_grad)\n"
        "(v * torch.tensor([1.0, 10.0, 100.0])).sum().backward()\n"
        "print(x.grad)\n"
        "with torch.no_grad():\n"
        "    print(Legendre3.apply(x).requires_grad)\n"
        "print(Legendre3.apply(torch.tensor([1.0])).requires_grad)\n"
        "try:\n"
        "    Wrong.apply(x, torch.ones(3, requires_grad=True)).sum().backward()\n"
        "except RuntimeError as e:\n"
        "    print(e)\n"
        "print(torch.autograd.Variable(torch.ones(2), requires_grad=True).requires_grad)\n"
        "with torch.autograd.set_detect_anomaly(True):\n"
        "    print(torch.autograd.no_grad is torch.no_grad)\n");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out),
             QString(
        "tensor([-0.4375, -1.0000, 17.0000], grad_fn=<Legendre3Backward>) True True\n"
        "tensor([ 0.3750,  6.0000, 28.5000])\n"
        "needs (True, False)\n"
        "tensor([-3.0000,  1.5000,  6.0000], grad_fn=<ScaleSortBackward>) tensor([1, 0, 2]) False\n"
        "tensor([ 30.3750,   9.0000, 328.5000])\n"
        "False\n"
        "False\n"
        "function WrongBackward returned an incorrect number of gradients (expected 2, got 1)\n"
        "True\n"
        "True\n"));
  }

  // The PyTorch 2 form, forward without ctx plus setup_context (torch 1.13
  // has no such form): d/dx exp(x) is exp(x).
  void custom_function_with_setup_context() {
    Run r = run(R"(
import torch
class MyExp(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.exp()
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
    @staticmethod
    def backward(ctx, g):
        result, = ctx.saved_tensors
        return g * result
x = torch.tensor([0.0, 1.0], requires_grad=True)
z = MyExp.apply(x)
(z * torch.tensor([1.0, 2.0])).sum().backward()
print(bool(torch.allclose(x.grad, torch.tensor([1.0, 2.0]) * x.detach().exp())), z.grad_fn is not None)
)");
    QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
    QCOMPARE(QString::fromStdString(r.out), QString("True True\n"));
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

  // The spatial transformer compiled: aot_eager keeps grid_sampler_2d and
  // its backward kernel, so everything is eager's bit for bit; decomp_eager
  // and the kiln CPU backend compute the decomposed bilinear sampler (its
  // forward the kernel's numbers exactly) and differentiate it, so their
  // gradients agree with eager's to rounding. Nearest sampling stays the kernel.
  void compiled_spatial_transformer() {
    const std::string program = R"(
import torch
import torch.nn.functional as F
torch.manual_seed(0)
x = torch.randn(2, 3, 6, 5)
theta0 = torch.tensor([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.4, 0.1, 0.0], [-0.1, 0.8, 0.3]]])
def f(x, theta, mode, pad):
    y = F.grid_sample(x, F.affine_grid(theta, x.size(), align_corners=False), mode=mode, padding_mode=pad,
                      align_corners=False)
    return (y * y).sum(), y
all_exact = True
for mode in ["bilinear", "nearest"]:
    for pad in ["zeros", "reflection"]:
        t1 = theta0.clone().requires_grad_(); x1 = x.clone().requires_grad_()
        l1, y1 = f(x1, t1, mode, pad)
        l1.backward()
        torch._dynamo.reset()
        t2 = theta0.clone().requires_grad_(); x2 = x.clone().requires_grad_()
        l2, y2 = torch.compile(f)(x2, t2, mode, pad)
        l2.backward()
        exact = torch.equal(t1.grad, t2.grad) and torch.equal(x1.grad, x2.grad)
        close = torch.allclose(t1.grad, t2.grad, rtol=1e-5, atol=1e-5) and torch.allclose(x1.grad, x2.grad, rtol=1e-5, atol=1e-6)
        all_exact = all_exact and exact
        print(mode, pad, torch.equal(y1, y2), close, exact or mode == "bilinear")
print("all exact", all_exact)
)";
    for (const char* backend : {"aot_eager", "decomp_eager", "kiln"}) {
      Run r = run(program, backend);
      QVERIFY2(r.code == 0, (r.status.to_string() + r.err).c_str());
      QVERIFY2(r.err.find("runs eagerly") == std::string::npos, r.err.c_str());
      QString out = QString::fromStdString(r.out);
      QVERIFY2(out.startsWith("bilinear zeros True True True\nbilinear reflection True True True\n"
                              "nearest zeros True True True\nnearest reflection True True True\n"),
               qPrintable(out));
      if (std::string(backend) == "aot_eager") QVERIFY2(out.endsWith("all exact True\n"), qPrintable(out));
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
    // aot_eager runs the same kernels (batch norm's functional form included):
    // the same bits. decomp_eager computes batch norm as float32 reductions, as
    // PyTorch's decomposition does: within a few ulps.
    Run aot = run(program, "aot_eager");
    QVERIFY2(aot.code == 0, (aot.status.to_string() + aot.err).c_str());
    QCOMPARE(QString::fromStdString(aot.out), QString::fromStdString(eager.out));
    Run decomposed = run(program, "decomp_eager");
    QVERIFY2(decomposed.code == 0, (decomposed.status.to_string() + decomposed.err).c_str());
    QVERIFY2(decomposed.err.find("not decomposed") == std::string::npos, decomposed.err.c_str());
    const QStringList want = QString::fromStdString(eager.out).split(QRegularExpression("\\s+"), Qt::SkipEmptyParts);
    const QStringList got = QString::fromStdString(decomposed.out).split(QRegularExpression("\\s+"), Qt::SkipEmptyParts);
    QCOMPARE(got.size(), want.size());
    for (qsizetype i = 0; i < got.size(); ++i) {
      const double a = got[i].toDouble(), b = want[i].toDouble();
      QVERIFY2(std::abs(a - b) <= 1e-5 * std::max(std::abs(a), std::abs(b)),
               qPrintable(QString("decomp_eager %1 against eager %2").arg(got[i], want[i])));
    }
  }
};

QTEST_APPLESS_MAIN(TestEagerAutograd)
#include "test_eager_autograd.moc"
