# LU factorization as normalizing flows use it (Invertible1x1Conv: lu_unpack(*W.lu()), diag, triu);
# linalg.lu_factor/_ex, torch.lu_unpack, linalg.lu, values, errors, grad_fn names and gradients.
# Expected output: tests/data/regressions/generate.py with PyTorch 2.11 (the same text as Debian's torch 1.13).
import torch
torch.manual_seed(0)
A = torch.randn(3, 3)
LU, piv = A.lu()
print(LU, piv, piv.dtype)
print(torch.linalg.lu_factor_ex(A))
P, L, U = torch.lu_unpack(LU, piv)
print(P, L, U)
print(torch.linalg.lu(A))
print(torch.lu_unpack(LU, piv, unpack_data=False))
B = torch.randn(2, 3, 4, dtype=torch.float64)
print(torch.linalg.lu_factor(B))
print(torch.linalg.lu(B))
C = torch.randn(4, 2)
print(torch.linalg.lu(C))
print(torch.dist(torch.lu_unpack(*torch.linalg.lu_factor(C))[0] @ torch.linalg.lu(C).L @ torch.linalg.lu(C).U, C) < 1e-6)
S = torch.zeros(2, 2)
print(torch.linalg.lu_factor_ex(S))
LU3, piv3, info3 = torch.lu(S, get_infos=True)
print(info3)
for f in [lambda: torch.linalg.lu_factor(S), lambda: torch.linalg.lu_factor(torch.zeros(2, 2, 2)),
          lambda: torch.lu_unpack(LU, piv.long()), lambda: torch.linalg.lu_factor(A, pivot=False),
          lambda: torch.linalg.lu_factor(torch.zeros(3)), lambda: torch.linalg.lu(torch.zeros(3)),
          lambda: torch.linalg.lu_factor(torch.zeros(3, 3, dtype=torch.long)),
          lambda: torch.linalg.lu_factor_ex(S, check_errors=True)]:
    try:
        f()
    except RuntimeError as e:
        print("RuntimeError:", e)
x = A.clone().requires_grad_()
LU, p = torch.linalg.lu_factor(x)
print(LU.grad_fn.name())
P, L, U = torch.lu_unpack(LU, p)
print(L.grad_fn.name(), U.grad_fn.name(), P.requires_grad)
(L.sum() + (U * U).sum()).backward()
print(x.grad)
x = A.clone().requires_grad_()
P, L, U = torch.linalg.lu(x)
print(L.grad_fn.name(), P.requires_grad)
(L.sin().sum() + U.cos().sum()).backward()
print(x.grad)
x = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
P, L, U = torch.linalg.lu(x)
(L.exp().sum() + U.sin().sum()).backward()
print(x.grad)
x = torch.randn(5, 3, requires_grad=True)
LU, p, info = torch.linalg.lu_factor_ex(x)
(LU * LU).sum().backward()
print(x.grad)
x = torch.randn(3, 3, requires_grad=True)
LU, p = x.lu()
print(LU.grad_fn.name())
# Invertible1x1Conv's construction, as the normalizing-flow programs do it
W = torch.nn.init.orthogonal_(torch.randn(2, 2))
P, L, U = torch.lu_unpack(*W.lu())
S = torch.nn.Parameter(U.diag())
print(P, L, torch.triu(U, diagonal=1), S)
print("%.4f" % abs(torch.sum(torch.log(torch.abs(S))).item()))
