// ndarray: the class over a torch tensor, NumPy 2's type promotion (NEP 50) and
// the operators.
#include "core/python/stdlib.h"

namespace kiln::py {

extern const char* const kNumpyArraySource;
const char* const kNumpyArraySource = R"PY(# ---- ndarray ----


def _missing_attribute(owner, name):
    if name in _NDARRAY_NAMES or name.startswith("__array"):
        _refuse(owner + "." + name)
    _raise("AttributeError", "'" + ("numpy." + owner if owner == "ndarray" else "numpy." + owner) + "' object has no attribute '" + name + "'")


# Attributes of NumPy's ndarray this subset lacks: refused by name (exit 3),
# while a misspelt attribute stays the program's AttributeError.
_NDARRAY_NAMES = set("""argpartition base byteswap choose compress conj conjugate ctypes cumprod data diagonal
dump dumps flags flat getfield imag itemset newbyteorder partition put real repeat resize searchsorted setfield
setflags strides take tobytes tofile tostring trace view""".split())


class ndarray(_Operators):
    __kiln_ndarray__ = True
    # True for the result of a negative-step slice (and views of it): NumPy's
    # is a view of the original, Kiln's a copy (torch slices step forward only),
    # so writing into it would not reach the original; such writes are refused.
    _reversed_copy = False

    def __kiln_torch_dispatch__(name, args, kwargs):
        return _torch_dispatch(name, args, kwargs)

    @property
    def shape(self):
        return tuple(self._t.shape)

    @shape.setter
    def shape(self, value):
        self._t = self._t.view(_shape_arg(value))

    @property
    def ndim(self):
        return self._t.dim()

    @property
    def size(self):
        return self._t.numel()

    @property
    def dtype(self):
        return self._dt

    @property
    def itemsize(self):
        return self._dt.itemsize

    @property
    def nbytes(self):
        return self._dt.itemsize * self._t.numel()

    @property
    def T(self):
        return self.transpose()

    @property
    def mT(self):
        return swapaxes(self, -1, -2)

    def __len__(self):
        if self._t.dim() == 0:
            _raise("TypeError", "len() of unsized object")
        return self._t.shape[0]

    def __iter__(self):
        if self._t.dim() == 0:
            _raise("TypeError", "iteration over a 0-d array")
        if self._t.dim() == 1:
            d = self._dt
            return iter([_scalar_exact(d, v) for v in self._t.tolist()])
        return iter([_wrap(self._t[i]) for i in range(self._t.shape[0])])

    def __bool__(self):
        n = self._t.numel()
        if n == 1:
            return _pybool(self._t.reshape(-1)[0].item())
        if n == 0:
            _raise("ValueError", "The truth value of an empty array is ambiguous. Use `array.size > 0` to check that an array is not empty.")
        _raise("ValueError", "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()")

    def __float__(self):
        return float(self._only_item("float"))

    def __int__(self):
        return int(self._only_item("int"))

    def __index__(self):
        if self._dt.kind not in "iu" or self._t.dim() != 0:
            _raise("TypeError", "only integer scalar arrays can be converted to a scalar index")
        return self._t.item()

    def _only_item(self, what):
        if self._t.numel() != 1:
            _raise("TypeError", "only length-1 arrays can be converted to Python scalars" if self._t.dim() > 0 else
                   "only 0-dimensional arrays can be converted to Python scalars")
        if self._t.dim() > 0:
            _refuse("converting an array of ndim > 0 to a Python scalar (deprecated in NumPy)")
        return self._t.item()

    def __hash__(self):
        _raise("TypeError", "unhashable type: 'numpy.ndarray'")

    def __getattr__(self, name):
        _missing_attribute("ndarray", name)

    def __repr__(self):
        return array_repr(self)

    def __str__(self):
        return array_str(self)

    def __format__(self, spec):
        if self._t.dim() == 0:
            return format(self[()], spec)
        if spec == "":
            return str(self)
        _raise("TypeError", "unsupported format string passed to numpy.ndarray.__format__")

    def __array__(self, dtype=None):
        return self if dtype is None else self.astype(dtype)

    def __contains__(self, x):
        return _pybool(any(self == x))

    def __getitem__(self, key):
        return _getitem(self, key)

    def __setitem__(self, key, value):
        _setitem(self, key, value)

    def __iadd__(self, o):
        return _inplace("add", self, o)

