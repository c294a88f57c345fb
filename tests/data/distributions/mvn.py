# MultivariateNormal from a covariance or precision matrix (torch.linalg.cholesky,
# solve_triangular, cholesky_inverse), log_prob and MVN-MVN kl_divergence, with
# gradients through them; and the linalg ops themselves, values and gradients.
# mvn_expected.txt was written by Debian's torch 1.13 (python3 mvn.py > mvn_expected.txt);
# regenerate it with PyTorch 2.11 when one is at hand.
import torch
from torch.distributions import MultivariateNormal, kl_divergence

print("== linalg")
A = torch.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, -0.2], [0.5, -0.2, 2.0]])
L = torch.linalg.cholesky(A)
print(L, torch.linalg.cholesky(A, upper=True))
print(torch.linalg.cholesky_ex(A))
print(torch.linalg.cholesky_ex(torch.tensor([[1.0, 2.0], [2.0, 1.0]])).info)
B = torch.tensor([[1.0, -2.0], [0.5, 3.0], [2.0, 0.0]])
print(torch.linalg.solve_triangular(L, B, upper=False))
print(torch.linalg.solve_triangular(L.mT, B.mT, upper=True, left=False))
print(torch.linalg.solve_triangular(L, B, upper=False, unitriangular=True))
print(torch.cholesky_inverse(L), L.cholesky_inverse(), torch.cholesky_inverse(L.mT, upper=True))
print(torch.linalg.inv(A), torch.inverse(A), A.inverse())
print(torch.linalg.inv_ex(A).info)
Ab = torch.stack([A, A * 2 + torch.eye(3)])
print(torch.linalg.cholesky(Ab), torch.linalg.solve_triangular(torch.linalg.cholesky(Ab), B, upper=False))
print(torch.linalg.cholesky(A.double()).dtype, torch.linalg.cholesky(torch.zeros(0, 2, 2)).shape)
for f in [lambda: torch.linalg.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]])),
          lambda: torch.linalg.cholesky(torch.stack([torch.eye(2), torch.tensor([[1.0, 2.0], [2.0, 1.0]])])),
          lambda: torch.linalg.cholesky_ex(torch.tensor([[1.0, 2.0], [2.0, 1.0]]), check_errors=True),
          lambda: torch.linalg.cholesky(torch.ones(2, 3)),
          lambda: torch.linalg.cholesky(torch.ones(3)),
          lambda: torch.linalg.cholesky(torch.ones(2, 2, dtype=torch.long)),
          lambda: torch.linalg.solve_triangular(torch.eye(2), torch.ones(3, 1), upper=False),
          lambda: torch.linalg.solve_triangular(torch.eye(2), torch.ones(2), upper=False),
          lambda: torch.linalg.inv(torch.zeros(2, 2)),
          lambda: torch.linalg.inv(torch.stack([torch.eye(2), torch.zeros(2, 2)])),
          lambda: torch.cholesky_inverse(torch.ones(2, 3))]:
    try:
        f()
    except RuntimeError as e:
        print("RuntimeError:", e)

print("== gradients")
X = torch.tensor([[2.0, 0.3, -0.4], [0.1, 1.5, 0.2], [0.0, -0.3, 1.2]], requires_grad=True)
S = X @ X.mT + 0.5 * torch.eye(3)
Lg = torch.linalg.cholesky(S)
print(Lg.grad_fn.name())
(Lg * torch.arange(9.0).view(3, 3)).sum().backward()
print(X.grad)
X.grad = None
S = X @ X.mT + 0.5 * torch.eye(3)
Lu = torch.linalg.cholesky(S, upper=True)
(Lu * torch.arange(9.0).view(3, 3)).sum().backward()
print(X.grad)
T = torch.tensor([[1.5, 0.0, 0.0], [0.4, 2.0, 0.0], [-0.3, 0.6, 1.1]], requires_grad=True)
Bg = torch.tensor([[1.0, -2.0], [0.5, 3.0], [2.0, 0.0]], requires_grad=True)
Y = torch.linalg.solve_triangular(T, Bg, upper=False)
(Y * torch.tensor([[1.0, 2.0], [-1.0, 0.5], [0.3, 0.7]])).sum().backward()
print(T.grad, Bg.grad)
T.grad = None
Y = torch.linalg.solve_triangular(T, Bg.mT, upper=False, left=False, unitriangular=True)
Y.pow(2).sum().backward()
print(T.grad)
T.grad = None
torch.cholesky_inverse(T).mul(torch.arange(9.0).view(3, 3)).sum().backward()
print(T.grad)
X.grad = None
S = X @ X.mT + 0.5 * torch.eye(3)
torch.linalg.inv(S).mul(torch.arange(9.0).view(3, 3)).sum().backward()
print(X.grad)

print("== mvn")
loc = torch.tensor([0.5, -1.0, 2.0])
m = MultivariateNormal(loc, covariance_matrix=A)
v = torch.tensor([[0.0, 0.0, 0.0], [1.0, -1.0, 2.5]])
print(m.scale_tril, m.covariance_matrix, m.precision_matrix)
print(m.log_prob(v), m.entropy(), m.variance)
p = MultivariateNormal(loc, precision_matrix=A)
print(p.scale_tril, p.covariance_matrix, p.precision_matrix, p.log_prob(v))
mb = MultivariateNormal(torch.zeros(2, 3), covariance_matrix=Ab)
print(mb.batch_shape, mb.event_shape, mb.log_prob(v), mb.log_prob(torch.ones(3)))
print(kl_divergence(m, p), kl_divergence(mb, m), kl_divergence(m, mb))
st = MultivariateNormal(loc, scale_tril=torch.linalg.cholesky(A))
print(st.log_prob(v), kl_divergence(st, m))
torch.manual_seed(0)
print(m.sample((2,)), m.rsample(), mb.sample())
print(m.expand((2,)).log_prob(v))
try:
    MultivariateNormal(loc, covariance_matrix=torch.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
except ValueError as e:
    print("ValueError:", str(e)[:120])

print("== training")
torch.manual_seed(1)
data = torch.randn(64, 3) @ torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.8, 0.0], [-0.3, 0.2, 0.5]]) + torch.tensor([1.0, -2.0, 0.5])
mu = torch.zeros(3, requires_grad=True)
raw = torch.eye(3).clone().requires_grad_(True)
opt = torch.optim.SGD([mu, raw], lr=0.05)
for step in range(30):
    cov = raw @ raw.mT + 1e-3 * torch.eye(3)
    nll = -MultivariateNormal(mu, covariance_matrix=cov).log_prob(data).mean()
    opt.zero_grad()
    nll.backward()
    opt.step()
    if step % 10 == 0 or step == 29:
        print(step, round(nll.item(), 4))
print(mu.detach(), (raw @ raw.mT).detach())
prec = torch.eye(3).clone().requires_grad_(True)
q = MultivariateNormal(torch.zeros(3), precision_matrix=prec @ prec.mT + torch.eye(3))
kl = kl_divergence(q, MultivariateNormal(torch.ones(3), covariance_matrix=A))
kl.backward()
print(kl, prec.grad)
