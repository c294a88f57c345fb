// NumPy's ufuncs, reductions (sums in NumPy's order, _kiln_numpy.sum), linear
// algebra, sorting and the type-information functions.
#include "core/python/stdlib.h"

namespace kiln::py {

extern const char* const kNumpyMathSource;
const char* const kNumpyMathSource = R"PY(# ---- ufuncs ----


def _float_type(d):
    return d if d.kind == "f" else _promote(d, _float16_dt)


def _unary_float(name, fn):
    def ufunc(x, out=None, **kwargs):
        if out is not None or kwargs:
            _refuse("np." + name + " with out= or other ufunc keywords")
        if isinstance(x, torch.Tensor):
            _refuse("np." + name + " of a torch.Tensor")
        a = x if isinstance(x, (ndarray, generic)) else asarray(x)
        t, d = (a._t, a._dt) if isinstance(a, ndarray) else (torch.tensor(a._v, dtype=a._dtype._torch), a._dtype)
        f = _float_type(d)
        return _result(fn(_cast(t, d, f)))
    ufunc.__name__ = name
    return ufunc


exp = _unary_float("exp", torch.exp)
exp2 = _unary_float("exp2", lambda t: torch.pow(torch.tensor(2.0, dtype=t.dtype), t))
expm1 = _unary_float("expm1", torch.expm1)
log = _unary_float("log", torch.log)
log2 = _unary_float("log2", torch.log2)
log10 = _unary_float("log10", torch.log10)
log1p = _unary_float("log1p", torch.log1p)
sqrt = _unary_float("sqrt", torch.sqrt)
sin = _unary_float("sin", torch.sin)
cos = _unary_float("cos", torch.cos)
tan = _unary_float("tan", torch.tan)
arcsin = _unary_float("arcsin", torch.asin)
arccos = _unary_float("arccos", torch.acos)
arctan = _unary_float("arctan", torch.atan)
sinh = _unary_float("sinh", torch.sinh)
cosh = _unary_float("cosh", torch.cosh)
tanh = _unary_float("tanh", torch.tanh)
rint = _unary_float("rint", torch.round)
floor = _unary_float("floor", torch.floor)
ceil = _unary_float("ceil", torch.ceil)
trunc = _unary_float("trunc", torch.trunc)
fix = trunc
reciprocal_f = _unary_float("reciprocal", torch.reciprocal)
asin = arcsin
acos = arccos
atan = arctan


def _unary_same(name, fn, allow_bool=True):
    def ufunc(x, out=None, **kwargs):
        if out is not None or kwargs:
            _refuse("np." + name + " with out= or other ufunc keywords")
        a = x if isinstance(x, (ndarray, generic)) else asarray(x)
        if a.dtype._wide:
            return _wide_unary(name, a)
        t, d = (a._t, a._dt) if isinstance(a, ndarray) else (torch.tensor(a._v, dtype=a._dtype._torch), a._dtype)
        if d.kind == "b" and not allow_bool:
            if name == "sign":
                _raise("TypeError", "ufunc 'sign' did not contain a loop with signature matching types <class 'numpy.dtypes.BoolDType'> -> None")
            if name == "negative":
                _raise("TypeError", "The numpy boolean negative, the `-` operator, is not supported, use the `~` operator or the logical_not function instead.")
            t = t.to(torch.int8)
        return _result(fn(t))
    ufunc.__name__ = name
    return ufunc


absolute = _unary_same("absolute", lambda t: t if t.dtype == torch.bool else torch.abs(t))
abs = absolute
fabs = _unary_float("fabs", torch.abs)
negative = _unary_same("negative", lambda t: -t, False)
positive = _unary_same("positive", lambda t: t.clone(), False)
square = _unary_same("square", lambda t: t * t, False)
sign = _unary_same("sign", torch.sign, False)


def _wide_unary(name, a):
    # uint16/uint32: NumPy's result modulo 2**bits (-x wraps; abs and + keep x).
    d = a.dtype
    if d.kind == "U":
        _refuse("np." + name + " of a NumPy string array")
    t = _data(_scalar_array(a) if isinstance(a, generic) else a).to(torch.int64)
    if name == "absolute" or name == "positive":
        r = t.clone()
    elif name == "negative":
        r = -t
    elif name == "square":
        r = t * t
    elif name == "sign":
        r = (t != 0).to(torch.int64)
    elif name == "invert":
        r = ~t
    else:
        _refuse("np." + name + " of a " + d.name + " array")
    return _result((r & ((1 << d._bits) - 1)).to(d._back), d)


def invert(x, out=None):
    a = x if isinstance(x, (ndarray, generic)) else asarray(x)
    if a.dtype._wide:
        return _wide_unary("invert", a)
    t, d = (a._t, a._dt) if isinstance(a, ndarray) else (torch.tensor(a._v, dtype=a._dtype._torch), a._dtype)
    if d.kind == "f":
        _raise("TypeError", "ufunc 'invert' not supported for the input types, and the inputs could not be safely coerced to any supported types according to the casting rule ''safe''")
    return _result(torch.logical_not(t) if d.kind == "b" else torch.bitwise_not(t))


bitwise_not = invert


def logical_not(x, out=None):
    a = asarray(x)
    return _result(a._t == 0)


def _logical(name, fn):
    def ufunc(x, y, out=None):
        a = asarray(x)
        b = asarray(y)
        return _result(fn(a._t != 0, b._t != 0))
    ufunc.__name__ = name
    return ufunc


logical_and = _logical("logical_and", torch.logical_and)
logical_or = _logical("logical_or", torch.logical_or)
logical_xor = _logical("logical_xor", torch.logical_xor)


def isnan(x, out=None):
    a = asarray(x)
    return _result(torch.isnan(a._t) if a._dt.kind == "f" else torch.zeros(a.shape, dtype=torch.bool))


def isinf(x, out=None):
    a = asarray(x)
    return _result(torch.isinf(a._t) if a._dt.kind == "f" else torch.zeros(a.shape, dtype=torch.bool))


def isfinite(x, out=None):
    a = asarray(x)
    return _result(torch.isfinite(a._t) if a._dt.kind == "f" else torch.ones(a.shape, dtype=torch.bool))


def signbit(x, out=None):
    a = asarray(x)
    if a._dt.kind != "f":
        return _result(a._t < 0)
    return _result((a._t < 0) | ((a._t == 0) & (torch.reciprocal(a._t) < 0)))


def _binary_ufunc(name):
    def ufunc(x1, x2, out=None, dtype=None, **kwargs):
        if out is not None or dtype is not None or kwargs:
            _refuse("np." + name + " with out=, dtype= or other ufunc keywords")
        if isinstance(x1, torch.Tensor) or isinstance(x2, torch.Tensor):
            _refuse("np." + name + " of a torch.Tensor")
        r = _binary(name, x1, x2)
        if r is NotImplemented:
            _raise("TypeError", "ufunc '" + name + "' not supported for the input types")
        return r
    ufunc.__name__ = name
    return ufunc


def _compare_ufunc(name):
    def ufunc(x1, x2, out=None):
        if out is not None:
            _refuse("np." + name + "(out=)")
        return _compare(name, x1, x2)
    ufunc.__name__ = name
    return ufunc


add = _binary_ufunc("add")
subtract = _binary_ufunc("subtract")
multiply = _binary_ufunc("multiply")
divide = _binary_ufunc("true_divide")
true_divide = divide
floor_divide = _binary_ufunc("floor_divide")
remainder = _binary_ufunc("remainder")
mod = remainder
power = _binary_ufunc("power")
maximum = _binary_ufunc("maximum")
minimum = _binary_ufunc("minimum")
fmax = _binary_ufunc("fmax")
fmin = _binary_ufunc("fmin")
bitwise_and = _binary_ufunc("bitwise_and")
bitwise_or = _binary_ufunc("bitwise_or")
bitwise_xor = _binary_ufunc("bitwise_xor")
equal = _compare_ufunc("equal")
not_equal = _compare_ufunc("not_equal")
less = _compare_ufunc("less")
less_equal = _compare_ufunc("less_equal")
greater = _compare_ufunc("greater")
greater_equal = _compare_ufunc("greater_equal")


def _float_binary(name):
    inner = _binary_ufunc(name)