    def __isub__(self, o):
        return _inplace("subtract", self, o)

    def __imul__(self, o):
        return _inplace("multiply", self, o)

    def __itruediv__(self, o):
        return _inplace("true_divide", self, o)

    def __ifloordiv__(self, o):
        return _inplace("floor_divide", self, o)

    def __imod__(self, o):
        return _inplace("remainder", self, o)

    def __ipow__(self, o):
        return _inplace("power", self, o)

    def __iand__(self, o):
        return _inplace("bitwise_and", self, o)

    def __ior__(self, o):
        return _inplace("bitwise_or", self, o)

    def __ixor__(self, o):
        return _inplace("bitwise_xor", self, o)

    # shape and conversion
    def reshape(self, *shape, order="C"):
        return reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return transpose(self, axes if axes else None)

    def swapaxes(self, a, b):
        return swapaxes(self, a, b)

    def flatten(self, order="C"):
        _order_c(order, "flatten")
        return _wrap(self._t.reshape(-1).clone())

    def ravel(self, order="C"):
        return ravel(self, order)

    def squeeze(self, axis=None):
        return squeeze(self, axis)

    def copy(self, order="C"):
        _order_c(order, "copy")
        return _wrap(self._t.clone())

    def astype(self, dt, order="K", casting="unsafe", subok=True, copy=True):
        d = _as_dtype(dt)
        if casting != "unsafe":
            _check_cast(self._dt, d, casting)
        if d is self._dt and not copy:
            return self
        return _wrap(_cast(self._t, self._dt, d).clone() if d is self._dt else _cast(self._t, self._dt, d))

    def tolist(self):
        if self._t.dim() == 0:
            return self._t.item()
        return self._t.tolist()

    def item(self, *args):
        if not args:
            if self._t.numel() != 1:
                _raise("ValueError", "can only convert an array of size 1 to a Python scalar")
            return self._t.reshape(-1)[0].item()
        if len(args) == 1 and isinstance(args[0], int):
            n = self._t.numel()
            i = args[0]
            if i < -n or i >= n:
                _raise("IndexError", "index " + str(i) + " is out of bounds for size " + str(n))
            return self._t.reshape(-1)[i].item()
        idx = args[0] if len(args) == 1 else args
        return self[tuple(idx)].item()

