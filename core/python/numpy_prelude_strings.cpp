// NumPy's string arrays ('<U6') and the module's last step: the functions that
// keep an array's dtype learn uint16/uint32 and string arrays.
#include "core/python/stdlib.h"

namespace kiln::py {

extern const char* const kNumpyStringsSource;
const char* const kNumpyStringsSource = R"PY(# ---- string arrays ----
# A string array keeps its str values in a list `_s` and, in `_w`, an int64
# tensor of positions into it with the array's shape: indexing, reshaping and
# transposing run on the positions, so they are NumPy's for any key. Elements
# read back are Python str (Kiln's interpreter has no subclass of str for np.str_).


def _str_wrap(values, pos, d):
    _check_eager()
    a = _kiln_std.new_instance(ndarray)
    a._s = values
    a._w = pos
    a._dt = d
    return a


def _str_array(values, shape, d=None):
    if d is None:
        n = 1
        for v in values:
            n = _pymax(n, len(v))
        d = _str_dtype(n)
    return _str_wrap(list(values), torch.arange(len(values), dtype=torch.int64).reshape(tuple(shape)), d)


def _str_retag(r, a):
    """The result of a function run on a string array's positions, as strings."""
    if isinstance(r, ndarray):
        return _str_wrap(a._s, r._t, a._dt)
    if isinstance(r, generic):
        return a._s[r._v]
    if isinstance(r, (tuple, list)):
        return type(r)([_str_retag(x, a) for x in r])
    return r


def _str_getitem(a, key):
    return _str_retag(_getitem(_wrap(a._w), key), a)


def _str_nested(values, pos):
    if isinstance(pos, list):
        return [_str_nested(values, p) for p in pos]
    return values[pos]


def _str_astype(a, dt):
    d = _as_dtype(dt)
    pos = a._w.reshape(-1).tolist()
    if d.kind == "U":
        if d.itemsize == 0 or d.itemsize >= a._dt.itemsize:
            return _str_wrap(a._s, a._w.clone(), a._dt if d.itemsize == 0 else d)
        _refuse("astype to a shorter string dtype (NumPy truncates the strings)")
    vals = [a._s[p] for p in pos]
    if d.kind in "iu":
        lo, hi = _int_bounds(d)
        nums = [int(v) for v in vals]
        for v in nums:
            if v < lo or v > hi:
                _refuse("casting the string " + repr(str(v)) + " to " + d.name + " (out of its range)")
    elif d.kind == "f":
        nums = [float(v) for v in vals]
    else:
        _refuse("casting a NumPy string array to " + d.name)
    return array(nums, dtype=d).reshape(a.shape)


def _str_operand(x):
    if isinstance(x, str):
        return [x], torch.tensor(0, dtype=torch.int64)
    if isinstance(x, ndarray) and x._dt.kind == "U":
        return x._s, x._w
    _refuse("comparing a NumPy string array with " + type(x).__name__ + " values")


def _str_compare(op, x, y):
    sx, tx = _str_operand(x)
    sy, ty = _str_operand(y)
    _check_broadcast(tx, ty)
    px, py = torch.broadcast_tensors(tx, ty)
    f = _PY_COMPARE[op]
    vals = [f(sx[i], sy[j]) for i, j in zip(px.reshape(-1).tolist(), py.reshape(-1).tolist())]
    return _result(torch.tensor(vals, dtype=torch.bool).reshape(tuple(px.shape)))


def _str_unique(a, return_index, return_inverse, return_counts):
    vals = [a._s[p] for p in a._w.reshape(-1).tolist()]
    n = len(vals)
    order = sorted(range(n), key=lambda i: vals[i])
    uniq = []
    first = []
    counts = []
    inv = [0] * n
    for i in order:
        if not uniq or vals[i] != uniq[-1]:
            uniq.append(vals[i])
            first.append(i)
            counts.append(0)
        inv[i] = len(uniq) - 1
        counts[-1] += 1
    u = _str_array(uniq, (len(uniq),), a._dt)
    if not (return_index or return_inverse or return_counts):
        return u
    r = [u]
    if return_index:
        r.append(_wrap(torch.tensor(first, dtype=torch.int64)))
    if return_inverse:
        t = torch.tensor(inv, dtype=torch.int64)
        r.append(_wrap(t.reshape(a.shape) if a.ndim > 1 else t))
    if return_counts:
        r.append(_wrap(torch.tensor(counts, dtype=torch.int64)))
    return tuple(r)


class _StrFormat:
    def __init__(self, values):
        self.values = values

    def __call__(self, p):
        return repr(self.values[p])


# ---- dtype-keeping functions for uint16/uint32 and string arrays ----

for _name in ("reshape", "ravel", "transpose", "swapaxes", "moveaxis", "squeeze", "expand_dims", "flip", "fliplr",
              "flipud", "broadcast_to", "take", "tile", "repeat"):
    globals()[_name] = _keep_dtype(globals()[_name], "shape")
for _name in ("amax", "amin", "sort", "ptp", "tril", "triu", "diag"):
    globals()[_name] = _keep_dtype(globals()[_name], "value")
for _name in ("argmax", "argmin", "argsort", "mean", "var", "std", "median", "average", "any", "all", "count_nonzero",
              "nonzero", "argwhere", "flatnonzero"):
    globals()[_name] = _keep_dtype(globals()[_name], "other")
max = amax
min = amin
)PY";

}  // namespace kiln::py
