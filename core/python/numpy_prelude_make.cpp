// Making arrays (np.array's discovery of shape and dtype, zeros, arange,
// linspace, ...), shape functions and NumPy's indexing rules on torch indexing.
#include "core/python/stdlib.h"

namespace kiln::py {

extern const char* const kNumpyMakeSource;
const char* const kNumpyMakeSource = R"PY(# numpy's functions in Kiln's subset (runs in the numpy module after core).


# ---- making arrays ----


def _discover(obj, depth, shape, values, dts):
    """Walks nested sequences as np.array does: appends leaf values, checks the shape is regular."""
    if isinstance(obj, range):
        obj = list(obj)
    if isinstance(obj, (list, tuple)):
        n = len(obj)
        if len(shape) <= depth:
            shape.append(n)
        elif shape[depth] != n:
            _ragged(shape, depth)
        for x in obj:
            _discover(x, depth + 1, shape, values, dts)
        return
    if isinstance(obj, torch.Tensor):
        obj = _from_tensor(obj.numpy()._t)
    if isinstance(obj, ndarray):
        dts.append(obj._dt)
        sub = list(obj.shape)
        if len(shape) == depth:
            shape.extend(sub)
        elif shape[depth:depth + len(sub)] != sub or len(shape) != depth + len(sub):
            _ragged(shape, depth)
        flat = obj.tolist() if obj._dt.kind == "U" else _data(obj).reshape(-1).tolist()
        if obj._dt.kind == "U" and obj.ndim != 1:
            _refuse("np.array of string arrays of more than one dimension")
        values.extend(flat)
        return
    if len(shape) > depth:
        _ragged(shape, depth)
    if isinstance(obj, generic):
        dts.append(obj._dtype)
        values.append(obj._v)
        return
    if isinstance(obj, _pybool):
        dts.append(_bool_dt)
    elif isinstance(obj, int):
        if obj >= (1 << 63) or obj < -(1 << 63):
            _refuse("a NumPy array of Python integers beyond int64")
        dts.append(_int64_dt)
    elif isinstance(obj, float):
        dts.append(_float64_dt)
    elif isinstance(obj, str):
        dts.append(_str_dtype(len(obj)))
    elif obj is None:
        _refuse("a NumPy array of " + type(obj).__name__ + " (object arrays)")
    else:
        _refuse("a NumPy array of " + type(obj).__name__)
    values.append(obj)
    if len(shape) > depth:
        _ragged(shape, depth)
    shape_done = len(shape)
    return shape_done


def _ragged(shape, depth):
    _raise("ValueError", "setting an array element with a sequence. The requested array has an inhomogeneous shape after " +
           str(depth) + " dimensions. The detected shape was " + repr(tuple(shape[:depth])) + " + inhomogeneous part.")


def array(object, dtype=None, copy=True, order="K", subok=False, ndmin=0, like=None):
    _check_eager()
    want = None if dtype is None else _as_dtype(dtype)
    if isinstance(object, ndarray) and object._dt.kind == "U":
        r = object if want is None and copy is False else object.astype(want or object._dt)
    elif isinstance(object, ndarray):
        d = want or object._dt
        r = object if (want is None or want is object._dt) and copy is False else _wrap_as(_cast(_data(object), object._dt, d).clone(), d)
    elif isinstance(object, generic):
        r = _scalar_array(object)
        if want is not None:
            r = r.astype(want)
    elif isinstance(object, torch.Tensor):
        a = object.numpy()
        r = a if copy is False and (want is None or want is a._dt) else _wrap(_cast(a._t, a._dt, want or a._dt).clone())
    elif isinstance(object, (list, tuple)) and len(object) > 0 and _all_arrays_alike(object):
        d = object[0]._dt
        for x in object:
            d = _promote(d, x._dt)
        r = _wrap_as(torch.stack([_cast(_data(x), x._dt, d) for x in object]), d)
        if want is not None:
            r = r.astype(want, copy=False)
    else:
        shape = []
        values = []
        dts = []
        _discover(object, 0, shape, values, dts)
        d = None
        if _pyany([x.kind == "U" for x in dts]):
            if not _pyall([x.kind == "U" for x in dts]):
                _refuse("a NumPy array of str and numbers")
            if want is not None and (want.kind != "U" or (want.itemsize and want.itemsize < _pymax([x.itemsize for x in dts]))):
                return _str_array(values, shape).astype(want)
            r = _str_array(values, shape, want if want is not None and want.itemsize else None)
            if ndmin > r.ndim:
                r = r.reshape((1,) * (ndmin - r.ndim) + r.shape)
            return r
        for x in dts:
            d = x if d is None else _promote(d, x)
        if d is None:
            d = _float64_dt
        if want is not None:
            if want.kind == "U":
                _refuse("a NumPy string array of numbers")
            if want.kind in "iu" and d.kind == "f":
                if want._wide:
                    _cast_wide(torch.tensor([float(v) for v in values], dtype=torch.float64), _float64_dt, want)
                values = [_norm(want, v) for v in values]
            elif want.kind in "iu":
                lo, hi = _int_bounds(want)
                for v in values:
                    if not isinstance(v, _pybool) and (v < lo or v > hi):
                        _raise("OverflowError", "Python integer " + repr(v) + " out of bounds for " + want.name)
            d = want
        if d.kind == "b":
            values = [v != 0 for v in values]
        elif d.kind == "f" and d._bits < 64:
            # Out-of-range values become infinities, as NumPy's cast.
            values = [_nat.round_to(float(v), d._bits) for v in values]
        t = torch.tensor(values, dtype=d._back if d._wide else d._torch).reshape(shape)
        r = _wrap_as(t, d)
    if ndmin > r.ndim:
        r = r.reshape((1,) * (ndmin - r.ndim) + r.shape)
    return r


def _all_arrays_alike(seq):
    first = seq[0]
    if not isinstance(first, ndarray):
        return False
    for x in seq:
        if not isinstance(x, ndarray) or x.shape != first.shape:
            return False
    return True


def asarray(a, dtype=None, order=None, like=None, copy=None):
    if isinstance(a, ndarray) and (dtype is None or _as_dtype(dtype) is a._dt):
        return a
    if isinstance(a, torch.Tensor) and dtype is None:
        return a.numpy()
    return array(a, dtype, copy=False)


asanyarray = asarray
ascontiguousarray = asarray


def copy(a, order="K", subok=False):
    return array(a, copy=True)


def _shape_of(shape):
    return tuple(_shape_arg(shape))


def _filled(shape, value, d):
    if d._wide:
        if d.kind == "U":
            _refuse("np.full/zeros/ones/empty of a string dtype")
        return _wrap_as(torch.full(_shape_of(shape), _fill_value(value, d), dtype=d._back), d)
    return _wrap(torch.full(_shape_of(shape), _fill_value(value, d), dtype=d._torch))


def _fill_value(value, d):
    if isinstance(value, generic):
        value = value._v
    if isinstance(value, ndarray):
        value = value.item()
    if d.kind in "iu" and isinstance(value, int) and not isinstance(value, _pybool):
        lo, hi = _int_bounds(d)
        if value < lo or value > hi:
            _raise("OverflowError", "Python integer " + repr(value) + " out of bounds for " + d.name)
    if d._wide and isinstance(value, float):
        _cast_wide(torch.tensor(value, dtype=torch.float64), _float64_dt, d)
    return _norm(d, value)


def zeros(shape, dtype=float, order="C", like=None):
    return _filled(shape, 0, _as_dtype(dtype))


def ones(shape, dtype=None, order="C", like=None):
    return _filled(shape, 1, _as_dtype(dtype))


def empty(shape, dtype=float, order="C", like=None):
    # NumPy leaves the memory as it was: every content is a valid result,
    # zeros included (a program reading it before writing is not deterministic under NumPy either).
    return _filled(shape, 0, _as_dtype(dtype))


def full(shape, fill_value, dtype=None, order="C", like=None):
    if dtype is None:
        if isinstance(fill_value, (ndarray, list, tuple)):
            f = asarray(fill_value)
            return _wrap_as(_data(f).expand(_shape_of(shape)).clone(), f._dt)
        d = fill_value._dtype if isinstance(fill_value, generic) else _py_dtype(fill_value)
    else:
        d = _as_dtype(dtype)
    return _filled(shape, fill_value, d)


def _like_dtype(a, dtype):
    return _as_dtype(dtype) if dtype is not None else asarray(a)._dt


def zeros_like(a, dtype=None, order="K", subok=True, shape=None):
    return _filled(asarray(a).shape if shape is None else shape, 0, _like_dtype(a, dtype))


def ones_like(a, dtype=None, order="K", subok=True, shape=None):
    return _filled(asarray(a).shape if shape is None else shape, 1, _like_dtype(a, dtype))


empty_like = zeros_like


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    return _filled(asarray(a).shape if shape is None else shape, fill_value, _like_dtype(a, dtype))


def _plain_number(x, what):
    if isinstance(x, generic):
        return x._v
    if isinstance(x, ndarray) and x.ndim == 0:
        return x.item()
    if isinstance(x, (int, float)):
        return x
    _raise("TypeError", what + " must be a number, not " + type(x).__name__)


def arange(start, stop=None, step=None, dtype=None, like=None):
    if stop is None:
        start, stop = 0, start
    start = _plain_number(start, "arange start")
    stop = _plain_number(stop, "arange stop")
    step = 1 if step is None else _plain_number(step, "arange step")
    if step == 0:
        _raise("ZeroDivisionError", "division by zero")
    if dtype is None:
        d = _float64_dt if _pyany([isinstance(x, float) for x in (start, stop, step)]) else _int64_dt
    else:
        d = _as_dtype(dtype)
    n = _math.ceil((stop - start) / step) if isinstance(start, float) or isinstance(stop, float) or isinstance(step, float) \
        else -((start - stop) // step)
    n = _pymax(int(n), 0)
    if d._wide and d.kind == "u" and isinstance(start, int) and isinstance(step, int):
        t = torch.arange(start, start + n * step, step, dtype=torch.int64)[:n]
        return _wrap_as(_cast_wide(t, _int64_dt, d), d) if n == 0 or (start >= 0 and start + (n - 1) * step >= 0) \
            else _refuse("np.arange of negative values as " + d.name)
    if d.kind in "iu" and isinstance(start, int) and isinstance(step, int):
        return _wrap(torch.arange(start, start + n * step, step, dtype=d._torch)[:n])
    if d.kind == "b":
        _refuse("np.arange(dtype=bool)")
    # NumPy's fill: the first two values, then start + i * delta in the dtype.
    if d.kind == "f":
        s = _nat.round_to(float(start), d._bits)
        delta = _nat.round_to(_nat.round_to(float(start + step), d._bits) - s, d._bits)
        idx = torch.arange(n, dtype=d._torch)
        t = torch.tensor(s, dtype=d._torch) + idx * torch.tensor(delta, dtype=d._torch)
        return _wrap(t)
    vals = [_norm(d, start + i * step) for i in range(n)]
    return _wrap(torch.tensor(vals, dtype=d._torch))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    num = _index_int(num, "num")
    if num < 0:
        _raise("ValueError", "Number of samples, " + str(num) + ", must be non-negative.")
    if isinstance(start, (list, tuple, ndarray)) or isinstance(stop, (list, tuple, ndarray)) or axis != 0:
        _refuse("np.linspace with array endpoints")
    s = _plain_number(start, "start")
    e = _plain_number(stop, "stop")
    dt = _float64_dt
    for x in (start, stop):
        if isinstance(x, generic) and x._dtype.kind == "f":
            dt = _promote(dt, x._dtype) if x._dtype is not _float64_dt else dt
    if isinstance(start, generic) and isinstance(stop, generic) and start._dtype.kind == "f" and stop._dtype.kind == "f":
        dt = _promote(start._dtype, stop._dtype)
    div = num - 1 if endpoint else num
    delta = _nat.round_to(float(e) - float(s), dt._bits)
    y = torch.arange(num, dtype=dt._torch)
    tdelta = torch.tensor(delta, dtype=dt._torch)
    if div > 0:
        step = _nat.round_to(delta / div, dt._bits)
        if step == 0:
            y = y / torch.tensor(float(div), dtype=dt._torch) * tdelta
        else:
            y = y * torch.tensor(step, dtype=dt._torch)
    else:
        step = _NAN
        y = y * tdelta
    y = y + torch.tensor(float(s), dtype=dt._torch)
    if endpoint and num > 1:
        y[-1] = float(e)
    r = _wrap(y)
    if dtype is not None:
        d = _as_dtype(dtype)
        if d.kind in "iu":
            r = _wrap(torch.floor(r._t))
        r = r.astype(d, copy=False)
    if retstep:
        return r, _scalar(dt, step)
    return r


def eye(N, M=None, k=0, dtype=float, order="C", like=None):
    d = _as_dtype(dtype)
    m = N if M is None else M
    t = torch.zeros((N, m), dtype=d._torch)
    for i in range(N):
        j = i + k
        if j >= 0 and j < m:
            t[i, j] = 1
    return _wrap(t)


def identity(n, dtype=None, like=None):
    return eye(n, dtype=dtype)


# ---- shapes ----


def _axis(axis, ndim):
    if not isinstance(axis, int):
        axis = _index_int(axis, "axis")
    if axis < -ndim or axis >= ndim:
        _raise_axis(axis, ndim)
    return axis + ndim if axis < 0 else axis


class AxisError(ValueError):
    pass


_kiln_std.set_class_name(AxisError, "AxisError", "numpy.exceptions")


def _raise_axis(axis, ndim):
    raise AxisError("axis " + str(axis) + " is out of bounds for array of dimension " + str(ndim))


def _axes(axis, ndim):
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, (tuple, list)):
        r = [_axis(x, ndim) for x in axis]
        if len(set(r)) != len(r):
            _raise("ValueError", "duplicate value in 'axis'")
        return sorted(r)
    return [_axis(axis, ndim)]


def reshape(a, newshape=None, order="C", shape=None):
    a = asarray(a)
    _order_c(order, "reshape")
    s = shape if newshape is None else newshape
    dims = _shape_arg(s)
    n = a.size
    known = 1
    unknown = 0
    for x in dims:
        if x == -1:
            unknown += 1
        else:
            known *= x
    if unknown > 1:
        _raise("ValueError", "can only specify one unknown dimension")
    if (unknown == 0 and known != n) or (unknown == 1 and (known == 0 or n % known != 0)):
        _raise("ValueError", "cannot reshape array of size " + str(n) + " into shape " + _shape_text(s))
    return _wrap(a._t.reshape(dims))


def _shape_text(s):
    if isinstance(s, (list, tuple)):
        return repr(tuple(s))
    return "(" + str(s) + ",)"


def ravel(a, order="C"):
    a = asarray(a)
    _order_c(order, "ravel")
    return _wrap(a._t.reshape(-1))


def transpose(a, axes=None):
    a = asarray(a)
    if axes is None:
        return _wrap(a._t.permute(list(range(a.ndim - 1, -1, -1))))
    axes = [_axis(x, a.ndim) for x in axes]
    if len(axes) != a.ndim:
        _raise("ValueError", "axes don't match array")
    return _wrap(a._t.permute(axes))


def swapaxes(a, axis1, axis2):
    a = asarray(a)
    return _wrap(a._t.transpose(_axis(axis1, a.ndim), _axis(axis2, a.ndim)))


def moveaxis(a, source, destination):
    a = asarray(a)
    return _wrap(torch.movedim(a._t, source, destination))


def squeeze(a, axis=None):
    a = asarray(a)
    if axis is None:
        return _wrap(a._t.reshape([s for s in a.shape if s != 1]))
    axes = _axes(axis, a.ndim)
    for x in axes:
        if a.shape[x] != 1:
            _raise("ValueError", "cannot select an axis to squeeze out which has size not equal to one")
    return _wrap(a._t.reshape([a.shape[i] for i in range(a.ndim) if i not in axes]))


def expand_dims(a, axis):
    a = asarray(a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = a.ndim + len(axes)
    pos = sorted([_axis(x, nd) for x in axes])
    shape = list(a.shape)
    for p in pos:
        shape.insert(p, 1)
    return _wrap(a._t.reshape(shape))


def atleast_1d(*arys):
    r = [asarray(a) for a in arys]
    r = [a.reshape(1) if a.ndim == 0 else a for a in r]
    return r[0] if len(r) == 1 else r


def atleast_2d(*arys):
    r = []
    for a in arys:
        a = asarray(a)
        if a.ndim == 0:
            a = a.reshape(1, 1)
        elif a.ndim == 1:
            a = a.reshape(1, a.shape[0])
        r.append(a)
    return r[0] if len(r) == 1 else r


def _common(arrays):
    arrs = [asarray(x) for x in arrays]
    d = arrs[0]._dt
    for x in arrs:
        d = _promote(d, x._dt)
    return arrs, d


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        _refuse("np.concatenate(out=)")
    arrs, d = _common(arrays)
    if dtype is not None:
        d = _as_dtype(dtype)
    if axis is None:
        return _wrap(torch.cat([_cast(a._t.reshape(-1), a._dt, d) for a in arrs]))
    nd = arrs[0].ndim
    if nd == 0:
        _raise("ValueError", "zero-dimensional arrays cannot be concatenated")
    ax = _axis(axis, nd)
    for i in range(len(arrs)):
        a = arrs[i]
        if a.ndim != nd:
            _raise("ValueError", "all the input array dimensions except for the concatenation axis must match exactly, but along dimension 0, the array at index 0 has " + str(nd) + " dimension(s) and the array at index " + str(i) + " has " + str(a.ndim) + " dimension(s)" if False else
                   "all the input arrays must have same number of dimensions, but the array at index 0 has " + str(nd) + " dimension(s) and the array at index " + str(i) + " has " + str(a.ndim) + " dimension(s)")
        for k in range(nd):
            if k != ax and a.shape[k] != arrs[0].shape[k]:
                _raise("ValueError", "all the input array dimensions except for the concatenation axis must match exactly, but along dimension " + str(k) + ", the array at index 0 has size " + str(arrs[0].shape[k]) + " and the array at index " + str(i) + " has size " + str(a.shape[k]))
    return _wrap(torch.cat([_cast(a._t, a._dt, d) for a in arrs], ax))


concat = concatenate


def stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrs, d = _common(arrays)
    if dtype is not None:
        d = _as_dtype(dtype)
    for a in arrs:
        if a.shape != arrs[0].shape:
            _raise("ValueError", "all input arrays must have the same shape")
    ax = _axis(axis, arrs[0].ndim + 1)
    return _wrap(torch.stack([_cast(a._t, a._dt, d) for a in arrs], ax))


def append(arr, values, axis=None):
    arr = asarray(arr)
    if axis is None:
        if arr.ndim != 1:
            arr = ravel(arr)
        values = ravel(values)
        axis = arr.ndim - 1
    return concatenate((arr, values), axis=axis)


def vstack(tup, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in tup], 0, dtype=dtype)


row_stack = vstack


def hstack(tup, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype)


def column_stack(tup):
    arrs = []
    for a in tup:
        a = asarray(a)
        if a.ndim < 2:
            a = a.reshape(-1, 1)
        arrs.append(a)
    return concatenate(arrs, 1)


class _AxisConcatenator:
    # np.r_ / np.c_: index with arrays, scalars and slices (as arange) and get them
    # joined along `axis`, after giving each at least `ndmin` dimensions (a 1-D
    # piece of np.c_ becomes a column, as NumPy's trans1d=0 does).
    def __init__(self, axis, ndmin):
        self._axis = axis
        self._ndmin = ndmin

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        pieces = []
        for k in key:
            if isinstance(k, str):
                _refuse("np.r_/np.c_ string directives")
            if isinstance(k, slice):
                a = arange(0 if k.start is None else k.start, k.stop, 1 if k.step is None else k.step)
            else:
                a = asarray(k)
            if a.ndim < self._ndmin:
                a = a.reshape([1] * (self._ndmin - a.ndim) + list(a.shape)) if a.ndim == 0 else a.reshape(list(a.shape) + [1] * (self._ndmin - a.ndim))
            pieces.append(a)
        return concatenate(pieces, axis=self._axis)