    def fill(self, value):
        _check_writable(self)
        self._t.fill_(_fill_value(value, self._dt))

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return sum(self, axis, dtype, out, keepdims, initial, where)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, where=None):
        return mean(self, axis, dtype, out, keepdims, where=where)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
        return std(self, axis, dtype, out, ddof, keepdims, where=where)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
        return var(self, axis, dtype, out, ddof, keepdims, where=where)

    def max(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return amax(self, axis, out, keepdims, initial, where)

    def min(self, axis=None, out=None, keepdims=False, initial=None, where=None):
        return amin(self, axis, out, keepdims, initial, where)

    def argmax(self, axis=None, out=None, keepdims=False):
        return argmax(self, axis, out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, keepdims=False):
        return argmin(self, axis, out, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        return prod(self, axis, dtype, out, keepdims, initial, where)

    def any(self, axis=None, out=None, keepdims=False, where=None):
        return any(self, axis, out, keepdims, where=where)

    def all(self, axis=None, out=None, keepdims=False, where=None):
        return all(self, axis, out, keepdims, where=where)

    def cumsum(self, axis=None, dtype=None, out=None):
        return cumsum(self, axis, dtype, out)

    def clip(self, min=None, max=None, out=None):
        return clip(self, min, max, out)

    def round(self, decimals=0, out=None):
        return around(self, decimals, out)

    def dot(self, b, out=None):
        return dot(self, b, out)

    def sort(self, axis=-1, kind=None, order=None):
        _check_writable(self)
        r = sort(self, axis, kind, order)
        self._t.copy_(r._t)

    def argsort(self, axis=-1, kind=None, order=None):
        return argsort(self, axis, kind, order)

    def nonzero(self):
        return nonzero(self)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo=None):
        return self.copy()


def _order_c(order, what):
    if order not in ("C", "K", "A", None):
        _refuse("ndarray." + what + "(order=" + repr(order) + ")")


def _wrap(t):
    """An ndarray over tensor t (CPU, no grad); its dtype follows t's."""
    _check_eager()
    a = _kiln_std.new_instance(ndarray)
    d = _DT_OF_TORCH.get(t.dtype, None)
    if d is None:
        _refuse("a NumPy array of " + str(t.dtype))
    a._t = t
    a._dt = d
    return a


def _from_tensor(t):
    # Tensor.numpy() (numpy_native.cpp): t shares the tensor's storage.
    if t.dtype not in _DT_OF_TORCH:
        _raise("TypeError", "Got unsupported ScalarType " + {torch.bfloat16: "BFloat16"}.get(t.dtype, str(t.dtype)))
    return _wrap(t)


def _result(t):
    """A ufunc's result: 0-d results become NumPy scalars, as NumPy's ufuncs return them."""
    if t.dim() == 0:
        d = _DT_OF_TORCH[t.dtype]
        return _scalar_exact(d, _norm(d, t.item()) if d.kind == "b" else t.item())
    return _wrap(t)


def _scalar_array(s):
    return _wrap(torch.tensor(s._v, dtype=s._dtype._torch))


def _shape_arg(shape):
    if isinstance(shape, (list, tuple)):
        return [_index_int(s, "shape") for s in shape]
    return [_index_int(shape, "shape")]


def _index_int(x, what="index"):
    if isinstance(x, _pybool) and what != "index":
        return int(x)
    if isinstance(x, int):
        return x
    if isinstance(x, integer):
        return x._v
    if isinstance(x, ndarray) and x._dt.kind in "iu" and x.ndim == 0:
        return x._t.item()
    if isinstance(x, torch.Tensor):
        # Through Tensor.__index__, as NumPy reads any object's: integer tensors of one element.
        return x.__index__()
    _raise("TypeError", "'" + type(x).__name__ + "' object cannot be interpreted as an integer")


def _cast(t, src, dst):
    if src is dst:
        return t
    if dst.kind in "iu" and src.kind == "f":
        # NumPy casts NaN and infinities to the most negative integer; torch's is undefined.
        bad = ~torch.isfinite(t)
        if _pybool(bad.any()):
            lo = _int_bounds(dst)[0] if dst.kind == "i" else 0
            t = torch.where(bad, torch.zeros_like(t), t)
            return torch.where(bad, torch.full(t.shape, lo, dtype=dst._torch), t.to(dst._torch))
    if dst.kind == "b":
        return t != 0
    return t.to(dst._torch)


def _check_cast(src, dst, casting):
    if casting == "no" or casting == "equiv":
        ok = src is dst
    elif casting == "safe":
        ok = _promote(src, dst) is dst
    elif casting == "same_kind":
        ok = _promote(src, dst) is dst or _KIND_RANK[dst.kind] >= _KIND_RANK[src.kind]
    else:
        ok = True
    if not ok:
        _raise("TypeError", "Cannot cast array data from " + repr(src) + " to " + repr(dst) + " according to the rule '" + casting + "'")


# ---- type promotion (NumPy 2: NEP 50) ----

_KIND_RANK = {"b": 0, "u": 1, "i": 2, "f": 3}
_INT_OF_SIZE = {1: _int8_dt, 2: _int16_dt, 4: _int32_dt, 8: _int64_dt}
_FLOAT_FOR_INT = {1: _float16_dt, 2: _float32_dt, 4: _float64_dt, 8: _float64_dt}


def _promote(a, b):
    if a is b:
        return a
    ka = a.kind
    kb = b.kind
    if ka == "b":
        return b
    if kb == "b":
        return a
    if ka == kb:
        return a if a.itemsize >= b.itemsize else b
    if ka != "f" and kb != "f":
        u = a if ka == "u" else b
        s = b if ka == "u" else a
        if s.itemsize > u.itemsize:
            return s
        if u.itemsize >= 8:
            return _float64_dt
        return _INT_OF_SIZE[u.itemsize * 2]
    f = a if ka == "f" else b
    i = b if ka == "f" else a
    need = _FLOAT_FOR_INT[i.itemsize] if i.kind == "i" else _FLOAT_FOR_INT[i.itemsize]
    return f if f.itemsize >= need.itemsize else need


def result_type(*args):
    r = None
    weak = []
    for x in args:
        d = _dtype_or_none(x) if not isinstance(x, (ndarray, generic, list, tuple)) and not isinstance(x, (int, float)) else None
        if d is None:
            if isinstance(x, (_pybool, int, float)) and not isinstance(x, generic):
                weak.append(x)
                continue
            d = asarray(x)._dt
        r = d if r is None else _promote(r, d)
    for w in weak:
        r = _weak_result(r, w)
    return r


def promote_types(a, b):
    return _promote(_as_dtype(a), _as_dtype(b))


def _weak_result(d, w):
    """The dtype of dtype d combined with Python scalar w (NEP 50: the scalar's value does not count)."""
    if d is None:
        return _py_dtype(w)
    if isinstance(w, _pybool):
        return d
    if isinstance(w, int):
        return _int64_dt if d.kind == "b" else d
    return d if d.kind == "f" else _float64_dt


def _py_dtype(w):
    if isinstance(w, _pybool):
        return _bool_dt
    if isinstance(w, int):
        return _int64_dt
    return _float64_dt


class _Operand:
    pass


def _operand(x, op):
    """(tensor or Python number, dtype, is_weak) for an operand of a ufunc."""
    if isinstance(x, ndarray):
        return x._t, x._dt, False
    if isinstance(x, generic):
        return None, x._dtype, False
    if isinstance(x, (_pybool, int, float)):
        if isinstance(x, int) and not isinstance(x, _pybool) and (x >= (1 << 63) or x < -(1 << 63)):
            _refuse("a Python integer beyond int64 in NumPy arithmetic")
        return None, _py_dtype(x), True
    if isinstance(x, (list, tuple)):
        a = asarray(x)
        return a._t, a._dt, False
    return None, None, False


def _tensor_of(x, t, d, to):
    """Operand x as a tensor of dtype `to`."""
    if t is None:
        v = x._v if isinstance(x, generic) else x
        if to.kind in "iu" and isinstance(v, float):
            return torch.tensor(_norm(to, v), dtype=to._torch)
        return torch.tensor(v, dtype=to._torch)
    return _cast(t, d, to)


def _check_weak_int(x, d):
    # NumPy 2 refuses a Python int its partner's integer dtype cannot hold.
    if isinstance(x, int) and not isinstance(x, _pybool) and not isinstance(x, generic) and d.kind in "iu":
        lo, hi = _int_bounds(d)
        if x < lo or x > hi:
            _raise("OverflowError", "Python integer " + repr(x) + " out of bounds for " + d.name)


def _binary_dtype(x, y, op, check_ints=True):
    tx, dx, wx = _operand(x, op)
    ty, dy, wy = _operand(y, op)
    if dx is None or dy is None:
        return None
    if wx and wy:
        d = _promote(dx, dy)
    elif wx:
        d = _weak_result(dy, x)
        if check_ints:
            _check_weak_int(x, d)
    elif wy:
        d = _weak_result(dx, y)
        if check_ints:
            _check_weak_int(y, d)
    else:
        d = _promote(dx, dy)
    return tx, dx, ty, dy, d


def _torch_operand_result(op, x, y):
    # A torch tensor meets an array: PyTorch's rules (torch.Tensor's operators
    # take an ndarray as a tensor; the reflected NumPy side is a TypeError).
    if isinstance(x, torch.Tensor):
        yt = y._t if isinstance(y, ndarray) else (y._v if isinstance(y, generic) else y)
        return _TORCH_BINARY[op](x, yt)
    if isinstance(x, generic):
        return _TORCH_BINARY[op](x._v, y)
    _raise("TypeError", "unsupported operand type(s) for " + _OP_SYMBOL.get(op, op) + ": 'numpy.ndarray' and 'Tensor'")


_OP_SYMBOL = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "floor_divide": "//", "remainder": "%",
              "power": "**", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "equal": "==", "not_equal": "!=",
              "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}
_TORCH_BINARY = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
                 "true_divide": lambda a, b: a / b, "floor_divide": lambda a, b: a // b, "remainder": lambda a, b: a % b,
                 "power": lambda a, b: a ** b, "bitwise_and": lambda a, b: a & b, "bitwise_or": lambda a, b: a | b,
                 "bitwise_xor": lambda a, b: a ^ b, "equal": lambda a, b: a == b, "not_equal": lambda a, b: a != b,
                 "less": lambda a, b: a < b, "less_equal": lambda a, b: a <= b, "greater": lambda a, b: a > b,
                 "greater_equal": lambda a, b: a >= b}


