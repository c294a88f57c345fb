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
        return tuple(_data(self).shape)

    @shape.setter
    def shape(self, value):
        if self._dt._wide:
            self._w = self._w.view(_shape_arg(value))
        else:
            self._t = self._t.view(_shape_arg(value))

    @property
    def ndim(self):
        return _data(self).dim()

    @property
    def size(self):
        return _data(self).numel()

    @property
    def dtype(self):
        return self._dt

    @property
    def itemsize(self):
        return self._dt.itemsize

    @property
    def nbytes(self):
        return self._dt.itemsize * _data(self).numel()

    @property
    def T(self):
        return self.transpose()

    @property
    def mT(self):
        return swapaxes(self, -1, -2)

    def __len__(self):
        t = _data(self)
        if t.dim() == 0:
            _raise("TypeError", "len() of unsized object")
        return t.shape[0]

    def __iter__(self):
        t = _data(self)
        if t.dim() == 0:
            _raise("TypeError", "iteration over a 0-d array")
        d = self._dt
        if d.kind == "U":
            if t.dim() == 1:
                return iter([self._s[i] for i in t.tolist()])
            return iter([_str_wrap(self._s, t[i], d) for i in range(t.shape[0])])
        if t.dim() == 1:
            return iter([_scalar_exact(d, v) for v in t.tolist()])
        return iter([_wrap_as(t[i], d) for i in range(t.shape[0])])

    def __bool__(self):
        t = _data(self)
        n = t.numel()
        if n == 1:
            if self._dt.kind == "U":
                return len(self._s[t.reshape(-1)[0].item()]) > 0
            return _pybool(t.reshape(-1)[0].item())
        if n == 0:
            _raise("ValueError", "The truth value of an empty array is ambiguous. Use `array.size > 0` to check that an array is not empty.")
        _raise("ValueError", "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()")

    def __float__(self):
        return float(self._only_item("float"))

    def __int__(self):
        return int(self._only_item("int"))

    def __index__(self):
        if self._dt.kind not in "iu" or _data(self).dim() != 0:
            _raise("TypeError", "only integer scalar arrays can be converted to a scalar index")
        return _data(self).item()

    def _only_item(self, what):
        t = _data(self)
        if t.numel() != 1:
            _raise("TypeError", "only length-1 arrays can be converted to Python scalars" if t.dim() > 0 else
                   "only 0-dimensional arrays can be converted to Python scalars")
        if t.dim() > 0:
            _refuse("converting an array of ndim > 0 to a Python scalar (deprecated in NumPy)")
        if self._dt.kind == "U":
            return self._s[t.item()]
        return t.item()

    def __hash__(self):
        _raise("TypeError", "unhashable type: 'numpy.ndarray'")

    def __getattr__(self, name):
        if name == "_t":
            # uint16/uint32 and string arrays have no `_t`: code not written for them stops here.
            _refuse_dtype(self._dt)
        _missing_attribute("ndarray", name)

    def __repr__(self):
        return array_repr(self)

    def __str__(self):
        return array_str(self)

    def __format__(self, spec):
        if _data(self).dim() == 0:
            return format(self[()], spec)
        if spec == "":
            return str(self)
        _raise("TypeError", "unsupported format string passed to numpy.ndarray.__format__")

    def __array__(self, dtype=None):
        return self if dtype is None else self.astype(dtype)

    def __contains__(self, x):
        return _pybool(any(self == x))

    def __getitem__(self, key):
        if self._dt.kind == "U":
            return _str_getitem(self, key)
        return _getitem(self, key)

    def __setitem__(self, key, value):
        if self._dt.kind == "U":
            _refuse("writing into a NumPy string array")
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
        if self._dt.kind == "U":
            return _str_wrap(self._s, self._w.reshape(-1).clone(), self._dt)
        return _wrap_as(_data(self).reshape(-1).clone(), self._dt)

    def ravel(self, order="C"):
        return ravel(self, order)

    def squeeze(self, axis=None):
        return squeeze(self, axis)

    def copy(self, order="C"):
        _order_c(order, "copy")
        if self._dt.kind == "U":
            return _str_wrap(self._s, self._w.clone(), self._dt)
        return _wrap_as(_data(self).clone(), self._dt)

    def astype(self, dt, order="K", casting="unsafe", subok=True, copy=True):
        if self._dt.kind == "U":
            return _str_astype(self, dt)
        d = _as_dtype(dt)
        if casting != "unsafe":
            _check_cast(self._dt, d, casting)
        if d is self._dt and not copy:
            return self
        t = _data(self)
        r = _cast(t, self._dt, d)
        return _wrap_as(r.clone() if d is self._dt or r.dtype == t.dtype else r, d)

    def tolist(self):
        t = _data(self)
        if self._dt.kind == "U":
            return _str_nested(self._s, t.tolist())
        if t.dim() == 0:
            return t.item()
        return t.tolist()

    def item(self, *args):
        t = _data(self)
        if self._dt.kind == "U":
            if args:
                return self[args[0] if len(args) == 1 else args]
            if t.numel() != 1:
                _raise("ValueError", "can only convert an array of size 1 to a Python scalar")
            return self._s[t.reshape(-1)[0].item()]
        if not args:
            if t.numel() != 1:
                _raise("ValueError", "can only convert an array of size 1 to a Python scalar")
            return t.reshape(-1)[0].item()
        if len(args) == 1 and isinstance(args[0], int):
            n = t.numel()
            i = args[0]
            if i < -n or i >= n:
                _raise("IndexError", "index " + str(i) + " is out of bounds for size " + str(n))
            return t.reshape(-1)[i].item()
        idx = args[0] if len(args) == 1 else args
        return self[tuple(idx)].item()

    def fill(self, value):
        _check_writable(self)
        _data(self).fill_(_fill_value(value, self._dt))

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
        _data(self).copy_(_data(r))

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


