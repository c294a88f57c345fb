// Sparse COO tensors, as graph networks use them (pytorch/examples' GCN and
// GAT, pygcn-style code): torch.sparse_coo_tensor, Tensor.to_sparse,
// coalesce, to_dense, sparse @ dense products (mm, spmm, torch.sparse.mm,
// matmul), sums with dense tensors, and PyTorch's printing.
//
// A sparse tensor is its indices and values (real tensors) behind a Python
// class; every operation is dense ops on those (gathers and index_add), so
// eager autograd reaches the values and the dense operands unchanged and a
// product sums the same nonzero terms PyTorch's kernel sums. Indices are
// checked against the size always (PyTorch checks them only when asked):
// an index out of range is an error here, never a wrong number. A torch
// function or method reached with a sparse tensor that this file does not
// model is refused by name (exit 3).
//
// Dense tensors get their Python-written methods here too: to_sparse, layout,
// and the in-place view methods (unsqueeze_, squeeze_, t_, transpose_), which
// make the tensor its own view.
#include <string>

#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::py {
namespace {

const char* const kSparseSource = R"PY(# sparse COO tensors in Kiln's Python subset.
import torch
import torch._kiln as _kiln


def _refuse(what):
    _kiln.raise_unsupported(what + " with a sparse tensor is outside Kiln's sparse subset (it models "
                            "sparse_coo_tensor, to_sparse, coalesce, to_dense, sparse @ dense products, "
                            "sums with dense tensors and scaling)")


class layout:
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def _linear(indices, size):
    # Row-major position of each nonzero: coalesce sorts by it.
    lin = torch.zeros(indices.shape[1], dtype=torch.int64)
    for d in range(len(size)):
        lin = lin * size[d] + indices[d]
    return lin


def _unravel(lin, size):
    rows = []
    for d in range(len(size) - 1, -1, -1):
        rows.append(lin % size[d])
        lin = torch.div(lin, size[d], rounding_mode="floor")
    rows.reverse()
    if not rows:
        return torch.zeros(0, lin.shape[0], dtype=torch.int64)
    return torch.stack(rows, 0)


class Tensor:
    """A sparse COO tensor: indices [sparse_dim, nnz] (int64), values [nnz], its size."""

    def __init__(self, indices, values, size, coalesced=False, grad_fn=None):
        self._idx = indices
        self._vals = values
        self._size = tuple(size)
        self._coalesced = coalesced
        self._grad_fn = grad_fn

    # ---- what it is
    @property
    def shape(self):
        return torch.Size(list(self._size))

    def size(self, dim=None):
        if dim is None:
            return self.shape
        return self._size[dim]

    @property
    def ndim(self):
        return len(self._size)

    def dim(self):
        return len(self._size)

    @property
    def dtype(self):
        return self._vals.dtype

    @property
    def device(self):
        return self._vals.device

    @property
    def is_cuda(self):
        return self._vals.is_cuda

    is_sparse = True
    is_quantized = False
    is_meta = False
    is_nested = False

    @property
    def layout(self):
        return sparse_coo

    @property
    def requires_grad(self):
        return self._vals.requires_grad

    def is_floating_point(self):
        return self._vals.is_floating_point()

    def is_complex(self):
        return False

    def numel(self):
        n = 1
        for s in self._size:
            n = n * s
        return n

    def sparse_dim(self):
        return len(self._size)

    def dense_dim(self):
        return 0

    def _nnz(self):
        return self._vals.shape[0]

    def is_coalesced(self):
        return self._coalesced

    def _indices(self):
        return self._idx

    def _values(self):
        return self._vals