def _fast_value(x, kind):
    """x as a Python number when a float64 (kind "f") or int64 (kind "i") scalar op may use it, else None."""
    t = type(x)
    if t is float64:
        return x._v if kind == "f" else None
    if t is int64:
        return x._v
    if t is int:
        return x if x < 9223372036854775808 and x >= -9223372036854775808 else None
    if t is float:
        return x if kind == "f" else None
    return None


def _fast_scalar(op, x, y):
    # Scalars of the default dtypes with Python numbers: Python's IEEE double
    # (or exact int) arithmetic is NumPy's, without tensors. None: take the
    # general path.
    tx = type(x)
    ty = type(y)
    kind = "f" if tx is float64 or ty is float64 else ("i" if tx is int64 or ty is int64 else None)
    if kind is None:
        return None
    a = _fast_value(x, kind)
    b = _fast_value(y, kind)
    if a is None or b is None:
        return None
    if kind == "f":
        a = float(a)
        b = float(b)
        if op == "add":
            return _scalar_exact(_float64_dt, a + b)
        if op == "subtract":
            return _scalar_exact(_float64_dt, a - b)
        if op == "multiply":
            return _scalar_exact(_float64_dt, a * b)
        if op == "true_divide" and b != 0:
            return _scalar_exact(_float64_dt, a / b)
        return None
    if op == "add":
        return _scalar_exact(_int64_dt, _wrap_int(a + b, _int64_dt))
    if op == "subtract":
        return _scalar_exact(_int64_dt, _wrap_int(a - b, _int64_dt))
    if op == "multiply":
        return _scalar_exact(_int64_dt, _wrap_int(a * b, _int64_dt))
    if op == "true_divide" and b != 0:
        return _scalar_exact(_float64_dt, float(a) / float(b))
    return None


