# Determinants as models use them: a Gaussian's negative log-likelihood through logdet of a
# learned covariance, Glow's invertible 1x1 convolution through slogdet (both trained a few
# steps in a compiled step); torch.det/linalg.det/slogdet/linalg.slogdet/logdet and their
# methods, named tuples, batches, n = 0, singular matrices (det's gradient there is PyTorch's:
# zero where U has an exact zero pivot), grad_fn names and errors.
# Expected output written by Debian's torch 1.13 (torch.compile as the identity), not yet by 2.11.
import math
import torch
import torch.nn.functional as F

torch.manual_seed(0)
A = torch.randn(3, 3)
print(torch.det(A), A.det(), torch.linalg.det(A))
print(torch.slogdet(A))
print(torch.linalg.slogdet(A))
print(A.slogdet().logabsdet, torch.logdet(A), A.logdet())
B = torch.randn(2, 4, 4, dtype=torch.float64)
print(torch.det(B), torch.logdet(B))
sign, logabsdet = torch.linalg.slogdet(B)
print(sign, logabsdet)
print(torch.det(B.transpose(-2, -1)))
print(torch.det(torch.zeros(2, 0, 0)), torch.slogdet(torch.zeros(0, 0)))
S = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
print(torch.det(S), torch.slogdet(S), torch.logdet(S))
for f in [lambda: torch.det(torch.zeros(2, 3)), lambda: torch.linalg.det(torch.zeros(3)),
          lambda: torch.slogdet(torch.zeros(2, 2, dtype=torch.long)),
          lambda: torch.logdet(torch.zeros(2, 2, dtype=torch.float16)),
          lambda: torch.linalg.slogdet(torch.zeros(3, 2))]:
    try:
        f()
    except RuntimeError as e:
        print("RuntimeError:", e)

x = A.clone().requires_grad_()
d = torch.det(x)
print(d.grad_fn.name())
d.backward()
print(x.grad)
x = A.clone().requires_grad_()
s, l = torch.slogdet(x)
print(s.grad_fn.name(), l.grad_fn.name(), torch.logdet(x).grad_fn.name())
(2 * l + s).backward()
print(x.grad)
x = B.clone().requires_grad_()
torch.logdet(x).sum().backward()
print(x.grad)
x = B.clone().requires_grad_()
(torch.linalg.det(x) * torch.tensor([1.0, -2.0], dtype=torch.float64)).sum().backward()
print(x.grad)
x = S.clone().requires_grad_()
torch.det(x).backward()
print(x.grad)


class GaussianNLL(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.L = torch.nn.Parameter(torch.eye(d) + 0.1 * torch.randn(d, d))
        self.mu = torch.nn.Parameter(torch.zeros(d))

    def forward(self, x):
        d = x.shape[-1]
        cov = self.L @ self.L.T + 0.1 * torch.eye(d)
        diff = x - self.mu
        maha = ((diff @ torch.inverse(cov)) * diff).sum(-1)
        return 0.5 * (maha + torch.logdet(cov) + d * math.log(2 * math.pi)).mean()


class Invertible1x1Conv(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.W = torch.nn.Parameter(torch.linalg.qr(torch.randn(c, c))[0])

    def forward(self, x):
        z = F.conv2d(x, self.W.view(*self.W.shape, 1, 1))
        return z, x.shape[2] * x.shape[3] * torch.slogdet(self.W)[1]


data = torch.randn(64, 3) @ torch.tensor([[1.0, 0.5, 0.0], [0.0, 1.0, 0.3], [0.0, 0.0, 0.5]]) + 1.0
nll = GaussianNLL(3)
opt = torch.optim.SGD(nll.parameters(), lr=0.05)
step = torch.compile(nll)
for i in range(5):
    opt.zero_grad()
    loss = step(data)
    loss.backward()
    opt.step()
    print("gaussian %d %.6f" % (i, loss.item()))
print(nll.L.detach())

flow = Invertible1x1Conv(4)
opt = torch.optim.Adam(flow.parameters(), lr=0.01)


def flow_loss(x):
    z, logdet = flow(x)
    return (0.5 * (z ** 2).sum(dim=(1, 2, 3)) - logdet).mean()


step = torch.compile(flow_loss)
images = torch.randn(8, 4, 5, 5) * torch.tensor([1.0, 2.0, 0.5, 1.5]).view(1, 4, 1, 1)
for i in range(5):
    opt.zero_grad()
    loss = step(images)
    loss.backward()
    opt.step()
    print("flow %d %.6f logdet %.6f" % (i, loss.item(), torch.slogdet(flow.W)[1].item()))
print(flow.W.detach())
