// numpy.random: the legacy global RandomState, draw for draw NumPy's.
#include "core/python/stdlib.h"

namespace kiln::py {

extern const char* const kNumpyRandomSource;
const char* const kNumpyRandomSource = R"PY(# numpy.random: NumPy's legacy RandomState (MT19937) draw for draw, as
# numpy/random/mtrand.pyx and its C distributions make them. The words come
# from the native generator; what is built from them follows NumPy's order.
import math as _math
import torch
import _kiln_std
import _kiln_numpy as _nat
import numpy as _np

_pybool = bool


def _refuse(what):
    _kiln_std.refuse(what + " is outside Kiln's NumPy subset (docs/python.md lists what it models)")


def _raise(kind, message):
    _kiln_std.raise_error(kind, message)


def _size_shape(size):
    if isinstance(size, (list, tuple)):
        return tuple([_np._index_int(s, "size") for s in size])
    return (_np._index_int(size, "size"),)


def _count(shape):
    n = 1
    for s in shape:
        n *= s
    return n


_LEGACY_NAMES = set("""beta binomial chisquare dirichlet exponential f gamma geometric gumbel hypergeometric laplace logistic
lognormal logseries multinomial multivariate_normal negative_binomial noncentral_chisquare noncentral_f pareto poisson
power rayleigh standard_cauchy standard_exponential standard_gamma standard_t triangular vonmises wald weibull zipf
random_integers bytes get_state set_state tomaxint""".split())


class RandomState:
    def __init__(self, seed=None):
        self._mt = _nat.random_state()
        self.seed(seed)

    def __getattr__(self, name):
        if name in _LEGACY_NAMES:
            _refuse("numpy.random.RandomState." + name)
        _raise("AttributeError", "'RandomState' object has no attribute '" + name + "'")

    def __repr__(self):
        return "RandomState(MT19937)"

    def seed(self, seed=None):
        if seed is None:
            self._mt("seed_os")
            return
        if isinstance(seed, _np.ndarray) and seed.ndim == 0:
            seed = seed.item()
        if isinstance(seed, (int, _np.integer)) and not isinstance(seed, _pybool):
            s = _np._index_int(seed)
            if s < 0 or s > 4294967295:
                _raise("ValueError", "Seed must be between 0 and 2**32 - 1")
            # NumPy's legacy seeding of an integer: init_genrand, not init_by_array.
            self._mt("seed_int", s)
            return
        if isinstance(seed, float) or isinstance(seed, _np.floating):
            _raise("TypeError", "Cannot cast scalar from dtype('float64') to dtype('int64') according to the rule 'safe'")
        obj = _np.asarray(seed)
        if obj.size == 0:
            _raise("ValueError", "Seed must be non-empty")
        if obj.dtype.kind not in "biu":
            _raise("TypeError", "Cannot cast array data from " + repr(obj.dtype) + " to dtype('int64') according to the rule 'safe'")
        if obj.ndim != 1:
            _raise("ValueError", "Seed array must be 1-d")
        words = obj.tolist()
        for w in words:
            if w < 0 or w > 4294967295:
                _raise("ValueError", "Seed must be between 0 and 2**32 - 1")
        self._mt("seed_array", words)

    # ---- floats ----

    def _doubles(self, op, size):
        if size is None:
            return self._mt("double" if op == "doubles" else "gauss")
        shape = _size_shape(size)
        return _np._wrap(self._mt(op, _count(shape)).reshape(shape))

    def random_sample(self, size=None):
        return self._doubles("doubles", size)

    def random(self, size=None):
        return self._doubles("doubles", size)

    def ranf(self, size=None):
        return self._doubles("doubles", size)

    def sample(self, size=None):
        return self._doubles("doubles", size)

    def rand(self, *args):
        if not args:
            return self._mt("double")
        return self._doubles("doubles", args)

    def randn(self, *args):
        if not args:
            return self._mt("gauss")
        return self._doubles("gausses", args)

    def standard_normal(self, size=None):
        return self._doubles("gausses", size)

