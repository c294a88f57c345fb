# Recompiles: shape (automatic dynamic), dtype, stride, requires_grad, no_grad, and int/float/bool/str/None/list-length arguments.
import torch


def affine(x):
    return (x * 2 + 1).sum()


def scale_shift(x, k: int, alpha: float, flag: bool, mode: str):
    y = x * alpha + k
    if flag:
        y = y.relu()
    if mode == "sum":
        return y.sum()
    return y.mean()


def add_all(xs, bias=None):
    total = xs[0]
    for t in xs[1:]:
        total = total + t
    if bias is None:
        return total
    return total + bias


torch.manual_seed(2)
g = torch.compile(affine)
a = torch.randn(4, 4)
print("first", g(a).item())
print("hit", g(a).item())
print("shape", g(torch.randn(6, 4)).item())
print("dynamic hit", g(torch.randn(9, 4)).item())
print("dtype", g(a.double()).item())
print("stride", g(a.t()).item())
w = a.clone().requires_grad_(True)
print("requires_grad", g(w).item())
with torch.no_grad():
    print("no_grad", g(a).item())

f = torch.compile(scale_shift)
for args in [(1, 0.5, True, "sum"), (2, 0.5, True, "sum"), (3, 0.5, True, "sum"),
             (1, 0.25, True, "sum"), (1, 0.5, False, "sum"), (1, 0.5, True, "mean")]:
    print(args, round(f(a, *args).item(), 5))

h = torch.compile(add_all)
xs = [torch.ones(2) * i for i in range(1, 5)]
print(h(xs[:2]).tolist())
print(h(xs[:3]).tolist())
print(h(xs).tolist())
print(h(xs, bias=torch.full((2,), 0.5)).tolist())
