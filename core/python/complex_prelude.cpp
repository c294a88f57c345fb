// complex64 and complex128 tensors, as far as rotary position embeddings need
// them (Llama's precompute_freqs_cis and apply_rotary_emb): torch.polar,
// torch.complex, view_as_complex / view_as_real, elementwise arithmetic,
// the shape operations and basic indexing.
//
// Kiln's kernels and compiler know only real dtypes, so a complex tensor is
// the real tensor of torch.view_as_real (its last dimension holds the real
// and imaginary parts) behind a Python class. Everything it does is real ops
// on that tensor: eager autograd, capture and every backend work on it
// unchanged, and view_as_complex of a real view still shares its storage.
// A torch function or Tensor method reached with a complex tensor that this
// file does not model is refused by name (exit 3), never computed wrongly.
#include <string>

#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::py {
namespace {

const char* const kComplexSource = R"PY(# complex tensors in Kiln's Python subset.
import torch
import torch._kiln as _kiln


def _refuse(what):
    _kiln.raise_unsupported(what + " with a complex tensor is outside Kiln's complex subset (it models polar, "
                            "view_as_complex/view_as_real, arithmetic, shape operations and basic indexing)")


class _ComplexDType:
    is_complex = True
    is_floating_point = False
    is_signed = True

    def __init__(self, name, real, itemsize):
        self._name = name
        self._real = real
        self.itemsize = itemsize

    def to_real(self):
        return self._real

    def to_complex(self):
        return self

