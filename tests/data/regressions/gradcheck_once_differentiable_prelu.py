# Custom autograd Functions checked with torch.autograd.gradcheck (slow mode, float64): a convolution whose
# backward is @once_differentiable (it runs without recording), a wrong backward (gradcheck returns False, then
# raises GradcheckError with the two Jacobians), and nn.PReLU's gradients for its weight and input.
# Expected output: torch 1.13, whose gradcheck message, once_differentiable and PReLU are those of 2.11.
import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

torch.manual_seed(0)


class Conv2D(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, weight):
        ctx.save_for_backward(X, weight)
        return F.conv2d(X, weight)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        X, weight = ctx.saved_tensors
        grad_w = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
        return F.conv_transpose2d(grad_out, weight), grad_w


weight = torch.rand(2, 3, 2, 2, requires_grad=True, dtype=torch.double)
X = torch.rand(2, 3, 4, 4, requires_grad=True, dtype=torch.double)
out = Conv2D.apply(X, weight)
out.sum().backward()
print("grad sums %.6f %.6f" % (X.grad.sum().item(), weight.grad.sum().item()))
print("gradcheck", torch.autograd.gradcheck(Conv2D.apply, (X, weight)))
print("grads untouched %.6f" % X.grad.sum().item(), "next draw %.6f" % torch.rand(1).item())


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x * 3


x = torch.tensor([1.0, 2.0], dtype=torch.double, requires_grad=True)
print("wrong backward", torch.autograd.gradcheck(Cube.apply, (x,), raise_exception=False))
try:
    torch.autograd.gradcheck(Cube.apply, (x,))
except RuntimeError as e:
    print(type(e).__name__)
    print(e)

m = torch.nn.PReLU()
m3 = torch.nn.PReLU(3, init=0.1)
print(m, m3, m.weight)
x = torch.tensor([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], requires_grad=True)
(m(x) * 2 + m3(x)).sum().backward()
print(m.weight.grad, m3.weight.grad, x.grad)
