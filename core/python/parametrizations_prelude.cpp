// torch.nn.utils.parametrizations.orthogonal and spectral_norm after PyTorch
// 2.11, over parametrize_prelude.cpp's register_parametrization. Random
// numbers are drawn where PyTorch draws them (spectral_norm's u and v by
// normal_ on the global generator when registered, orthogonal's completion of
// a non-square weight by randn in right_inverse), so seeded programs match.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kParametrizationsSource = R"PY(import torch
import torch._kiln as _kiln
import torch.nn.functional as F
from torch.nn import Module
from torch.nn.utils.parametrize import register_parametrization


def _raise(kind, message):
    _kiln.raise_error(kind, message)


_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(Q):
    # Orthonormal columns, to a tolerance that grows with the height.
    k = Q.size(-1)
    eye = torch.eye(k, dtype=Q.dtype, device=Q.device)
    return torch.allclose(Q.mH @ Q, eye, atol=10.0 * Q.size(-2) * torch.finfo(Q.dtype).eps)


def _make_orthogonal(A):
    # The Q of A = QR (A tall) with R's diagonal made non-negative.
    reflectors, tau = torch.geqrf(A)
    Q = torch.linalg.householder_product(reflectors, tau)
    return Q * reflectors.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            _raise("ValueError", "The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        # With the trivialization the map is applied around a stored
        # orthogonal `base` (None until right_inverse sets it).
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            # The strictly lower part holds the reflectors; tau makes each an
            # exact reflection. The diagonal only signs the columns and takes
            # no gradient (the cast to int).
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = torch.linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            # A skew-symmetric n x n matrix from the lower triangle of X,
            # padded with zero columns when X is not square.
            X = X.tril()
            if n != k:
                X = torch.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = torch.matrix_exp(A)
            else:
                # The Cayley map (I + A/2)(I - A/2)^-1.
                eye = torch.eye(n, dtype=A.dtype, device=A.device)
                Q = torch.linalg.solve(torch.add(eye, A, alpha=-0.5), torch.add(eye, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with torch.no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if Q.shape != self.shape:
            _raise("ValueError", f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley parametrizations when use_trivialization=False.")
            # The reflectors of Q's QR with R's diagonal signs on the
            # diagonal; a reflection LAPACK skipped (tau == 0) flips its sign.
            A, tau = torch.geqrf(Q)
            signs = A.diagonal(dim1=-2, dim2=-1).sign()
            signs = torch.where(tau == 0.0, -signs, signs)
            A.diagonal(dim1=-2, dim2=-1).copy_(signs)
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            # Complete the columns to an n x n orthogonal matrix.
            N = torch.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(torch.cat([Q, N], dim=-1))
        self.base = Q
        # -I, so that householder(zeros) is the identity's first columns.
        neg_id = torch.zeros_like(Q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    weight = getattr(module, name, None)
    if not isinstance(weight, torch.Tensor):
        _raise("ValueError", f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        _raise("ValueError", f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _MAPS:
        _raise("ValueError", f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            _raise("IndexError", f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            _raise("ValueError", f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            # A vector is normalized exactly; a matrix keeps estimates of its
            # top singular vectors, started at random and refined 15 times.
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # u and v are updated in place (their storage is the buffer's), then
        # cloned by forward before use so that an earlier graph keeps its own.
        with torch.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(torch.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(torch.mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = torch.dot(u, torch.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    weight = getattr(module, name, None)
    if not isinstance(weight, torch.Tensor):
        _raise("ValueError", f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = isinstance(module, (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d))
        dim = 1 if transposed else 0
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
)PY";

}  // namespace

// Adds orthogonal and spectral_norm to `parametrizations` (the module
// torch.nn.utils.parametrizations, made by parametrize_prelude.cpp once
// torch.nn.utils.parametrize is in place).
void install_orthogonal_and_spectral_norm(VM& vm, const Ref<Module>& parametrizations) {
  static const Expected<CodePtr> code = compile_module(kParametrizationsSource, "torch/nn/utils/parametrizations.py");
  Ref<Dict> globals = run_prelude(vm, code, parametrizations->name, "torch.nn.utils.parametrizations");
  if (!globals) return;
  for (const char* name : {"orthogonal", "spectral_norm"})
    if (const Value* v = globals->find_str(name)) parametrizations->dict->set(str_value(name), *v);
  for (const char* name : {"_Orthogonal", "_SpectralNorm"})
    if (const Value* v = globals->find_str(name)) v->as<Class>()->module = parametrizations->name;
}

}  // namespace kiln::py