def _data(a):
    """The tensor holding a's elements: `_t`, or for uint16/uint32 and string arrays `_w`."""
    return a._w if a._dt._wide else a._t


def _wrap_as(t, d):
    """An ndarray of NumPy dtype d over tensor t (t of d's torch dtype, or the wider one of a uint16/uint32)."""
    if not d._wide:
        return _wrap(t)
    _check_eager()
    if d._back is None:
        _refuse_dtype(d)
    a = _kiln_std.new_instance(ndarray)
    a._w = t
    a._dt = d
    return a


def _as_back(a):
    """A uint16/uint32 array as the int32/int64 array sharing its memory (values unchanged)."""
    b = _wrap(a._w)
    b._reversed_copy = a._reversed_copy
    return b


def _retag(r, d):
    """What a dtype-keeping function gave for _as_back(a), back in a's dtype d."""
    if isinstance(r, ndarray):
        if r._dt._torch is not d._back:
            _raise("SystemError", "numpy: " + r._dt.name + " where " + d.name + " was kept")
        w = _wrap_as(r._t, d)
        w._reversed_copy = r._reversed_copy
        return w
    if isinstance(r, generic):
        return _scalar_exact(d, r._v)
    if isinstance(r, (tuple, list)):
        return type(r)([_retag(x, d) for x in r])
    return r


def _keep_dtype(fn, kind):
    """fn for uint16/uint32 arrays too: run on the backing tensor's array, then
    ("value", "shape") the result tagged with the array's dtype, or ("other")
    as it is (results whose dtype does not follow the input's: argmax, mean, ...).
    String arrays go only through "shape" functions, on their positions."""
    def wrapper(a, *args, **kwargs):
        if isinstance(a, ndarray) and a._dt._wide:
            d = a._dt
            if d.kind == "U":
                if kind != "shape":
                    _refuse_dtype(d)
                return _str_retag(fn(_wrap(a._w), *args, **kwargs), a)
            r = fn(_as_back(a), *args, **kwargs)
            return r if kind == "other" else _retag(r, d)
        return fn(a, *args, **kwargs)
    wrapper.__name__ = fn.__name__
    return wrapper


def _from_tensor(t):
    # Tensor.numpy() (numpy_native.cpp): t shares the tensor's storage.
    if t.dtype not in _DT_OF_TORCH:
        _raise("TypeError", "Got unsupported ScalarType " + {torch.bfloat16: "BFloat16"}.get(t.dtype, str(t.dtype)))
    return _wrap(t)


def _result(t, d=None):
    """A ufunc's result: 0-d results become NumPy scalars, as NumPy's ufuncs return them.
    d: the NumPy dtype when t is the wider tensor of a uint16/uint32 result."""
    if d is not None and d._wide:
        if t.dim() == 0:
            return _scalar_exact(d, t.item())
        return _wrap_as(t, d)
    if t.dim() == 0:
        d = _DT_OF_TORCH[t.dtype]
        return _scalar_exact(d, _norm(d, t.item()) if d.kind == "b" else t.item())
    return _wrap(t)


def _scalar_array(s):
    d = s._dtype
    if d._wide:
        if d._back is None:
            _refuse_dtype(d)
        return _wrap_as(torch.tensor(s._v, dtype=d._back), d)
    return _wrap(torch.tensor(s._v, dtype=d._torch))


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
        return _data(x).item()
    if isinstance(x, torch.Tensor):
        # Through Tensor.__index__, as NumPy reads any object's: integer tensors of one element.
        return x.__index__()
    _raise("TypeError", "'" + type(x).__name__ + "' object cannot be interpreted as an integer")


def _cast(t, src, dst):
    if src is dst:
        return t
    if src._wide or dst._wide:
        return _cast_wide(t, src, dst)
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


