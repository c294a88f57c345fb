# torch.autograd.functional with strict=True: the errors for outputs, gradients, Jacobians and
# Hessians that do not depend on the inputs, and create_graph gradients that are constants
# (d(2a)/da does not require grad, as in PyTorch).
import torch
from torch.autograd.functional import jacobian, hessian, vjp, jvp, hvp, vhp
x = torch.tensor([0.5, -1.0], dtype=torch.float64)
y = torch.tensor([2.0, 0.25], dtype=torch.float64)
def attempt(name, thunk):
    try:
        r = thunk()
        print(name, "ok", r)
    except RuntimeError as e:
        print(name, type(e).__name__, e)
print(jacobian(lambda a, b: a.sin() * b, (x, y), strict=True))
attempt("jac_indep", lambda: jacobian(lambda a, b: a.sin(), (x, y), strict=True))
attempt("jac_const", lambda: jacobian(lambda a: torch.ones(2), x, strict=True))
attempt("jac_lin_cg", lambda: jacobian(lambda a: a * 2, x, create_graph=True, strict=True))
attempt("vjp_indep", lambda: vjp(lambda a, b: a.exp(), (x, y), torch.ones(2, dtype=torch.float64), strict=True))
print(vjp(lambda a, b: a.exp() * b, (x, y), torch.ones(2, dtype=torch.float64), strict=True))
attempt("jvp_indep", lambda: jvp(lambda a, b: a.exp(), (x, y), (torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)), strict=True))
attempt("hess_lin", lambda: hessian(lambda a: (a * 3).sum(), x, strict=True))
print(hessian(lambda a: (a ** 3).sum(), x, strict=True))
attempt("hvp_lin", lambda: hvp(lambda a: (a * 3).sum(), x, torch.ones(2, dtype=torch.float64), strict=True))
attempt("vhp_quad", lambda: vhp(lambda a, b: (a * a).sum() + b.sum(), (x, y), (torch.ones(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)), strict=True))
attempt("hvp_quad", lambda: hvp(lambda a: (a * a).sum(), x, torch.ones(2, dtype=torch.float64), strict=True))
attempt("vhp_cg", lambda: vhp(lambda a: (a * a).sum(), x, torch.ones(2, dtype=torch.float64), create_graph=True, strict=True))
attempt("vec_strict", lambda: jacobian(lambda a: a.sin(), x, strict=True, vectorize=True))