    def ufunc(x1, x2, out=None):
        r = _binary_dtype(x1, x2, name)
        tx, dx, ty, dy, d = r
        f = _float_type(d)
        return _result(_binary_tensor(name, x1, tx, dx, x2, ty, dy, f))
    ufunc.__name__ = name
    return ufunc


arctan2 = _float_binary("arctan2")
hypot = _float_binary("hypot")


def float_power(x1, x2):
    return power(asarray(x1).astype(float64), x2)


def reciprocal(x, out=None):
    a = asarray(x)
    if a._dt.kind != "f":
        _refuse("np.reciprocal of integers")
    return reciprocal_f(a)


def divmod_(x1, x2):
    return floor_divide(x1, x2), remainder(x1, x2)


def clip(a, a_min=None, a_max=None, out=None, min=None, max=None):
    if out is not None:
        _refuse("np.clip(out=)")
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    if lo is None and hi is None:
        _raise("ValueError", "One of max or min must be given")
    r = a if isinstance(a, (ndarray, generic)) else asarray(a)
    if lo is not None:
        r = maximum(r, lo)
    if hi is not None:
        r = minimum(r, hi)
    return r


def around(a, decimals=0, out=None):
    if out is not None:
        _refuse("np.round(out=)")
    x = a if isinstance(a, (ndarray, generic)) else asarray(a)
    d = x._dt if isinstance(x, ndarray) else x._dtype
    t = x._t if isinstance(x, ndarray) else torch.tensor(x._v, dtype=d._torch)
    decimals = _index_int(decimals)
    if d.kind != "f":
        if decimals >= 0:
            return _result(t.clone())
        _refuse("np.round of integers to negative decimals")
    # NumPy multiplies by 10**decimals, rounds half to even, divides back.
    if decimals == 0:
        return _result(torch.round(t))
    f = torch.tensor(10.0 ** (decimals if decimals >= 0 else -decimals), dtype=d._torch)
    if decimals >= 0:
        return _result(torch.round(t * f) / f)
    return _result(torch.round(t / f) * f)


round = around
round_ = around


# ---- reductions ----


def _reduce_axes(a, axis, lenient=True):
    # NumPy's ufunc reductions let axis 0 or -1 through for 0-d arrays (for
    # backwards compatibility); mean, var and std count items and do not.
    if lenient and a.ndim == 0 and (axis == 0 or axis == -1 or axis == (0,) or axis == (-1,)):
        return []
    return _axes(axis, a.ndim)


def _keep(t, a, axes, keepdims):
    if not keepdims:
        return t
    return t.reshape([1 if i in axes else a.shape[i] for i in range(a.ndim)])


def _reject(what, out=None, where=None, initial=None):
    if out is not None:
        _refuse(what + "(out=)")
    if where is not None and where is not True:
        _refuse(what + "(where=)")
    if initial is not None:
        _refuse(what + "(initial=)")


def _sum_dtype(d):
    if d.kind == "b" or (d.kind == "i" and d.itemsize < 8):
        return _int64_dt
    if d.kind == "u":
        if d.itemsize < 8:
            _refuse("summing unsigned integers (NumPy's result is uint64)")
    return d


def _numpy_sum(t, d, axes, acc):
    """np.add.reduce of tensor t (dtype d) over axes with accumulator dtype acc, in NumPy's order."""
    if acc.kind == "f":
        if t.dim() == 0:
            return _cast(t, d, acc)
        src = _cast(t, d, acc) if d is not acc else t
        return _nat.reduce(src, axes, "add")
    if d.kind == "f":
        _refuse("summing floats into an integer dtype")
    return torch.sum(t.to(acc._torch), axes) if axes else t.to(acc._torch).clone()


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _reject("np.sum", out, where, initial)
    a = asarray(a)
    axes = _reduce_axes(a, axis)
    if dtype is None and a._dt.kind == "u" and a._dt.itemsize < 8:
        # NumPy sums unsigned integers into uint64: exact in int64 for these
        # sizes, and a uint64 scalar holds any value; a uint64 array would not.
        if len(axes) != a.ndim or keepdims:
            _refuse("np.sum of a " + a._dt.name + " array along an axis (NumPy's result is a uint64 array; pass dtype=np.int64)")
        return _scalar_exact(_uint64_dt, int(torch.sum(_data(a).to(torch.int64)).item()))
    acc = _sum_dtype(a._dt) if dtype is None else _as_dtype(dtype)
    return _result(_keep(_numpy_sum(_data(a), a._dt, axes, acc), a, axes, keepdims))


def _count(a, axes):
    n = 1
    for x in axes:
        n *= a.shape[x]
    return n


def _mean_tensor(a, axes, dtype):
    d = a._dt
    if dtype is not None:
        acc = _as_dtype(dtype)
        res = acc
    elif d.kind in "biu":
        acc = res = _float64_dt
    elif d is _float16_dt:
        acc = _float32_dt
        res = _float16_dt
    else:
        acc = res = d
    s = _numpy_sum(a._t, d, axes, acc)
    n = _count(a, axes)
    if n == 0:
        return _cast(torch.full(s.shape, _NAN, dtype=torch.float64), _float64_dt, res)
    m = s / torch.tensor(float(n), dtype=s.dtype)
    return _cast(m, acc, res)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    _reject("np.mean", out, where)
    a = asarray(a)
    axes = _reduce_axes(a, axis, False)
    return _result(_keep(_mean_tensor(a, axes, dtype), a, axes, keepdims))


def _var_tensor(a, axes, dtype, ddof):
    d = a._dt
    acc = _as_dtype(dtype) if dtype is not None else (_float64_dt if d.kind in "biu" else d)
    n = _count(a, axes)
    # The mean with kept dimensions, the squared deviations, their sum: NumPy's _var.
    s = _numpy_sum(a._t, d, axes, acc)
    mshape = [1 if i in axes else a.shape[i] for i in range(a.ndim)]
    m = (s / torch.tensor(float(n), dtype=s.dtype)).reshape(mshape)
    xd = _promote(d, acc)
    x = _cast(a._t, d, xd) - _cast(m, acc, xd)
    x = x * x
    r = _numpy_sum(x, xd, axes, acc if dtype is not None or d.kind in "biu" else xd)
    dof = n - ddof
    if dof < 0:
        dof = 0
    return r / torch.tensor(float(dof), dtype=r.dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None, correction=None):
    _reject("np.var", out, where)
    if mean is not None:
        _refuse("np.var(mean=)")
    if correction is not None:
        ddof = correction
    a = asarray(a)
    axes = _reduce_axes(a, axis, False)
    return _result(_keep(_var_tensor(a, axes, dtype, ddof), a, axes, keepdims))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None, correction=None):
    _reject("np.std", out, where)
    if mean is not None:
        _refuse("np.std(mean=)")
    if correction is not None:
        ddof = correction
    a = asarray(a)
    axes = _reduce_axes(a, axis, False)
    return _result(_keep(torch.sqrt(_var_tensor(a, axes, dtype, ddof)), a, axes, keepdims))