    def indices(self):
        if not self._coalesced:
            _kiln.raise_error("RuntimeError", "Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx

    def values(self):
        if not self._coalesced:
            _kiln.raise_error("RuntimeError", "Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    # ---- forms
    def coalesce(self):
        if self._coalesced:
            return self
        lin = _linear(self._idx, self._size)
        unique, inverse = torch.unique(lin, sorted=True, return_inverse=True)
        values = torch.zeros(unique.shape[0], dtype=self._vals.dtype).index_add(0, inverse, self._vals)
        return Tensor(_unravel(unique, self._size), values, self._size, True)

    def to_dense(self):
        dense = torch.zeros(self._size, dtype=self._vals.dtype)
        if self._vals.shape[0] == 0:
            return dense
        return dense.index_put(tuple(self._idx), self._vals, accumulate=True)

    def to_sparse(self):
        return self

    def detach(self):
        return Tensor(self._idx, self._vals.detach(), self._size, self._coalesced)

    def clone(self):
        return Tensor(self._idx.clone(), self._vals.clone(), self._size, self._coalesced)

    def requires_grad_(self, requires_grad=True):
        self._vals.requires_grad_(requires_grad)
        return self

    def to(self, *args, **kwargs):
        values = self._vals.to(*args, **kwargs)
        return self if values is self._vals else Tensor(self._idx, values, self._size, self._coalesced)

    def cpu(self):
        return self

    def float(self):
        return self.to(torch.float32)

    def double(self):
        return self.to(torch.float64)

    def long(self):
        return self.to(torch.int64)

    def int(self):
        return self.to(torch.int32)

    def type_as(self, other):
        return self.to(other.dtype)

    def t(self):
        if len(self._size) != 2:
            _kiln.raise_error("RuntimeError", f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {len(self._size)} sparse and 0 dense dimensions")
        return Tensor(self._idx.flip(0), self._vals, (self._size[1], self._size[0]), False)

    def transpose(self, dim0, dim1):
        if len(self._size) != 2 or sorted([dim0 % 2, dim1 % 2]) != [0, 1]:
            _refuse("Tensor.transpose of other than the two dims of a matrix")
        return self.t()

    # ---- arithmetic
    def __add__(self, other):
        return _add(self, other, 1)

    def __radd__(self, other):
        return _add(other, self, 1)

    def __sub__(self, other):
        return _add(self, other, -1)

    def __rsub__(self, other):
        return _add(other, -self, 1)

    def __neg__(self):
        return Tensor(self._idx, -self._vals, self._size, self._coalesced, "NegBackward0")

    def __mul__(self, other):
        return _scale(self, other, False)

    def __rmul__(self, other):
        return _scale(self, other, False)

    def __truediv__(self, other):
        return _scale(self, other, True)

    def __matmul__(self, other):
        return _mm(self, other)

    def __rmatmul__(self, other):
        return _mm(other, self)

    def mm(self, other):
        return _mm(self, other)

    def matmul(self, other):
        return _mm(self, other)

    def add(self, other):
        return _add(self, other, 1)

    def mul(self, other):
        return _scale(self, other, False)

    def sum(self, dim=None, keepdim=False, dtype=None):
        if dim is not None or keepdim or dtype is not None:
            _refuse("Tensor.sum(dim=...)")
        return self._vals.sum()

    def __repr__(self):
        return _kiln.sparse_repr(self._idx, self._vals, self._size, self._grad_fn)

    def __getattr__(self, name):
        if name.startswith("__"):
            _kiln.raise_error("AttributeError", f"'Tensor' object has no attribute '{name}'")
        _refuse("Tensor." + name)

    def __getitem__(self, key):
        _refuse("indexing")

    def __bool__(self):
        _refuse("bool()")


def _add(a, b, sign):
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if a._size != b._size:
            _kiln.raise_error("RuntimeError", f"add: expected 'self' and 'other' to have same size, but self has size {list(a._size)} while other has size {list(b._size)} (FYI: dense-sparse addition does not currently support broadcasting)")
        values = torch.cat([a._vals, b._vals if sign > 0 else -b._vals])
        return Tensor(torch.cat([a._idx, b._idx], 1), values, a._size, False, "AddBackward0")
    if isinstance(a, Tensor) and isinstance(b, torch.Tensor):
        _kiln.raise_error("RuntimeError", "add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        dense_a = a.to_dense() if isinstance(a, Tensor) else a
        dense_b = b.to_dense() if isinstance(b, Tensor) else b
        if list(dense_a.shape) != list(dense_b.shape):
            _kiln.raise_error("RuntimeError", f"add: expected 'self' and 'other' to have same size, but self has size {list(dense_a.shape)} while other has size {list(dense_b.shape)} (FYI: dense-sparse addition does not currently support broadcasting)")
        return dense_a + dense_b if sign > 0 else dense_a - dense_b
    _refuse("adding a " + type(b).__name__)


def _scale(s, factor, divide):
    if isinstance(factor, (int, float)) and not isinstance(factor, bool):
        values = s._vals / factor if divide else s._vals * factor
        return Tensor(s._idx, values, s._size, s._coalesced, "DivBackward0" if divide else "MulBackward0")
    if isinstance(factor, torch.Tensor) and factor.ndim == 0:
        values = s._vals / factor if divide else s._vals * factor
        return Tensor(s._idx, values, s._size, s._coalesced, "DivBackward0" if divide else "MulBackward0")
    _refuse("multiplying by a non-scalar")


def _sparse_dense(s, dense):
    # What s_addmm_out_sparse_dense sums: for each nonzero (r, c, v), v * dense[c] into row r.
    if len(s._size) != 2 or dense.ndim != 2:
        _kiln.raise_error("RuntimeError", f"addmm: matrices expected, got {len(s._size)}D, {dense.ndim}D tensors")
    if s._size[1] != dense.shape[0]:
        _kiln.raise_error("RuntimeError", f"mat1 and mat2 shapes cannot be multiplied ({s._size[0]}x{s._size[1]} and {dense.shape[0]}x{dense.shape[1]})")
    if s._vals.dtype != dense.dtype:
        _kiln.raise_error("RuntimeError", f"expected scalar type {_scalar_name(dense.dtype)} but found {_scalar_name(s._vals.dtype)}")
    rows = s._idx[0]
    cols = s._idx[1]
    terms = s._vals.unsqueeze(1) * dense.index_select(0, cols)
    product = torch.zeros(s._size[0], dense.shape[1], dtype=dense.dtype).index_add(0, rows, terms)
    return _kiln.name_grad_fn(product, "SparseAddmmBackward0")


def _scalar_name(dtype):
    return {torch.float32: "Float", torch.float64: "Double", torch.int64: "Long", torch.int32: "Int",
            torch.float16: "Half", torch.bfloat16: "BFloat16", torch.bool: "Bool"}.get(dtype, repr(dtype))


def _mm(a, b):
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        product = _sparse_dense(a, b.to_dense())
        return product.to_sparse()
    if isinstance(a, Tensor):
        if not isinstance(b, torch.Tensor):
            _refuse("a product with a " + type(b).__name__)
        return _sparse_dense(a, b)
    if not isinstance(a, torch.Tensor):
        _refuse("a product with a " + type(a).__name__)
    # dense @ sparse is (sparse^T @ dense^T)^T, as ATen's _sparse_mm computes it.
    return _sparse_dense(b.t(), a.t()).t()


def sparse_coo_tensor(indices, values, size=None, dtype=None, device=None, requires_grad=False, check_invariants=None, is_coalesced=None, pin_memory=False):
    if not isinstance(indices, torch.Tensor):
        indices = torch.tensor(indices, dtype=torch.int64)
    if not isinstance(values, torch.Tensor):
        values = torch.tensor(values)
    if indices.dtype != torch.int64:
        indices = indices.to(torch.int64)  # "cast to a torch.LongTensor internally", as documented
    if indices.ndim != 2:
        _kiln.raise_error("RuntimeError", f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.ndim != 1:
        _refuse("sparse_coo_tensor with dense dimensions (values of more than one dimension)")
    if indices.shape[1] != values.shape[0]:
        _kiln.raise_error("RuntimeError", f"indices and values must have same nnz, but got nnz from indices: {indices.shape[1]}, nnz from values: {values.shape[0]}")
    if dtype is not None:
        values = values.to(dtype)
    if device is not None:
        values = values.to(device)
    nnz = indices.shape[1]
    if size is None:
        if nnz == 0:
            _kiln.raise_error("RuntimeError", "sparse_coo_tensor: cannot infer the size of a tensor without nonzeros")
        size = [int(m) + 1 for m in indices.max(1).values.tolist()]
    size = [int(s) for s in size]
    if len(size) != indices.shape[0]:
        _refuse("sparse_coo_tensor with dense dimensions (a size longer than the indices' first dimension)")
    if nnz > 0:
        lowest = indices.min(1).values.tolist()
        highest = indices.max(1).values.tolist()
        for d in range(len(size)):
            if lowest[d] < 0:
                _kiln.raise_error("RuntimeError", f"found negative index {lowest[d]} for dim {d}")
            if highest[d] >= size[d]:
                _kiln.raise_error("RuntimeError", f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index {highest[d]}")
    if requires_grad:
        values = values.detach().requires_grad_(True)
    return Tensor(indices, values, size, bool(is_coalesced) or nnz <= 1)


def to_sparse(self, *args, **kwargs):
    if args or kwargs:
        _refuse("Tensor.to_sparse with arguments (layouts and dense dimensions)")
    if self.ndim == 0:
        _refuse("Tensor.to_sparse of a 0-d tensor")
    where = torch.nonzero(self).t().contiguous()
    values = self[tuple(where)]
    return Tensor(where, values, list(self.shape), True, "ToSparseBackward0")


def _dense_layout(self):
    return strided


_dense_layout_property = property(_dense_layout)


# In-place view methods: the tensor becomes its view (values, shape, history).
def _unsqueeze_(self, dim):
    return _kiln.become(self, self.unsqueeze(dim))


def _squeeze_(self, dim=None):
    return _kiln.become(self, self.squeeze() if dim is None else self.squeeze(dim))


def _t_(self):
    return _kiln.become(self, self.t())


def _transpose_(self, dim0, dim1):
    return _kiln.become(self, self.transpose(dim0, dim1))


def mm(mat1, mat2):
    return _mm(mat1, mat2)


def spmm(input, mat2):
    return _mm(input, mat2)


def _sparse_float_tensor(indices, values, size=None):
    return sparse_coo_tensor(indices, values, size, dtype=torch.float32)


_PASS_THROUGH = {"mm", "matmul", "spmm", "add", "sub", "mul", "div", "true_divide", "neg", "negative",
                 "to_dense", "coalesce", "t", "detach", "clone", "to", "type_as", "sum", "numel", "dim",
                 "is_floating_point", "is_complex"}


def _dispatch(name, args, kwargs):
    """Called by Kiln for a torch function or Tensor method reached with a sparse argument."""
    short = name.split(".")[-1]
    if short in ("mm", "matmul", "spmm") and len(args) == 2 and not kwargs:
        return _mm(args[0], args[1])
    if short == "add" and len(args) == 2 and not kwargs:
        return _add(args[0], args[1], 1)
    if short in ("sub", "subtract") and len(args) == 2 and not kwargs:
        return _add(args[0], args[1], -1)
    if short in ("mul", "multiply") and len(args) == 2 and not kwargs:
        return args[0] * args[1]
    if short in ("div", "true_divide", "divide") and len(args) == 2 and not kwargs and isinstance(args[0], Tensor):
        return args[0] / args[1]
    if short in ("neg", "negative") and len(args) == 1:
        return -args[0]
    if short in _PASS_THROUGH and len(args) > 0 and isinstance(args[0], Tensor):
        return getattr(args[0], short)(*args[1:], **kwargs)
    _refuse(name)
)PY";

}  // namespace

void install_sparse_prelude(VM& vm, const Ref<Module>& torch) {
  static const Expected<CodePtr> code = compile_module(kSparseSource, "torch/sparse/__init__.py");
  Ref<Dict> globals = run_prelude(vm, code, "torch.sparse", "torch sparse tensors");
  if (!globals) return;
  for (const char* name : {"sparse_coo_tensor", "spmm", "strided", "sparse_coo", "layout"})
    if (const Value* v = globals->find_str(name)) torch->dict->set(str_value(name), *v);
  auto sparse = make<Module>("torch.sparse");
  vm.add_module(sparse);
  for (const char* name : {"mm", "sparse_coo_tensor"})
    if (const Value* v = globals->find_str(name)) sparse->dict->set(str_value(name), *v);
  // torch.sparse.FloatTensor(indices, values, size): the legacy spelling pygcn uses.
  if (const Value* v = globals->find_str("_sparse_float_tensor")) sparse->dict->set(str_value("FloatTensor"), *v);
  torch->dict->set(str_value("sparse"), Value(sparse));
  if (const Value* cls = globals->find_str("Tensor")) {
    Class& c = *cls->as<Class>();
    c.module = "torch";
    if (const Value* dispatch = globals->find_str("_dispatch")) c.dict->set(str_value("__kiln_torch_dispatch__"), *dispatch);
  }
  // Dense tensors learn to_sparse, their layout (torch.strided) and the in-place view methods.
  const Value* tensor = torch->dict->find_str("Tensor");
  if (!tensor || !tensor->is(ObjKind::Class)) return;
  Ref<Dict> methods = tensor->as<Class>()->dict;
  for (const char* name : {"unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_", "swapaxes_"}) {
    const std::string own = std::string(name).starts_with("swap") ? "_transpose_" : "_" + std::string(name);
    if (const Value* fn = globals->find_str(own)) methods->set(str_value(name), *fn);
  }
  if (const Value* to_sparse = globals->find_str("to_sparse")) methods->set(str_value("to_sparse"), *to_sparse);
  if (const Value* layout = globals->find_str("_dense_layout_property")) methods->set(str_value("layout"), *layout);
}

}  // namespace kiln::py