    def _two_param(self, a, b, size, draw):
        # NumPy's `cont`: parameters broadcast against each other (and size);
        # one draw per element in C order, each combined with its parameters.
        if not isinstance(a, (_np.ndarray, list, tuple)) and not isinstance(b, (_np.ndarray, list, tuple)):
            x = float(a)
            y = float(b)
            if size is None:
                return draw(x, y, self._mt("double" if draw is _uniform else "gauss"))
            shape = _size_shape(size)
            u = self._mt("doubles" if draw is _uniform else "gausses", _count(shape)).reshape(shape)
            return _np._wrap(draw(torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64), u))
        at = _np.asarray(a).astype(_np.float64)._t
        bt = _np.asarray(b).astype(_np.float64)._t
        shape = tuple(torch.broadcast_tensors(at, bt)[0].shape) if size is None else _size_shape(size)
        at = at.expand(shape)
        bt = bt.expand(shape)
        u = self._mt("doubles" if draw is _uniform else "gausses", _count(shape)).reshape(shape)
        return _np._result(draw(at, bt, u))

    def normal(self, loc=0.0, scale=1.0, size=None):
        s = _np.asarray(scale)
        if _pybool((s._t < 0).any()):
            _raise("ValueError", "scale < 0")
        return self._two_param(loc, scale, size, _normal)

    def uniform(self, low=0.0, high=1.0, size=None):
        if not isinstance(low, (_np.ndarray, list, tuple)) and not isinstance(high, (_np.ndarray, list, tuple)):
            rng = float(high) - float(low)
            if rng != rng or rng in (float("inf"), -float("inf")):
                _raise("OverflowError", "Range exceeds valid bounds")
        return self._two_param(low, high, size, _uniform)

    # ---- integers ----

    def randint(self, low, high=None, size=None, dtype=int):
        d = _np._as_dtype(dtype)
        if d.kind not in "iu" or d.itemsize < 4:
            _refuse("numpy.random.randint(dtype=" + d.name + ")")
        if isinstance(low, (_np.ndarray, list, tuple)) or isinstance(high, (_np.ndarray, list, tuple)):
            _refuse("numpy.random.randint with array bounds")
        if high is None:
            high = low
            low = 0
        lo = _np._index_int(low)
        hi = _np._index_int(high) - 1
        bmin, bmax = _np._int_bounds(d)
        if lo < bmin:
            _raise("ValueError", "low is out of bounds for " + d.name)
        if hi > bmax:
            _raise("ValueError", "high is out of bounds for " + d.name)
        if lo > hi:
            _raise("ValueError", "low >= high")
        if size is None:
            v = self._mt("bounded", lo, hi - lo, 1).item()
            return v if dtype is int else _np._scalar(d, v)
        shape = _size_shape(size)
        t = self._mt("bounded", lo, hi - lo, _count(shape)).reshape(shape)
        return _np._wrap(t.to(d._torch))

    # ---- sequences ----

    def shuffle(self, x):
        if isinstance(x, _np.ndarray):
            _np._check_writable(x)
            if x.ndim == 0:
                _raise("TypeError", "object of type 'numpy.int64' has no len()" if False else "len() of unsized object")
            n = x.shape[0]
            if n == 0:
                return
            order = self._mt("shuffle_order", n)
            x._t.copy_(x._t[order])
            return
        if isinstance(x, list):
            order = self._mt("shuffle_order", len(x)).tolist()
            items = [x[i] for i in order]
            for k in range(len(items)):
                x[k] = items[k]
            return
        _refuse("numpy.random.shuffle of a " + type(x).__name__)

    def permutation(self, x):
        if isinstance(x, (int, _np.integer)) and not isinstance(x, _pybool):
            arr = _np.arange(_np._index_int(x))
            self.shuffle(arr)
            return arr
        arr = _np.asarray(x)
        if arr.ndim < 1:
            _raise("IndexError", "x must be an integer or at least 1-dimensional")
        if arr.ndim == 1:
            arr = arr.copy()
            self.shuffle(arr)
            return arr
        idx = _np.arange(arr.shape[0])
        self.shuffle(idx)
        return arr[idx]

    def choice(self, a, size=None, replace=True, p=None):
        if isinstance(a, (int, _np.integer)) or (isinstance(a, _np.ndarray) and a.ndim == 0):
            pop_size = _np._index_int(a)
            arr = None
            if pop_size <= 0 and (size is None or _count(_size_shape(size)) != 0):
                _raise("ValueError", "a must be greater than 0 unless no samples are taken")
        else:
            arr = _np.asarray(a)
            if arr.ndim != 1:
                _raise("ValueError", "a must be 1-dimensional")
            pop_size = arr.shape[0]
            if pop_size == 0 and (size is None or _count(_size_shape(size)) != 0):
                _raise("ValueError", "'a' cannot be empty unless no samples are taken")
        if p is not None:
            p = _checked_probabilities(p, pop_size, _LEGACY_P_TEXTS)
        is_scalar = size is None
        shape = () if is_scalar else _size_shape(size)
        n = _count(shape)
        if replace:
            if p is not None:
                cdf = _cdf(p.tolist())
                u = self.random_sample(shape)
                uv = [u] if is_scalar else u.reshape(-1).tolist()
                idx = _np._wrap(torch.tensor([_search_right(cdf, x) for x in uv], dtype=torch.int64).reshape(shape))
            else:
                idx = self.randint(0, pop_size, size=shape)
        else:
            if n > pop_size:
                _raise("ValueError", "Cannot take a larger sample than population when 'replace=False'")
            if p is not None:
                pv = p.tolist()
                if len([v for v in pv if v > 0]) < n:
                    _raise("ValueError", "Fewer non-zero entries in p than size")
                found = []
                while len(found) < n:
                    x = self.rand(n - len(found)).tolist()
                    for f in found:
                        pv[f] = 0.0
                    cdf = _cdf(pv)
                    new = [_search_right(cdf, v) for v in x]
                    seen = set()
                    for v in new:
                        if v not in seen:
                            seen.add(v)
                            found.append(v)
                    found = found[:n] if len(found) > n else found
                idx = _np._wrap(torch.tensor(found, dtype=torch.int64).reshape(shape))
            else:
                idx = self.permutation(pop_size)[:n].reshape(shape)
        if is_scalar and isinstance(idx, _np.ndarray):
            idx = idx.item(0)
        if arr is None:
            return idx
        return arr[idx]


