# Dynamic shapes: dynamic=True (and its size-1 specialization), automatic dynamic, dynamic=False, float arguments, the recompile limit.
import torch


def center(x):
    return (x - x.mean(dim=0)) * x.shape[0]


def center_auto(x):
    return (x - x.mean(dim=0)) * x.shape[0]


def center_static(x):
    return (x - x.mean(dim=0)) * x.shape[0]


def scale(x, s):
    return x * s


def poly(x, n):
    y = x
    for _ in range(n):
        y = y * x + 1
    return y.sum()


torch.manual_seed(7)
data = [torch.randn(r, 3) for r in [2, 3, 8, 1]]
fns = [torch.compile(center, dynamic=True), torch.compile(center_auto), torch.compile(center_static, dynamic=False)]
for f in fns:
    print([round(f(d).abs().sum().item(), 4) for d in data])
sc = torch.compile(scale)
x = torch.randn(4)
print([round(sc(x, s).sum().item(), 4) for s in [0.5, 1.5, 2.5, 3.5]])
p = torch.compile(poly)
z = torch.full((3,), 0.5)
print([round(p(z, n).item(), 5) for n in range(1, 11)])