    def __len__(self):
        return 0


r_ = _AxisConcatenator(0, 1)
c_ = _AxisConcatenator(-1, 2)


def split(ary, indices_or_sections, axis=0):
    a = asarray(ary)
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    if isinstance(indices_or_sections, (int, integer)):
        k = _index_int(indices_or_sections)
        if n % k != 0:
            _raise("ValueError", "array split does not result in an equal division")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        bounds = [0] + [_pymin(_pymax(int(i), 0), n) for i in indices_or_sections] + [n]
    return [_wrap(a._t.narrow(ax, bounds[i], _pymax(bounds[i + 1] - bounds[i], 0))) for i in range(len(bounds) - 1)]


def tile(A, reps):
    a = asarray(A)
    reps = list(reps) if isinstance(reps, (tuple, list)) else [reps]
    nd = _pymax(a.ndim, len(reps))
    t = a._t.reshape([1] * (nd - a.ndim) + list(a.shape))
    reps = [1] * (nd - len(reps)) + reps
    return _wrap(t.repeat(*reps))


def repeat(a, repeats, axis=None):
    a = asarray(a)
    t = a._t.reshape(-1) if axis is None else a._t
    ax = 0 if axis is None else _axis(axis, a.ndim)
    r = repeats._t if isinstance(repeats, ndarray) else (torch.tensor(repeats) if isinstance(repeats, (list, tuple)) else _index_int(repeats))
    return _wrap(torch.repeat_interleave(t, r, ax))


def flip(m, axis=None):
    a = asarray(m)
    r = _wrap(a._t.flip(_axes(axis, a.ndim)))
    r._reversed_copy = True
    return r


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def broadcast_to(array, shape, subok=False):
    a = asarray(array)
    return _wrap(a._t.expand(_shape_of(shape)))


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        _raise("ValueError", "Valid values for `indexing` are 'xy' and 'ij'.")
    arrs = [asarray(x).reshape(-1) for x in xi]
    ndim = len(arrs)
    ones = [1] * ndim
    out = []
    for i in range(ndim):
        s = list(ones)
        s[i] = -1
        out.append(arrs[i].reshape(tuple(s)))
    if indexing == "xy" and ndim > 1:
        out[0] = out[0].reshape(tuple([1, -1] + ones[2:]))
        out[1] = out[1].reshape(tuple([-1, 1] + ones[2:]))
    if not sparse:
        # Each array is long along its own axis only: the grid's shape takes every length.
        full = tuple([max([o.shape[k] for o in out]) for k in range(ndim)])
        out = [broadcast_to(o, full) for o in out]
    if copy:
        out = [o.copy() for o in out]
    return tuple(out)


def shape(a):
    return asarray(a).shape


def ndim(a):
    return asarray(a).ndim


def size(a, axis=None):
    a = asarray(a)
    return a.size if axis is None else a.shape[_axis(axis, a.ndim)]


def tril(m, k=0):
    a = asarray(m)
    return _wrap(torch.tril(a._t, k))


def triu(m, k=0):
    a = asarray(m)
    return _wrap(torch.triu(a._t, k))


def diag(v, k=0):
    a = asarray(v)
    if a.ndim == 1 or a.ndim == 2:
        return _wrap(torch.diag(a._t, k))
    _raise("ValueError", "Input must be 1- or 2-d.")


# ---- indexing ----


def _int_key(a, key):
    """key as a tuple of in-range Python ints (the common a[i, j]), else None."""
    t = type(key)
    if t is int:
        key = (key,)
    elif t is not tuple:
        return None
    shape = _data(a).shape
    if len(key) > len(shape):
        return None
    for k in range(len(key)):
        i = key[k]
        if type(i) is not int or i >= shape[k] or i < -shape[k]:
            return None
    return key


def _index_parts(a, key):
    """NumPy's index `key` on array a as a torch index: (parts, flipped dims, is_scalar_result)."""
    ints = _int_key(a, key)
    if ints is not None:
        return ints, [], len(ints) == _data(a).dim()
    if not isinstance(key, tuple):
        key = (key,)
    parts = []
    kinds = []
    for k in key:
        if k is None or k is Ellipsis:
            parts.append(k)
            kinds.append(0)
        elif isinstance(k, _pybool) or isinstance(k, bool_):
            _refuse("indexing an array with a Python or NumPy bool")
        elif isinstance(k, (int, integer)):
            parts.append(_index_int(k))
            kinds.append(1)
        elif isinstance(k, slice):
            parts.append(slice(None if k.start is None else _index_int(k.start), None if k.stop is None else _index_int(k.stop),
                               None if k.step is None else _index_int(k.step)))
            kinds.append(1)
        else:
            if isinstance(k, torch.Tensor):
                k = k.numpy()
            if isinstance(k, (list, tuple)) and len(k) == 0:
                arr = _wrap(torch.zeros(0, dtype=torch.int64))
            else:
                arr = asarray(k)
            if arr._dt.kind == "b":
                parts.append(arr._t)
                kinds.append(arr.ndim if arr.ndim > 0 else 0)
            elif arr._dt.kind in "iu":
                parts.append(_data(arr).to(torch.int64) if arr._dt is not _int64_dt else arr._t)
                kinds.append(1)
            else:
                _raise("IndexError", "arrays used as indices must be of integer (or boolean) type")
    used = 0
    for k in kinds:
        used += k
    n_ell = len([p for p in parts if p is Ellipsis])
    if n_ell > 1:
        _raise("IndexError", "an index can only have a single ellipsis ('...')")
    if used > a.ndim:
        _raise("IndexError", "too many indices for array: array is " + str(a.ndim) + "-dimensional, but " + str(used) + " were indexed")
    scalar = n_ell == 0 and used == a.ndim and _pyall([isinstance(p, int) for p in parts])
    # The dimension each part applies to: ints are checked with NumPy's message,
    # negative steps become a flip (torch slices step forward only).
    dim = 0
    flips = []
    out = []
    for i in range(len(parts)):
        p = parts[i]
        if p is None:
            out.append(p)
        elif p is Ellipsis:
            out.append(p)
            dim += a.ndim - used
        elif isinstance(p, int):
            n = a.shape[dim]
            if p < -n or p >= n:
                _raise("IndexError", "index " + str(p) + " is out of bounds for axis " + str(dim) + " with size " + str(n))
            out.append(p)
            dim += 1
        elif isinstance(p, slice):
            if p.step is not None and p.step < 0:
                n = a.shape[dim]
                idx = _negative_step_range(p, n)
                flips.append(dim)
                if len(idx) == 0:
                    out.append(slice(0, 0))
                else:
                    s = -p.step
                    first = n - 1 - idx[0]
                    out.append(slice(first, first + (len(idx) - 1) * s + 1, s))
            elif p.step == 0:
                _raise("ValueError", "slice step cannot be zero")
            else:
                out.append(p)
            dim += 1
        else:
            if p.dtype == torch.bool:
                for k in range(p.dim()):
                    if dim + k < a.ndim and p.shape[k] != a.shape[dim + k]:
                        _raise("IndexError", "boolean index did not match indexed array along axis " + str(dim + k) +
                               "; size of axis is " + str(a.shape[dim + k]) + " but size of corresponding boolean axis is " + str(p.shape[k]))
            out.append(p)
            dim += kinds[i]
    # Beside an index array, NumPy's integers are index arrays too (they take
    # part in where the advanced dimensions go); torch's select would not.
    if _pyany([isinstance(p, torch.Tensor) and p.dim() > 0 for p in out]):
        out = [torch.tensor([p], dtype=torch.int64) if isinstance(p, int) else p for p in out]
    return tuple(out), flips, scalar


def _negative_step_range(p, n):
    start = p.start
    stop = p.stop
    if start is None:
        start = n - 1
    else:
        if start < 0:
            start += n
        start = -1 if start < 0 else (n - 1 if start >= n else start)
    if stop is None:
        stop = -1
    else:
        if stop < 0:
            stop += n
        stop = -1 if stop < 0 else (n - 1 if stop >= n else stop)
    return range(start, stop, p.step)


def _getitem(a, key):
    parts, flips, scalar = _index_parts(a, key)
    t = _data(a)
    if flips:
        t = t.flip(flips)
    r = t[parts] if len(parts) != 1 else t[parts[0]]
    if scalar:
        return _scalar_exact(a._dt, r.item())
    w = _wrap_as(r, a._dt)
    if flips or (a._reversed_copy and _is_basic(parts)):
        w._reversed_copy = True
    return w


def _is_basic(parts):
    for p in parts:
        if not (p is None or p is Ellipsis or isinstance(p, (int, slice))):
            return False
    return True


def _setitem(a, key, value):
    _check_writable(a)
    if a._dt._wide:
        # uint16/uint32: the value cast to the dtype, written into the wider tensor.
        if isinstance(value, (int, float, generic)) and not isinstance(value, ndarray):
            v = _fill_value(value, a._dt)
        else:
            v = _wrap(_value_tensor(value, a._dt))
        _setitem(_as_back(a), key, v)
        return
    parts, flips, scalar = _index_parts(a, key)
    if scalar and isinstance(value, (int, float, generic)):
        # One element: the number cast as NumPy casts it, written directly.
        a._t[parts] = _fill_value(value, a._dt)
        return
    v = _value_tensor(value, a._dt)
    if v.dim() > 0:
        target = tuple(a._t[parts].shape) if len(parts) != 1 else tuple(a._t[parts[0]].shape)
        vs = tuple(v.shape)
        ok = len(vs) <= len(target) or _pyall([x == 1 for x in vs[:len(vs) - len(target)]])
        for k in range(1, _pymin(len(vs), len(target)) + 1):
            if vs[-k] != 1 and vs[-k] != target[-k]:
                ok = False
        if not ok:
            _raise("ValueError", "could not broadcast input array from shape " + _shape_str(vs) + " into shape " + _shape_str(target))
    if flips:
        t = a._t.flip(flips)
        if len(parts) == 1:
            t[parts[0]] = v
        else:
            t[parts] = v
        a._t.copy_(t.flip(flips))
        return
    if len(parts) == 1:
        a._t[parts[0]] = v
    else:
        a._t[parts] = v


def _value_tensor(value, d):
    if isinstance(value, torch.Tensor):
        value = value.numpy()
    if isinstance(value, ndarray):
        return _cast(_data(value), value._dt, d)
    if isinstance(value, (list, tuple)):
        v = array(value, dtype=d) if d._wide else asarray(value)
        return _cast(_data(v), v._dt, d)
    return torch.tensor(_fill_value(value, d), dtype=d._back if d._wide else d._torch)


def take(a, indices, axis=None):
    a = asarray(a)
    if axis is None:
        return asarray(a.ravel()[indices])
    idx = [slice(None)] * a.ndim
    idx[_axis(axis, a.ndim)] = indices
    return a[tuple(idx)]


def nonzero(a):
    a = asarray(a)
    if a.ndim == 0:
        _raise("ValueError", "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead. If the context of this error is of the form `arr[nonzero(cond)]`, just use `arr[cond]`.")
    nz = torch.nonzero(a._t != 0)
    return tuple([_wrap(nz[:, i].contiguous()) for i in range(a.ndim)])


def argwhere(a):
    a = asarray(a)
    return _wrap(torch.nonzero(a._t != 0))


def flatnonzero(a):
    return nonzero(ravel(a))[0]


def count_nonzero(a, axis=None, keepdims=False):
    a = asarray(a)
    r = sum(a != 0, axis=axis, keepdims=keepdims)
    # NumPy counts the whole array as a Python int.
    return r._v if axis is None and not keepdims else r


def where(condition, x=None, y=None):
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        _raise("ValueError", "either both or neither of x and y should be given")
    c = asarray(condition)
    r = _binary_dtype(x, y, "where")
    if r is None:
        _raise("TypeError", "np.where of " + type(x).__name__ + " and " + type(y).__name__)
    tx, dx, ty, dy, d = r
    return _result(torch.where(c._t != 0 if c._dt.kind != "b" else c._t, _tensor_of(x, tx, dx, d), _tensor_of(y, ty, dy, d)))
)PY";

}  // namespace kiln::py