def _normal(loc, scale, g):
    return loc + scale * g


def _uniform(low, high, u):
    return low + (high - low) * u


# What choice() says of a bad p: not 1-d, another size, NaN, negative, not
# summing to 1 (RandomState's words; Generator's are NumPy 2's).
_LEGACY_P_TEXTS = ("'p' must be 1-dimensional", "'a' and 'p' must have same size", "probabilities contain NaN",
                   "probabilities are not non-negative", "probabilities do not sum to 1")


def _checked_probabilities(p, pop_size, texts):
    # NumPy's checks of choice()'s p: its atol, a Kahan sum; p as float64.
    atol = 1.4901161193847656e-08
    if isinstance(p, _np.ndarray) and p.dtype.kind == "f":
        atol = max(atol, _math.sqrt(_np.finfo(p.dtype).eps._v))
    p = _np.asarray(p).astype(_np.float64)
    if p.ndim != 1:
        _raise("ValueError", texts[0])
    if p.size != pop_size:
        _raise("ValueError", texts[1])
    pv = p.tolist()
    total = _kahan_sum(pv)
    if total != total:
        _raise("ValueError", texts[2])
    for v in pv:
        if v < 0:
            _raise("ValueError", texts[3])
    if abs(total - 1.0) > atol:
        _raise("ValueError", texts[4])
    return p


def _kahan_sum(values):
    # NumPy's kahan_sum: how choice() checks that its probabilities sum to 1.
    total = values[0] if values else 0.0
    c = 0.0
    for v in values[1:]:
        y = v - c
        t = total + y
        c = (t - total) - y
        total = t
    return total


def _cdf(p):
    out = []
    acc = 0.0
    for v in p:
        acc += v
        out.append(acc)
    last = out[-1]
    return [v / last for v in out]


def _search_right(cdf, x):
    lo = 0
    hi = len(cdf)
    while lo < hi:
        mid = (lo + hi) // 2
        if cdf[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


_rand = RandomState()

seed = _rand.seed
random_sample = _rand.random_sample
random = _rand.random
ranf = _rand.ranf
sample = _rand.sample
rand = _rand.rand
randn = _rand.randn
standard_normal = _rand.standard_normal
normal = _rand.normal
uniform = _rand.uniform
randint = _rand.randint
shuffle = _rand.shuffle
permutation = _rand.permutation
choice = _rand.choice

)PY";

}  // namespace kiln::py