def _extreme(name, fn, a, axis, out, keepdims, initial, where):
    _reject("np." + name, out, where)
    a = asarray(a)
    axes = _reduce_axes(a, axis)
    if a.size == 0 and initial is None:
        _raise("ValueError", "zero-size array to reduction operation " + name + " which has no identity")
    t = a._t
    if a._dt.kind == "b":
        t = t.to(torch.uint8)
    r = fn(t, axes, keepdims) if axes else t.clone()
    if a._dt.kind == "b":
        r = r != 0
    if initial is not None:
        r = (torch.maximum if name == "maximum" else torch.minimum)(r, _value_tensor(initial, a._dt))
    return _result(r)


def amax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _extreme("maximum", lambda t, d, k: torch.amax(t, d, k), a, axis, out, keepdims, initial, where)


def amin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _extreme("minimum", lambda t, d, k: torch.amin(t, d, k), a, axis, out, keepdims, initial, where)


max = amax
min = amin


def ptp(a, axis=None, out=None, keepdims=False):
    return subtract(amax(a, axis, keepdims=keepdims), amin(a, axis, keepdims=keepdims))


def _arg_extreme(name, fn, a, axis, out, keepdims):
    if out is not None:
        _refuse("np." + name + "(out=)")
    a = asarray(a)
    if a.size == 0:
        _raise("ValueError", "attempt to get " + name + " of an empty sequence")
    t = a._t.to(torch.uint8) if a._dt.kind == "b" else a._t
    if axis is None:
        r = fn(t.reshape(-1), 0)
        if keepdims:
            r = r.reshape([1] * a.ndim)
        return _result(r)
    ax = _axis(axis, a.ndim)
    return _result(fn(t, ax, keepdims))


