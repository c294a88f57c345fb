# torch.diag of a vector (flows assemble W = P @ L @ (U + diag(S)) from a parameter S):
# its gradient reaches the vector (it once stopped with "no derivative formula for
# aten::zeros"), off-diagonal entries stay +0 beside an inf, offsets both ways, and a
# compiled function sees the same values.
import torch

torch.manual_seed(0)
for k in (0, 1, -2):
    t = torch.tensor([1.0, -2.0, float("inf")], requires_grad=True)
    d = torch.diag(t, k)
    print(d)
    (d * torch.arange(float(d.numel())).reshape(d.shape)).sum().backward()
    print(t.grad)
print(torch.diag(torch.tensor([3, 4])), torch.diag(torch.arange(9.0).reshape(3, 3), 1))
S = torch.nn.Parameter(torch.randn(3))
W = torch.randn(3, 3) @ (torch.triu(torch.randn(3, 3), 1) + torch.diag(S))
(W.sum() + torch.log(torch.abs(S)).sum()).backward()
print(S.grad)


@torch.compile
def f(v):
    return torch.diag(v, -1) * 2


print(f(torch.tensor([1.0, 2.0, 3.0])))