def _binary(op, x, y, out_dtype=None):
    r = _fast_scalar(op, x, y)
    if r is not None:
        return r
    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        return _torch_operand_result(op, x, y)
    r = _binary_dtype(x, y, op)
    if r is None:
        return NotImplemented
    tx, dx, ty, dy, d = r
    return _result(_binary_tensor(op, x, tx, dx, y, ty, dy, d))


def _check_broadcast(tx, ty):
    if tx is None or ty is None:
        return
    sx = tuple(tx.shape)
    sy = tuple(ty.shape)
    n = _pymin(len(sx), len(sy))
    for k in range(1, n + 1):
        p = sx[-k]
        q = sy[-k]
        if p != q and p != 1 and q != 1:
            _raise("ValueError", "operands could not be broadcast together with shapes " + _shape_str(sx) + " " + _shape_str(sy) + " ")


def _shape_str(s):
    return "(" + ",".join([str(v) for v in s]) + ("," if len(s) == 1 else "") + ")"


def _binary_tensor(op, x, tx, dx, y, ty, dy, d):
    # NumPy resolves the loop (a TypeError for floats in bitwise ops) before broadcasting.
    if d.kind == "f" and op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        _raise("TypeError", "ufunc '" + op + "' not supported for the input types, and the inputs could not be safely coerced to any supported types according to the casting rule ''safe''")
    _check_broadcast(tx, ty)
    if op == "true_divide":
        if d.kind != "f":
            d = _float64_dt
        a = _tensor_of(x, tx, dx, d)
        b = _tensor_of(y, ty, dy, d)
        return a / b
    if d.kind == "b":
        if op in ("subtract",):
            _raise("TypeError", "numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` operator, or the logical_xor function instead.")
        if op in ("floor_divide", "remainder", "power"):
            d = _int8_dt
    elif d.kind == "f" and op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        _raise("TypeError", "ufunc '" + op + "' not supported for the input types, and the inputs could not be safely coerced to any supported types according to the casting rule ''safe''")
    a = _tensor_of(x, tx, dx, d)
    b = _tensor_of(y, ty, dy, d)
    if op == "add":
        return a | b if d.kind == "b" else a + b
    if op == "multiply":
        return a & b if d.kind == "b" else a * b
    if op == "subtract":
        return a - b
    if op == "floor_divide":
        if d.kind == "f":
            return torch.div(a, b, rounding_mode="floor")
        zero = b == 0
        if _pybool(zero.any()):
            # NumPy gives 0 for integer division by zero (with a warning).
            q = torch.div(a, torch.where(zero, torch.ones_like(b), b), rounding_mode="floor")
            return torch.where(zero, torch.zeros_like(q), q)
        return torch.div(a, b, rounding_mode="floor")
    if op == "remainder":
        if d.kind == "f":
            return _float_remainder(a, b)
        zero = b == 0
        if _pybool(zero.any()):
            q = torch.remainder(a, torch.where(zero, torch.ones_like(b), b))
            return torch.where(zero, torch.zeros_like(q), q)
        return torch.remainder(a, b)
    if op == "power":
        if d.kind in "iu" and _pybool((b < 0).any()):
            _raise("ValueError", "Integers to negative integer powers are not allowed.")
        return torch.pow(a, b)
    if op == "bitwise_and":
        return a & b
    if op == "bitwise_or":
        return a | b
    if op == "bitwise_xor":
        return a ^ b
    if op == "maximum":
        return torch.maximum(a, b)
    if op == "minimum":
        return torch.minimum(a, b)
    if op == "fmax":
        return torch.fmax(a, b)
    if op == "fmin":
        return torch.fmin(a, b)
    if op == "arctan2":
        return torch.atan2(a, b)
    if op == "hypot":
        return torch.hypot(a, b)
    _refuse("numpy." + op)


