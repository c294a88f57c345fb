# parametrizations.orthogonal (matrix_exp for a square weight, householder for a tall
# one, cayley, and householder without the trivialization) and spectral_norm in one
# small seeded model trained a few steps in a compiled step; torch.linalg.eigvalsh,
# eigh (sign-invariant quantities only: LAPACK builds may flip an eigenvector),
# torch.matrix_exp and their gradients; grad_fn names and errors.
# Expected output written by Debian's torch 1.13 (torch.compile as the identity), not yet by 2.11.
import torch
import torch.nn as nn
from torch.nn.utils.parametrizations import orthogonal, spectral_norm

torch.manual_seed(0)
A = torch.randn(4, 4)
S = A @ A.T + torch.eye(4)
print(torch.linalg.eigvalsh(S))
print(torch.linalg.eigvalsh(torch.triu(S), UPLO="U"))
L, V = torch.linalg.eigh(S.double())
print(L, (V @ torch.diag(L) @ V.T - S.double()).abs().max() < 1e-12)
print(torch.matrix_exp(A - A.T))
print(torch.linalg.matrix_exp(0.5 * A).sum(), A.matrix_exp().trace())
x = S.clone().requires_grad_()
w = torch.linalg.eigvalsh(x)
print(w.grad_fn.name())
(w * torch.arange(1.0, 5.0)).sum().backward()
print(x.grad)
x = S.clone().requires_grad_()
L, V = torch.linalg.eigh(x)
((V ** 2) * torch.tensor([[1.0, 0.0, 2.0, 0.5], [0.0, 3.0, 0.0, 1.0], [2.0, 1.0, 0.0, 0.0], [0.5, 0.0, 1.0, 4.0]])).sum().backward()
print(x.grad)
y = A.clone().requires_grad_()
e = torch.matrix_exp(y)
print(e.grad_fn.name())
(e * A).sum().backward()
print(y.grad)
for f in [lambda: torch.linalg.eigh(torch.zeros(2, 3)), lambda: torch.matrix_exp(torch.zeros(3)),
          lambda: torch.linalg.eigvalsh(torch.zeros(2, 2), UPLO="X")]:
    try:
        f()
    except RuntimeError as err:
        print("RuntimeError:", err)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.square = orthogonal(nn.Linear(4, 4))
        self.tall = orthogonal(nn.Linear(3, 5, bias=False))
        self.cayley = orthogonal(nn.Linear(4, 3), orthogonal_map="cayley")
        self.plain = orthogonal(nn.Linear(3, 3, bias=False), orthogonal_map="householder", use_trivialization=False)
        self.head = spectral_norm(nn.Linear(3, 2))

    def forward(self, x):
        h = torch.tanh(self.square(x))
        h = torch.tanh(self.tall(h[:, :3]))
        h = torch.tanh(self.cayley(h[:, :4]))
        return self.head(self.plain(h))


net = Net()

def orthogonality(Q):
    return (Q.T @ Q - torch.eye(Q.shape[1])).abs().max().item()


print("%.6f %.6f %.6f" % (orthogonality(net.square.weight), orthogonality(net.tall.weight), orthogonality(net.plain.weight)))
print(net.square.weight, net.plain.weight)
print(net.head.parametrizations.weight[0]._u, net.head.parametrizations.weight[0]._v)
print(torch.linalg.eigvalsh(net.cayley.weight @ net.cayley.weight.T))
data = torch.randn(16, 4)
target = torch.randn(16, 2)
opt = torch.optim.Adam(net.parameters(), lr=0.05)


def loss_fn(x, t):
    return ((net(x) - t) ** 2).mean()


step = torch.compile(loss_fn)
for i in range(4):
    opt.zero_grad()
    loss = step(data, target)
    loss.backward()
    opt.step()
    print("step %d loss %.6f orth %.6f" % (i, loss.item(), orthogonality(net.square.weight)))
net.eval()
with torch.no_grad():
    print(net(data[:3]))
    print(torch.linalg.eigvalsh(net.head.weight @ net.head.weight.T))
    print(net.head.parametrizations.weight[0]._u)
print(type(net.square.parametrizations.weight[0]).__name__, net.tall.parametrizations.weight[0].base.shape)