def argmax(a, axis=None, out=None, keepdims=False):
    return _arg_extreme("argmax", lambda t, d, k=False: torch.argmax(t, d, k), a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    return _arg_extreme("argmin", lambda t, d, k=False: torch.argmin(t, d, k), a, axis, out, keepdims)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _reject("np.prod", out, where, initial)
    a = asarray(a)
    axes = _reduce_axes(a, axis)
    acc = _sum_dtype(a._dt) if dtype is None else _as_dtype(dtype)
    t = _cast(a._t, a._dt, acc)
    if acc.kind == "f" and t.dim() > 0:
        # NumPy multiplies one element after another, in its iteration order.
        return _result(_keep(_nat.reduce(t, axes, "multiply"), a, axes, keepdims))
    for ax in reversed(axes):
        t = torch.prod(t, ax, True)
    if not keepdims:
        t = t.reshape([a.shape[i] for i in range(a.ndim) if i not in axes])
    return _result(t)


def _truth_reduce(name, reduce, empty, a, axis, out, keepdims, where):
    # np.any / np.all: a reduction of the array's truth values over `axis`; an
    # empty array gives `empty` (False for any, True for all) in the reduced shape.
    _reject(name, out, where)
    a = asarray(a)
    axes = _reduce_axes(a, axis)
    t = a._t != 0
    if a.size == 0:
        shape = [1 if i in axes else a.shape[i] for i in range(a.ndim)] if keepdims else \
            [a.shape[i] for i in range(a.ndim) if i not in axes]
        return _result(torch.full(shape, empty, dtype=torch.bool))
    r = reduce(t.to(torch.uint8), axes, keepdims) != 0 if axes else t
    return _result(r)


def any(a, axis=None, out=None, keepdims=False, where=None):
    return _truth_reduce("np.any", torch.amax, False, a, axis, out, keepdims, where)


def all(a, axis=None, out=None, keepdims=False, where=None):
    return _truth_reduce("np.all", torch.amin, True, a, axis, out, keepdims, where)


def _accumulate(name, op, a, axis, dtype, out):
    if out is not None:
        _refuse("np." + name + "(out=)")
    a = asarray(a)
    acc = _sum_dtype(a._dt) if dtype is None else _as_dtype(dtype)
    t = _cast(a._t, a._dt, acc)
    if axis is None:
        t = t.reshape(-1)
        ax = 0
    else:
        ax = _axis(axis, a.ndim)
    if acc.kind == "f":
        # One element after another in the array's precision (PyTorch adds
        # float32 in double).
        return _wrap(_nat.accumulate(t, ax, op))
    return _wrap(torch.cumsum(t, ax) if op == "add" else torch.cumprod(t, ax))


def cumsum(a, axis=None, dtype=None, out=None):
    return _accumulate("cumsum", "add", a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    return _accumulate("cumprod", "multiply", a, axis, dtype, out)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None:
        _refuse("np.median(out=)")
    a = asarray(a)
    if axis is None:
        a = a.reshape(-1)
        ax = 0
    else:
        if isinstance(axis, (tuple, list)):
            _refuse("np.median over several axes")
        ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    if n == 0:
        shape = [a.shape[i] for i in range(a.ndim) if i != ax]
        return _result(torch.full(shape, _NAN, dtype=torch.float64))
    s = torch.sort(a._t, ax)[0]
    # np.mean of the middle values: integers in float64.
    f = a._dt if a._dt.kind == "f" else _float64_dt
    lo = _cast(s.narrow(ax, (n - 1) // 2, 1), a._dt, f)
    hi = _cast(s.narrow(ax, n // 2, 1), a._dt, f)
    # NumPy's mean of the two middle values: their sum over 2 (np.mean); NaN anywhere is NaN.
    m = (lo + hi) / torch.tensor(2.0, dtype=lo.dtype) if n % 2 == 0 else lo
    if f.kind == "f":
        nan_any = torch.isnan(a._t).any(ax, True) if a._dt.kind == "f" else None
        if nan_any is not None:
            m = torch.where(nan_any, torch.full_like(m, _NAN), m)
    if not keepdims:
        m = m.squeeze(ax)
    elif axis is None:
        m = m.reshape([1] * asarray(a).ndim)
    return _result(m)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    if weights is None:
        r = mean(a, axis, keepdims=keepdims)
        if returned:
            a = asarray(a)
            return r, _scalar(_float64_dt, _count(a, _reduce_axes(a, axis)))
        return r
    _refuse("np.average(weights=)")


# ---- linear algebra ----


def dot(a, b, out=None):
    if out is not None:
        _refuse("np.dot(out=)")
    x = asarray(a)
    y = asarray(b)
    if x.ndim == 0 or y.ndim == 0:
        return multiply(x, y)
    if x.ndim > 2 or y.ndim > 2:
        if y.ndim == 1:
            return matmul(x, y)
        _refuse("np.dot of arrays with more than 2 dimensions")
    return matmul(x, y)


def matmul(x1, x2, out=None):
    if out is not None:
        _refuse("np.matmul(out=)")
    if isinstance(x1, torch.Tensor) or isinstance(x2, torch.Tensor):
        return _torch_matmul(x1, x2)
    a = asarray(x1)
    b = asarray(x2)
    if a.ndim == 0 or b.ndim == 0:
        _raise("ValueError", "matmul: Input operand " + ("0" if a.ndim == 0 else "1") + " does not have enough dimensions (has 0, gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        _raise("ValueError", "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature (n?,k),(k,m?)->(n?,m?) (size " + str(kb) + " is different from " + str(ka) + ")")
    d = _promote(a._dt, b._dt)
    if d.kind == "b":
        # A boolean product is an OR of ANDs.
        return _result(torch.matmul(a._t.to(torch.int64), b._t.to(torch.int64)) != 0)
    return _result(torch.matmul(_cast(a._t, a._dt, d), _cast(b._t, b._dt, d)))


def _torch_matmul(x1, x2):
    if isinstance(x1, torch.Tensor) and isinstance(x2, ndarray):
        # PyTorch takes the array as a tensor and promotes the two.
        d = torch.promote_types(x1.dtype, x2._t.dtype)
        return x1.to(d) @ x2._t.to(d)
    if isinstance(x1, torch.Tensor):
        return x1 @ x2
    _raise("TypeError", "unsupported operand type(s) for @: 'numpy.ndarray' and 'Tensor'")


def outer(a, b, out=None):
    x = asarray(a).reshape(-1)
    y = asarray(b).reshape(-1)
    return multiply(x.reshape(-1, 1), y.reshape(1, -1))


def inner(a, b):
    x = asarray(a)
    y = asarray(b)
    if x.ndim <= 1 and y.ndim <= 1:
        return dot(x, y)
    _refuse("np.inner of arrays with more than 1 dimension")


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    a = asarray(a)
    if a.ndim != 2:
        _refuse("np.trace of arrays with other than 2 dimensions")
    return sum(_wrap(torch.diagonal(a._t, offset)), dtype=dtype)


# ---- sorting, sets, comparisons ----


def sort(a, axis=-1, kind=None, order=None, stable=None):
    if order is not None:
        _refuse("np.sort(order=)")
    a = asarray(a)
    if axis is None:
        a = a.reshape(-1)
        axis = 0
    if a.ndim == 0:
        _raise_axis(axis, 0)
    return _wrap(torch.sort(a._t, stable=True, dim=_axis(axis, a.ndim))[0])


def argsort(a, axis=-1, kind=None, order=None, stable=None):
    # Ties keep their order (a stable sort); NumPy's default quicksort leaves
    # the order of equal elements unspecified.
    if order is not None:
        _refuse("np.argsort(order=)")
    a = asarray(a)
    if axis is None:
        a = a.reshape(-1)
        axis = 0
    return _wrap(torch.sort(a._t, stable=True, dim=_axis(axis, a.ndim))[1])


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, equal_nan=True):
    if axis is not None:
        _refuse("np.unique(axis=)")
    a = asarray(ar)
    if a._dt.kind == "U":
        return _str_unique(a, return_index, return_inverse, return_counts)
    flat = _data(a).reshape(-1)
    n = flat.shape[0]
    s, perm = torch.sort(flat, stable=True, dim=0)
    if n == 0:
        mask = torch.zeros(0, dtype=torch.bool)
    else:
        diff = s[1:] != s[:-1]
        if a._dt.kind == "f" and equal_nan:
            diff = diff & ~(torch.isnan(s[1:]) & torch.isnan(s[:-1]))
        mask = torch.cat([torch.ones(1, dtype=torch.bool), diff])
    vals = _wrap_as(s[mask], a._dt)
    if not (return_index or return_inverse or return_counts):
        return vals
    r = [vals]
    if return_index:
        r.append(_wrap(perm[mask]))
    if return_inverse:
        group = torch.cumsum(mask.to(torch.int64), 0) - 1
        inv = torch.zeros(n, dtype=torch.int64)
        inv[perm] = group
        r.append(_wrap(inv.reshape(a.shape) if a.ndim > 1 else inv))
    if return_counts:
        starts = torch.nonzero(mask).reshape(-1)
        ends = torch.cat([starts[1:], torch.tensor([n])])
        r.append(_wrap(ends - starts))
    return tuple(r)


def searchsorted(a, v, side="left", sorter=None):
    if sorter is not None:
        _refuse("np.searchsorted(sorter=)")
    arr = asarray(a).tolist()
    vals = asarray(v)
    out = []
    for x in vals.reshape(-1).tolist():
        lo, hi = 0, len(arr)
        while lo < hi:
            mid = (lo + hi) // 2
            if arr[mid] < x or (side == "right" and arr[mid] == x):
                lo = mid + 1
            else:
                hi = mid
        out.append(lo)
    r = torch.tensor(out, dtype=torch.int64).reshape(vals.shape)
    return _result(r)


def bincount(x, weights=None, minlength=0):
    a = asarray(x)
    if a.ndim != 1 or a._dt.kind not in "biu":
        _raise("TypeError", "Cannot cast array data from " + repr(a._dt) + " to dtype('int64') according to the rule 'safe'")
    vals = a._t.tolist()
    if vals and _pymin(vals) < 0:
        _raise("ValueError", "'list' argument must have no negative elements")
    n = _pymax(minlength, (_pymax(vals) + 1) if vals else 0)
    if weights is not None:
        _refuse("np.bincount(weights=)")
    counts = [0] * n
    for v in vals:
        counts[v] += 1
    return _wrap(torch.tensor(counts, dtype=torch.int64))


def diff(a, n=1, axis=-1):
    r = asarray(a)
    if r.ndim == 0:
        _raise("ValueError", "diff requires input that is at least one dimensional")
    ax = _axis(axis, r.ndim)
    for i in range(n):
        m = r.shape[ax]
        hi = _wrap(r._t.narrow(ax, 1, _pymax(m - 1, 0)))
        lo = _wrap(r._t.narrow(ax, 0, _pymax(m - 1, 0)))
        # NumPy's diff of booleans is not_equal.
        r = not_equal(hi, lo) if r._dt.kind == "b" else subtract(hi, lo)
        r = asarray(r)
    return r


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    x = asarray(a)
    y = asarray(b)
    d = _float_type(_promote(x._dt, y._dt))
    if d is not _float64_dt and d.itemsize < 8:
        d = _promote(d, _float64_dt) if False else d
    xt = _cast(x._t, x._dt, d)
    yt = _cast(y._t, y._dt, d)
    # |a - b| <= atol + rtol * |b|, infinities equal only to themselves.
    with_tol = torch.abs(xt - yt) <= torch.tensor(atol, dtype=d._torch) + torch.tensor(rtol, dtype=d._torch) * torch.abs(yt)
    fin = torch.isfinite(xt) & torch.isfinite(yt)
    r = torch.where(fin, with_tol, xt == yt)
    if equal_nan:
        r = r | (torch.isnan(xt) & torch.isnan(yt))
    return _result(r)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _pybool(all(isclose(a, b, rtol, atol, equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    x = asarray(a1)
    y = asarray(a2)
    if x.shape != y.shape:
        return False
    d = _promote(x._dt, y._dt)
    xt = _cast(x._t, x._dt, d)
    yt = _cast(y._t, y._dt, d)
    eq = xt == yt
    if equal_nan and d.kind == "f":
        eq = eq | (torch.isnan(xt) & torch.isnan(yt))
    return _pybool(eq.all())


def array_equiv(a1, a2):
    try:
        return _pybool(all(equal(a1, a2)))
    except Exception:
        return False


# ---- types and information ----


def isscalar(element):
    return isinstance(element, (generic, int, float, str))


def issubdtype(arg1, arg2):
    c1 = _as_dtype(arg1)._type if not (_kiln_std.is_class(arg1) and _kiln_std.class_dict(arg1).get("_dtype", None) is None and issubclass(arg1, generic)) else arg1
    if _kiln_std.is_class(arg2) and issubclass(arg2, generic):
        c2 = arg2
    else:
        c2 = _as_dtype(arg2)._type
    return issubclass(c1, c2)


def can_cast(from_, to, casting="safe"):
    src = from_._dt if isinstance(from_, ndarray) else _as_dtype(from_)
    dst = _as_dtype(to)
    if casting == "safe":
        return _promote(src, dst) is dst
    _refuse("np.can_cast(casting=" + repr(casting) + ")")


class finfo:
    def __init__(self, dtype):
        d = _as_dtype(dtype._dt if isinstance(dtype, ndarray) else (dtype._dtype if isinstance(dtype, generic) else dtype))
        if d.kind != "f":
            _raise("ValueError", "data type " + repr(d._type) + " not inexact")
        self.dtype = d
        self.bits = d._bits
        p = {16: (10, 15, -14, 3), 32: (23, 127, -126, 6), 64: (52, 1023, -1022, 15)}[d._bits]
        self.nmant = p[0]
        self.maxexp = p[1] + 1
        self.minexp = p[2]
        self.precision = p[3]
        self.eps = _scalar(d, 2.0 ** -p[0])
        self.epsneg = _scalar(d, 2.0 ** -(p[0] + 1))
        self.max = _scalar(d, (2.0 - 2.0 ** -p[0]) * 2.0 ** p[1])
        self.min = _scalar(d, -((2.0 - 2.0 ** -p[0]) * 2.0 ** p[1]))
        self.tiny = _scalar(d, 2.0 ** p[2])
        self.smallest_normal = self.tiny
        self.smallest_subnormal = _scalar(d, 2.0 ** (p[2] - p[0]))
        self.resolution = _scalar(d, 10.0 ** -p[3])

    def __repr__(self):
        _refuse("repr of np.finfo")


class iinfo:
    def __init__(self, int_type):
        d = _as_dtype(int_type._dt if isinstance(int_type, ndarray) else (int_type._dtype if isinstance(int_type, generic) else int_type))
        if d.kind not in "iu":
            _raise("ValueError", "Invalid integer data type " + repr(d.kind) + ".")
        self.dtype = d
        self.bits = d.itemsize * 8
        self.kind = d.kind
        lo, hi = _int_bounds(d)
        self.min = lo
        self.max = hi

    def __repr__(self):
        _refuse("repr of np.iinfo")


class errstate:
    # Kiln does not print NumPy's floating-point RuntimeWarnings: the state changes nothing.
    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


_err = {"divide": "warn", "over": "warn", "under": "ignore", "invalid": "warn"}


def seterr(all=None, divide=None, over=None, under=None, invalid=None):
    old = dict(_err)
    for k, v in (("divide", divide), ("over", over), ("under", under), ("invalid", invalid)):
        if v is not None or all is not None:
            _err[k] = v if v is not None else all
    return old


def geterr():
    return dict(_err)
)PY";

}  // namespace kiln::py