def _float_remainder(a, b):
    # npy_divmod: fmod, then the divisor's sign; a zero remainder takes the
    # divisor's sign too.
    m = torch.fmod(a, b)
    fix = (m != 0) & ((b < 0) != (m < 0))
    m = torch.where(fix, m + b, m)
    return torch.where(m == 0, torch.where(b < 0, -torch.abs(m), torch.abs(m)), m)


def _compare(op, x, y):
    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        return _torch_operand_result(op, x, y)
    if isinstance(x, str) or isinstance(y, str) or x is None or y is None:
        # NumPy compares element by element with objects it cannot convert:
        # == is all False, != all True.
        if op == "equal" or op == "not_equal":
            a = x if isinstance(x, (ndarray, generic)) else y
            t = torch.zeros(tuple(a.shape), dtype=torch.bool) if op == "equal" else torch.ones(tuple(a.shape), dtype=torch.bool)
            return _result(t)
        _raise("TypeError", "'" + _OP_SYMBOL[op] + "' not supported between instances of '" + _type_label(x) + "' and '" + _type_label(y) + "'")
    r = _binary_dtype(x, y, op, False)
    if r is None:
        return NotImplemented
    tx, dx, ty, dy, d = r
    if (_operand_is_weak_int(x) and dy.kind in "iu") or (_operand_is_weak_int(y) and dx.kind in "iu"):
        # Comparisons with an out-of-range Python int are exact in NumPy 2.
        d = _int64_dt
    _check_broadcast(tx, ty)
    a = _tensor_of(x, tx, dx, d)
    b = _tensor_of(y, ty, dy, d)
    if op == "equal":
        t = a == b
    elif op == "not_equal":
        t = a != b
    elif op == "less":
        t = a < b
    elif op == "less_equal":
        t = a <= b
    elif op == "greater":
        t = a > b
    else:
        t = a >= b
    return _result(t)


def _operand_is_weak_int(x):
    return isinstance(x, int) and not isinstance(x, _pybool)


def _type_label(x):
    if isinstance(x, ndarray):
        return "numpy.ndarray"
    return type(x).__name__


def _check_writable(a):
    if a._reversed_copy:
        _refuse("writing into a slice with a negative step (NumPy's is a view of the original; Kiln's is a copy)")


def _inplace(op, a, o):
    _check_writable(a)
    if isinstance(o, torch.Tensor):
        o = _from_tensor(o.detach())
    r = _binary_dtype(a, o, op)
    if r is None:
        return NotImplemented
    tx, dx, ty, dy, d = r
    if op == "true_divide" and d.kind != "f":
        d = _float64_dt
    if d is not a._dt and _promote(d, a._dt) is not a._dt:
        _raise("UFuncTypeError" if False else "TypeError", "Cannot cast ufunc '" + op + "' output from " + repr(d) + " to " + repr(a._dt) + " with casting rule 'same_kind'")
    t = _binary_tensor(op, a, tx, dx, o, ty, dy, d)
    a._t.copy_(_cast(t, _DT_OF_TORCH[t.dtype], a._dt).expand(a._t.shape) if t.dim() <= a._t.dim() else t)
    return a
)PY";

}  // namespace kiln::py
