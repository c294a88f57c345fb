# The first example of the PyTorch 2.0 introduction: foo(x, y) = sin(x) + cos(y), compiled, then the decorator form.
import torch


def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


torch.manual_seed(0)
opt_foo1 = torch.compile(foo)
print(opt_foo1(torch.randn(10, 10), torch.randn(10, 10)))


@torch.compile
def opt_foo2(x, y):
    a = torch.sin(x)
    b = torch.cos(y)
    return a + b


x, y = torch.randn(3, 4), torch.randn(3, 4)
out = opt_foo2(x, y)
print(out)
print(out.shape, out.dtype, out.sum().item())
print(torch.allclose(out, foo(x, y)), torch.allclose(opt_foo1(x, y), out))