    def __repr__(self):
        return "torch." + self._name


complex64 = _ComplexDType("complex64", torch.float32, 8)
complex128 = _ComplexDType("complex128", torch.float64, 16)
cfloat = complex64
cdouble = complex128


def _complex_of(real_dtype):
    if real_dtype == torch.float64:
        return complex128
    return complex64


def _real_dtype_of(dtype):
    if isinstance(dtype, _ComplexDType):
        return dtype._real
    if dtype == torch.float64:
        return torch.float64
    return torch.float32


def _parts(x):
    """(real, imag) of a complex tensor, a real tensor or a Python number; imag is None when zero."""
    if isinstance(x, Tensor):
        return x._pair.select(-1, 0), x._pair.select(-1, 1)
    return x, None


def _pair_dtype(a, b):
    # complex64 * float64 tensor is complex128, as torch.result_type.
    wide = False
    for x in (a, b):
        if isinstance(x, Tensor):
            wide = wide or x._pair.dtype == torch.float64
        elif isinstance(x, torch.Tensor):
            wide = wide or x.dtype == torch.float64
    return torch.float64 if wide else torch.float32


def _check_operand(op, x):
    if isinstance(x, Tensor) or isinstance(x, torch.Tensor) or isinstance(x, (int, float)):
        return
    _kiln.raise_error("TypeError", f"unsupported operand type(s) for {op}: 'Tensor' and '{type(x).__name__}'")


def _make(real, imag, dtype, grad_fn=None):
    if imag is None:
        imag = torch.zeros_like(real) if isinstance(real, torch.Tensor) else torch.tensor(0.0, dtype=dtype)
    if not isinstance(real, torch.Tensor):
        real = torch.full_like(imag, real)
    real, imag = torch.broadcast_tensors(real.to(dtype), imag.to(dtype))
    return Tensor(torch.stack((real, imag), -1), False, grad_fn)


def _binary(op, a, b):
    _check_operand(op, a)
    _check_operand(op, b)
    dtype = _pair_dtype(a, b)
    node = {"+": "AddBackward0", "-": "SubBackward0", "*": "MulBackward0", "/": "DivBackward0"}.get(op, None)
    ar, ai = _parts(a)
    br, bi = _parts(b)
    if op == "+" or op == "-":
        sign = 1 if op == "+" else -1
        real = ar + sign * br
        if ai is None and bi is None:
            imag = None
        elif bi is None:
            imag = ai
        elif ai is None:
            imag = sign * bi
        else:
            imag = ai + sign * bi
        return _make(real, imag, dtype, node)
    if op == "*":
        if ai is None:
            return _make(ar * br, ar * bi, dtype, node)
        if bi is None:
            return _make(ar * br, ai * br, dtype, node)
        # (a + bi)(c + di) = (ac - bd) + (ad + bc)i, each product rounded as ATen's kernel rounds it.
        return _make(ar * br - ai * bi, ar * bi + ai * br, dtype, node)
    if op == "/":
        if bi is None:
            return _make(ar / br, ai / br if ai is not None else None, dtype, node)
        if ai is None:
            ai = 0.0
        # Smith's algorithm, as c10::complex division: no overflow for large |b|.
        big = torch.abs(br) >= torch.abs(bi)
        ratio = torch.where(big, bi / br, br / bi)
        denom = torch.where(big, br + bi * ratio, bi + br * ratio)
        real = torch.where(big, (ar + ai * ratio) / denom, (ar * ratio + ai) / denom)
        imag = torch.where(big, (ai - ar * ratio) / denom, (ai * ratio - ar) / denom)
        return _make(real, imag, dtype, node)
    _refuse("the operator " + op)


def _dim(d, ndim):
    if d < -max(ndim, 1) or d >= max(ndim, 1):
        _kiln.raise_error("IndexError", f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {d})")
    return d % max(ndim, 1)


def _shape_args(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return list(args[0])
    return list(args)


class Tensor:
    """A complex tensor: `_pair` is its torch.view_as_real, last dimension (real, imag)."""

    def __init__(self, pair, conj=False, grad_fn=None):
        self._pair = pair
        # conj() is lazy in PyTorch: view_as_real refuses it until resolve_conj().
        self._conj = conj
        # The node PyTorch's repr names (MulBackward0), where the pair's own (StackBackward0) differs.
        self._grad_fn = grad_fn

    # ---- what it is
    @property
    def dtype(self):
        return _complex_of(self._pair.dtype)

    @property
    def shape(self):
        return torch.Size(list(self._pair.shape)[:-1])

    def size(self, dim=None):
        if dim is None:
            return self.shape
        return self.shape[_dim(dim, self.ndim)]

    @property
    def ndim(self):
        return self._pair.ndim - 1

    def dim(self):
        return self._pair.ndim - 1

    def numel(self):
        return self._pair.numel() // 2

    def __len__(self):
        if self.ndim == 0:
            _kiln.raise_error("TypeError", "len() of a 0-d tensor")
        return self._pair.shape[0]

    @property
    def device(self):
        return self._pair.device

    @property
    def is_cuda(self):
        return self._pair.is_cuda

    @property
    def requires_grad(self):
        return self._pair.requires_grad

    @property
    def is_leaf(self):
        return self._pair.is_leaf

    is_sparse = False
    is_quantized = False
    is_meta = False
    is_nested = False

    def is_complex(self):
        return True

    def is_floating_point(self):
        return False

    def element_size(self):
        return self.dtype.itemsize

    # ---- parts
    @property
    def real(self):
        return self._pair.select(-1, 0)

    @property
    def imag(self):
        return self._pair.select(-1, 1)

    def conj(self):
        return Tensor(torch.stack((self.real, -self.imag), -1), not self._conj, "ConjBackward0")

    def is_conj(self):
        return self._conj

    def resolve_conj(self):
        return Tensor(self._pair.clone(), False, self._grad_fn) if self._conj else self

    def conj_physical(self):
        return Tensor(torch.stack((self.real, -self.imag), -1))

    def sum(self, dim=None, keepdim=False, dtype=None):
        return _reduce("sum", (self, dim, keepdim), {"dtype": dtype})

    def mean(self, dim=None, keepdim=False, dtype=None):
        return _reduce("mean", (self, dim, keepdim), {"dtype": dtype})

    def abs(self):
        # hypot, as std::abs of a c10::complex: no overflow of the squares.
        return torch.hypot(self.real, self.imag)

    def angle(self):
        return torch.atan2(self.imag, self.real)

    def exp(self):
        scale = torch.exp(self.real)
        return Tensor(torch.stack((scale * torch.cos(self.imag), scale * torch.sin(self.imag)), -1), False, "ExpBackward0")

    # ---- arithmetic
    def __mul__(self, other):
        return _binary("*", self, other)

    def __rmul__(self, other):
        return _binary("*", other, self)

    def __add__(self, other):
        return _binary("+", self, other)

    def __radd__(self, other):
        return _binary("+", other, self)

    def __sub__(self, other):
        return _binary("-", self, other)

    def __rsub__(self, other):
        return _binary("-", other, self)

    def __truediv__(self, other):
        return _binary("/", self, other)

    def __rtruediv__(self, other):
        return _binary("/", other, self)

    def __neg__(self):
        return Tensor(-self._pair, False, "NegBackward0")

    def __pos__(self):
        return self

    def mul(self, other):
        return _binary("*", self, other)

    def add(self, other):
        return _binary("+", self, other)

    def sub(self, other):
        return _binary("-", self, other)

    def div(self, other):
        return _binary("/", self, other)

    # ---- shape
    def view(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
            _refuse("Tensor.view(dtype)")
        return Tensor(self._pair.view(*(_shape_args(shape) + [2])))

    def reshape(self, *shape):
        return Tensor(self._pair.reshape(*(_shape_args(shape) + [2])))

    def view_as(self, other):
        return self.view(other.shape)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape(1)
        return Tensor(self._pair.flatten(_dim(start_dim, self.ndim), _dim(end_dim, self.ndim)))

    def unsqueeze(self, dim):
        return Tensor(self._pair.unsqueeze(_dim(dim, self.ndim + 1)))

    def squeeze(self, dim=None):
        if dim is None:
            dims = [i for i in range(self.ndim) if self._pair.shape[i] == 1]
            return Tensor(self._pair.squeeze(tuple(dims))) if dims else self.view(self.shape)
        if isinstance(dim, (tuple, list)):
            return Tensor(self._pair.squeeze(tuple(_dim(d, self.ndim) for d in dim)))
        return Tensor(self._pair.squeeze(_dim(dim, self.ndim)))

    def transpose(self, dim0, dim1):
        return Tensor(self._pair.transpose(_dim(dim0, self.ndim), _dim(dim1, self.ndim)))

    def permute(self, *dims):
        order = [_dim(d, self.ndim) for d in _shape_args(dims)]
        return Tensor(self._pair.permute(*(order + [self.ndim])))

    def expand(self, *sizes):
        return Tensor(self._pair.expand(*(_shape_args(sizes) + [2])))

    def contiguous(self):
        return Tensor(self._pair.contiguous())

    def clone(self):
        return Tensor(self._pair.clone())

    def detach(self):
        return Tensor(self._pair.detach())

    def __getitem__(self, key):
        if isinstance(key, Tensor):
            _refuse("indexing")
        keys = key if isinstance(key, tuple) else (key,)
        # With an Ellipsis, the pair dimension must stay outside what it spans.
        if any(k is Ellipsis for k in keys):
            keys = keys + (slice(None),)
        return Tensor(self._pair[keys])

    # ---- dtype and device
    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype", None)
        for a in args:
            if isinstance(a, _ComplexDType) or isinstance(a, torch.dtype):
                dtype = a
        if dtype is not None and not isinstance(dtype, _ComplexDType):
            _refuse("Tensor.to(" + repr(dtype) + ") (casting away the imaginary part)")
        pair_args = []
        for a in args:
            if isinstance(a, _ComplexDType):
                pair_args.append(a._real)
            elif isinstance(a, Tensor):
                pair_args.append(a._pair)
            else:
                pair_args.append(a)
        if "dtype" in kwargs:
            kwargs = dict(kwargs)
            kwargs["dtype"] = kwargs["dtype"]._real
        pair = self._pair.to(*pair_args, **kwargs)
        return self if pair is self._pair else Tensor(pair)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return Tensor(self._pair.cuda(*args, **kwargs))

    def type_as(self, other):
        return self.to(other.dtype)

    # ---- everything else PyTorch has is refused by name
    def __getattr__(self, name):
        if name.startswith("__"):
            _kiln.raise_error("AttributeError", f"'Tensor' object has no attribute '{name}'")
        _refuse("Tensor." + name)

    def __bool__(self):
        _refuse("bool()")

    def __repr__(self):
        return _kiln.complex_repr(self._pair, self._grad_fn)

    def tolist(self):
        _refuse("Tensor.tolist() (the subset has no complex numbers)")

    def item(self):
        _refuse("Tensor.item() (the subset has no complex numbers)")


def view_as_complex(input):
    if not isinstance(input, torch.Tensor):
        _kiln.raise_error("TypeError", f"view_as_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dtype == torch.float16:
        _refuse("torch.view_as_complex of a float16 tensor (complex32)")
    if input.dtype != torch.float32 and input.dtype != torch.float64:
        name = repr(input.dtype)[6:]
        scalar = {"bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                  "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(name, name)
        _kiln.raise_error("RuntimeError", f"view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: {scalar}")
    if input.ndim == 0:
        _kiln.raise_error("RuntimeError", "Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        _kiln.raise_error("RuntimeError", "Tensor must have a last dimension of size 2")
    if input.stride(-1) != 1:
        _kiln.raise_error("RuntimeError", "Tensor must have a last dimension with stride 1")
    for i in range(input.ndim - 1):
        if input.stride(i) % 2 != 0:
            _kiln.raise_error("RuntimeError", "Tensor must have a stride divisible by 2 for all but last dimension")
    return Tensor(input.view(input.shape), False, "ViewAsComplexBackward0")


def view_as_real(input):
    if not isinstance(input, Tensor):
        _kiln.raise_error("RuntimeError", "view_as_real is only supported for complex tensors")
    if input._conj:
        _kiln.raise_error("RuntimeError", "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate tensor so you can view it as real, use self.resolve_conj(); however, be warned that the resulting tensor will NOT alias the original.")
    return input._pair.view(input._pair.shape)


def polar(abs, angle):
    for name, x in (("abs", abs), ("angle", angle)):
        if not isinstance(x, torch.Tensor):
            _kiln.raise_error("TypeError", f"polar(): argument '{name}' must be Tensor, not {type(x).__name__}")
    if abs.dtype != angle.dtype:
        _kiln.raise_error("RuntimeError", f"Expected object of scalar type {repr(abs.dtype)[6:].capitalize()} but got scalar type {repr(angle.dtype)[6:].capitalize()} for second argument")
    if abs.dtype != torch.float32 and abs.dtype != torch.float64:
        _kiln.raise_error("RuntimeError", "Expected both inputs to be Half, Float or Double tensors but got " + repr(abs.dtype)[6:] + " and " + repr(angle.dtype)[6:])
    return _make(abs * torch.cos(angle), abs * torch.sin(angle), abs.dtype, "PolarBackward0")


def complex(real, imag):
    for name, x in (("real", real), ("imag", imag)):
        if not isinstance(x, torch.Tensor):
            _kiln.raise_error("TypeError", f"complex(): argument '{name}' must be Tensor, not {type(x).__name__}")
    if real.dtype != imag.dtype:
        _kiln.raise_error("RuntimeError", f"Expected object of scalar type {repr(real.dtype)[6:].capitalize()} but got scalar type {repr(imag.dtype)[6:].capitalize()} for second argument")
    if real.dtype != torch.float32 and real.dtype != torch.float64:
        _kiln.raise_error("RuntimeError", "Expected both inputs to be Half, Float or Double tensors but got " + repr(real.dtype)[6:] + " and " + repr(imag.dtype)[6:])
    return _make(real, imag, real.dtype, "ComplexBackward0")


def _dims_of(args, kwargs, ndim):
    dim = args[1] if len(args) > 1 else kwargs.get("dim", None)
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        return tuple(_dim(d, ndim) for d in dim)
    return (_dim(dim, ndim),)


def _reduce(op, args, kwargs):
    self = args[0]
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    if kwargs.get("dtype", None) is not None:
        _refuse("torch." + op + "(dtype=)")
    dims = _dims_of(args, kwargs, self.ndim)
    if not dims:
        return self
    pair = self._pair.sum(dims, keepdim) if op == "sum" else self._pair.mean(dims, keepdim)
    return Tensor(pair)


def _join(op, args, kwargs):
    tensors = list(args[0])
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    pairs = []
    for t in tensors:
        if not isinstance(t, Tensor):
            _refuse("torch." + op + " of complex and real tensors")
        pairs.append(t._pair)
    ndim = tensors[0].ndim + (1 if op == "stack" else 0)
    d = _dim(dim, ndim)
    return Tensor(torch.cat(pairs, d) if op == "cat" else torch.stack(pairs, d))


_SAME_AS_METHOD = {"reshape", "view", "flatten", "unsqueeze", "squeeze", "transpose", "permute", "expand",
                   "contiguous", "clone", "detach", "conj", "is_conj", "resolve_conj", "conj_physical", "abs", "absolute", "angle", "exp", "numel",
                   "is_complex", "is_floating_point", "to", "type_as", "view_as", "reshape_as", "size", "dim",
                   "mul", "multiply", "add", "sub", "subtract", "div", "divide", "true_divide"}
_METHOD_ALIAS = {"absolute": "abs", "multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div"}


def _complex_dtype_in(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, _ComplexDType):
            return a
    return None


def _factory(short, args, kwargs):
    dtype = kwargs["dtype"]
    rest = {k: v for k, v in kwargs.items() if k != "dtype" and k != "requires_grad"}
    real = torch.zeros(*(_shape_args(args) + [2]), dtype=dtype._real, **rest)
    if short == "ones":
        real.select(-1, 0).fill_(1.0)
    if kwargs.get("requires_grad", False):
        real.requires_grad_(True)
    return Tensor(real)


def _dispatch(name, args, kwargs):
    """Called by Kiln for a torch function or Tensor method reached with a complex argument."""
    short = name.split(".")[-1]
    wanted = _complex_dtype_in(args, kwargs)
    if short in ("zeros", "ones") and isinstance(kwargs.get("dtype", None), _ComplexDType):
        return _factory(short, args, kwargs)
    if name.startswith("Tensor.") and short in ("to", "type") and wanted is not None and isinstance(args[0], torch.Tensor):
        if kwargs and list(kwargs) != ["dtype"]:
            _refuse(name + " with keyword arguments")
        return _make(args[0], None, wanted._real, "ToCopyBackward0")
    if short in ("cat", "concat", "concatenate", "stack"):
        return _join("stack" if short == "stack" else "cat", args, kwargs)
    if short in ("sum", "mean") and isinstance(args[0], Tensor):
        return _reduce(short, args, kwargs)
    if short in ("real", "imag") and len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].real if short == "real" else args[0].imag
    if short == "neg" or short == "negative":
        return -args[0]
    if short in ("mul", "multiply", "add", "sub", "subtract", "div", "divide", "true_divide") and not kwargs:
        op = {"mul": "*", "multiply": "*", "add": "+", "sub": "-", "subtract": "-"}.get(short, "/")
        return _binary(op, args[0], args[1])
    if short in _SAME_AS_METHOD and len(args) > 0 and isinstance(args[0], Tensor):
        method = getattr(args[0], _METHOD_ALIAS.get(short, short))
        return method(*args[1:], **kwargs)
    _refuse(name)


def is_complex(input):
    if isinstance(input, Tensor):
        return True
    if isinstance(input, torch.Tensor):
        return False
    _kiln.raise_error("TypeError", f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
)PY";

}  // namespace

void install_complex_prelude(VM& vm, const Ref<Module>& torch) {
  static const Expected<CodePtr> code = compile_module(kComplexSource, "torch/_complex.py");
  Ref<Dict> globals = run_prelude(vm, code, "torch", "torch complex tensors");
  if (!globals) return;
  for (const char* name : {"complex64", "complex128", "cfloat", "cdouble", "view_as_complex", "view_as_real", "polar",
                           "complex", "is_complex"})
    if (const Value* v = globals->find_str(name)) torch->dict->set(str_value(name), *v);
  if (const Value* cls = globals->find_str("Tensor")) {
    Class& c = *cls->as<Class>();
    c.module = "torch";
    // The native torch callables hand a complex argument to _dispatch (torch_convert.cpp).
    if (const Value* dispatch = globals->find_str("_dispatch")) {
      c.dict->set(str_value("__kiln_torch_dispatch__"), *dispatch);
      // torch.zeros(..., dtype=torch.complex64) and x.to(torch.complex64) too.
      if (const Value* dtype = globals->find_str("_ComplexDType"))
        dtype->as<Class>()->dict->set(str_value("__kiln_torch_dispatch__"), *dispatch);
    }
  }
}

}  // namespace kiln::py