def _cast_wide(t, src, dst):
    # t holds uint16/uint32 values in int32/int64 (src wide), or is cast to such a dtype (dst wide).
    if src.kind == "U" or dst.kind == "U":
        _refuse_dtype(src if src.kind == "U" else dst)
    if src._back is None or dst._back is None:
        _refuse_dtype(src if src._back is None else dst)
    if not dst._wide:
        if dst.kind == "b":
            return t != 0
        return t.to(dst._torch)
    if src.kind == "f":
        # In range, the C cast truncates; outside it (and for NaN) NumPy's result is the platform's.
        r = torch.trunc(t)
        bad = ~torch.isfinite(t) | (r < 0) | (r >= float(1 << dst._bits))
        if _pybool(bad.any()):
            _refuse("casting " + src.name + " values outside [0, 2**" + str(dst._bits) + ") or NaN to " + dst.name)
        return r.to(dst._back)
    if src.kind == "b":
        return t.to(dst._back)
    # Integers wrap modulo 2**bits, as C's conversion.
    return (t.to(torch.int64) & ((1 << dst._bits) - 1)).to(dst._back)


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
        if x._dt.kind == "U":
            _refuse("numpy." + op + " of a NumPy string array")
        return _data(x), x._dt, False
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
        if to._wide:
            if to._back is None:
                _refuse_dtype(to)
            return torch.tensor(_norm(to, v), dtype=to._back)
        if isinstance(v, int) and (v >= (1 << 63) or v < -(1 << 63)):
            _refuse("a numpy.uint64 value beyond int64 in array arithmetic")
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
    if d._wide and tx is None and ty is None:
        return _wide_scalar_binary(op, x, y, d)
    return _result(_binary_tensor(op, x, tx, dx, y, ty, dy, d), d if op != "true_divide" else None)


def _wide_scalar_binary(op, x, y, d):
    # uint16/uint32/uint64 scalars and Python ints: exact in Python's ints, then wrapped.
    a = x._v if isinstance(x, generic) else x
    b = y._v if isinstance(y, generic) else y
    if op == "add":
        v = a + b
    elif op == "subtract":
        v = a - b
    elif op == "multiply":
        v = a * b
    elif op == "floor_divide":
        v = 0 if b == 0 else a // b
    elif op == "remainder":
        v = 0 if b == 0 else a % b
    elif op == "bitwise_and":
        v = a & b
    elif op == "bitwise_or":
        v = a | b
    elif op == "bitwise_xor":
        v = a ^ b
    elif op == "maximum" or op == "fmax":
        v = _pymax(a, b)
    elif op == "minimum" or op == "fmin":
        v = _pymin(a, b)
    else:
        _refuse("numpy." + op + " of " + d.name + " scalars")
    return _scalar(d, int(v))


def _wide_binary(op, a, b, d):
    """op on uint16/uint32 operands (int64 tensors a, b): NumPy's result modulo 2**bits, in d's wider tensor."""
    if d._back is None:
        _refuse_dtype(d)
    if op == "add":
        r = a + b
    elif op == "subtract":
        r = a - b
    elif op == "multiply":
        # uint32 products wrap modulo 2**64 in int64; the low 32 bits are still the product's.
        r = a * b
    elif op == "floor_divide" or op == "remainder":
        zero = b == 0
        safe = torch.where(zero, torch.ones_like(b), b)
        q = torch.div(a, safe, rounding_mode="floor") if op == "floor_divide" else torch.remainder(a, safe)
        r = torch.where(zero, torch.zeros_like(q), q)
    elif op == "bitwise_and":
        r = a & b
    elif op == "bitwise_or":
        r = a | b
    elif op == "bitwise_xor":
        r = a ^ b
    elif op == "maximum" or op == "fmax":
        r = torch.maximum(a, b)
    elif op == "minimum" or op == "fmin":
        r = torch.minimum(a, b)
    else:
        _refuse("numpy." + op + " of " + d.name + " arrays")
    return (r & ((1 << d._bits) - 1)).to(d._back)


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
    if d._wide:
        _check_broadcast(tx, ty)
        return _wide_binary(op, _tensor_of(x, tx, dx, _int64_dt), _tensor_of(y, ty, dy, _int64_dt), d)
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
    if (isinstance(x, ndarray) and x._dt.kind == "U") or (isinstance(y, ndarray) and y._dt.kind == "U"):
        return _str_compare(op, x, y)
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
    if d._wide:
        if tx is None and ty is None:
            a = x._v if isinstance(x, generic) else x
            b = y._v if isinstance(y, generic) else y
            return _scalar_exact(_bool_dt, _PY_COMPARE[op](a, b))
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


_PY_COMPARE = {"equal": lambda a, b: a == b, "not_equal": lambda a, b: a != b, "less": lambda a, b: a < b,
               "less_equal": lambda a, b: a <= b, "greater": lambda a, b: a > b, "greater_equal": lambda a, b: a >= b}


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
    at = _data(a)
    at.copy_(_cast(t, d if d._wide else _DT_OF_TORCH[t.dtype], a._dt).expand(at.shape) if t.dim() <= at.dim() else t)
    return a
)PY";

}  // namespace kiln::py
