# torch.nn.utils.parametrize (program 82 stopped at the import): the generated Parametrized* class
# and its property, chained parametrizations, right_inverse on registration and on assignment,
# cached(), remove_parametrizations, state_dict names, training through a parametrized weight;
# and torch.linalg.solve with its gradients (the Cayley map in that tutorial).
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as P

torch.manual_seed(0)


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, X):
        self.calls += 1
        return X * 2

    def right_inverse(self, A):
        return A / 2


class Cayley(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("Id", torch.eye(n))

    def forward(self, X):
        S = X.triu(1) - X.triu(1).transpose(-1, -2)
        return torch.linalg.solve(self.Id - S, self.Id + S)


layer = nn.Linear(3, 3)
before = layer.weight.detach().clone()
P.register_parametrization(layer, "weight", Symmetric())
print(type(layer).__name__, P.is_parametrized(layer), P.is_parametrized(layer, "bias"), P.type_before_parametrizations(layer).__name__)
print(layer)
print([n for n, _ in layer.named_parameters()], list(layer.state_dict()))
print(torch.allclose(layer.weight, layer.weight.T), torch.equal(layer.parametrizations.weight.original, before.triu()))
scaled = Scaled()
P.register_parametrization(layer, "weight", scaled)
print("calls after registering", scaled.calls, "%.5f" % layer.weight.sum().item())
target = torch.eye(3) * 4
layer.weight = target
print("after assignment", torch.allclose(layer.weight, target), "%.5f" % layer.parametrizations.weight.original.sum().item())
scaled.calls = 0
with P.cached():
    for _ in range(3):
        _ = layer.weight
print("calls inside cached()", scaled.calls)
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
x = torch.randn(5, 3)
for step in range(3):
    loss = layer(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("step", step, "%.6f" % loss.item(), torch.allclose(layer.weight, layer.weight.T))
P.remove_parametrizations(layer, "weight")
print(type(layer).__name__, [n for n, _ in layer.named_parameters()], "%.5f" % layer.weight.sum().item())
ortho = nn.Linear(3, 3)
P.register_parametrization(ortho, "weight", Cayley(3))
Q = ortho.weight
print("orthogonal", torch.allclose(Q.T @ Q, torch.eye(3), atol=1e-5), Q.grad_fn.name())
A = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
B = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
X = torch.linalg.solve(A, B)
(X * torch.arange(8.0, dtype=torch.float64).view(4, 2)).sum().backward()
print("solve", X.grad_fn.name(), "%.6f %.6f %.6f" % (X.sum().item(), A.grad.sum().item(), B.grad.sum().item()))
print(torch.linalg.solve(torch.randn(2, 3, 3), torch.randn(2, 3)).shape)
try:
    torch.linalg.solve(torch.zeros(3, 3), torch.ones(3))
except RuntimeError as e:
    print(e)
