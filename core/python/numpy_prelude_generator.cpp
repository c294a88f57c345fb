// numpy.random.Generator over PCG64 and SeedSequence, draw for draw NumPy's.
#include "core/python/stdlib.h"

namespace kiln::py {

extern const char* const kNumpyGeneratorSource;
const char* const kNumpyGeneratorSource = R"PY(# numpy.random: default_rng, Generator, PCG64, SeedSequence, as NumPy's
# _generator.pyx, _pcg64.pyx and bit_generator.pyx make them (unchanged from
# NumPy 1.17 to 2.x for what is here). Runs in the module of numpy/random.py:
# its helpers (_refuse, _raise, _size_shape, _count, _cdf, _checked_probabilities, _search_right) are
# this module's. Bits come from _kiln_numpy.pcg64 (numpy_generator_native.cpp).

_MASK32 = 0xFFFFFFFF


def _int_words(n):
    if n < 0:
        _raise("ValueError", "expected non-negative integer")
    if n == 0:
        return [0]
    out = []
    while n > 0:
        out.append(n & _MASK32)
        n = n >> 32
    return out


def _coerce_words(x):
    # bit_generator._coerce_to_uint32_array: ints split into 32-bit words,
    # lowest first; sequences element by element.
    if isinstance(x, str):
        if x.startswith("0x"):
            x = int(x, 16)
        elif len(x) > 0 and x[0] in "0123456789":
            x = int(x)
        else:
            _raise("ValueError", "unrecognized seed string")
    if isinstance(x, _np.ndarray) and x.ndim == 0:
        x = x.item()
    if isinstance(x, (int, _np.integer)) and not isinstance(x, _pybool):
        return _int_words(_np._index_int(x))
    if isinstance(x, _pybool):
        return _int_words(int(x))
    if isinstance(x, (float, _np.floating)):
        _raise("TypeError", "seed must be integer")
    if isinstance(x, _np.ndarray):
        if x.dtype.kind not in "biu":
            _raise("TypeError", "seed must be integer")
        x = x.tolist()
    out = []
    for v in x:
        if isinstance(v, (list, tuple, _np.ndarray)):
            _raise("TypeError", "SeedSequence does not accept nested sequences.")
        out = out + _coerce_words(v)
    return out


class SeedSequence:
    def __init__(self, entropy=None, *, spawn_key=(), pool_size=4, n_children_spawned=0):
        if pool_size < 4:
            _raise("ValueError", "The size of the entropy pool should be at least 4")
        if entropy is None:
            entropy = 0
            for w in _nat.entropy_words(pool_size):
                entropy = (entropy << 32) | w
        elif not isinstance(entropy, (int, _np.integer, list, tuple, range, _np.ndarray)):
            _raise("TypeError", "SeedSequence expects int or sequence of ints for entropy not " + str(entropy))
        self.entropy = entropy
        self.spawn_key = tuple(spawn_key)
        self.pool_size = pool_size
        self.n_children_spawned = n_children_spawned
        run = _coerce_words(entropy)
        spawn = _coerce_words(list(self.spawn_key))
        if len(spawn) > 0 and len(run) < pool_size:
            run = run + [0] * (pool_size - len(run))
        self._pool = _nat.seed_pool(run + spawn, pool_size)

    @property
    def pool(self):
        _refuse("numpy.random.SeedSequence.pool (a uint32 array; Kiln has no uint32 dtype)")

    @property
    def state(self):
        return {"entropy": self.entropy, "spawn_key": self.spawn_key, "pool_size": self.pool_size,
                "n_children_spawned": self.n_children_spawned}

    def __repr__(self):
        lines = ["SeedSequence(", "    entropy=" + repr(self.entropy) + ","]
        if self.spawn_key:
            lines.append("    spawn_key=" + repr(self.spawn_key) + ",")
        if self.pool_size != 4:
            lines.append("    pool_size=" + repr(self.pool_size) + ",")
        if self.n_children_spawned != 0:
            lines.append("    n_children_spawned=" + repr(self.n_children_spawned) + ",")
        lines.append(")")
        return "\n".join(lines)

    def generate_state(self, n_words, dtype=None):
        _refuse("numpy.random.SeedSequence.generate_state (uint32/uint64 arrays; Kiln has neither dtype)")

    def spawn(self, n_children):
        if n_children < 0:
            _raise("ValueError", "n_children must be non-negative")
        seqs = []
        for i in range(self.n_children_spawned, self.n_children_spawned + n_children):
            seqs.append(SeedSequence(self.entropy, spawn_key=self.spawn_key + (i,), pool_size=self.pool_size))
        self.n_children_spawned += n_children
        return seqs


class PCG64:
    def __init__(self, seed=None):
        if not isinstance(seed, SeedSequence):
            seed = SeedSequence(seed)
        self._seed_seq = seed
        self._g = _nat.pcg64()
        self._g("seed", seed._pool)

    def __repr__(self):
        return "<numpy.random._pcg64.PCG64 object at 0x" + _hex_id(self) + ">"

    @property
    def seed_seq(self):
        return self._seed_seq

    @property
    def state(self):
        s, inc, has32, uint = self._g("get_state")
        return {"bit_generator": "PCG64", "state": {"state": _from_words(s), "inc": _from_words(inc)},
                "has_uint32": has32, "uinteger": uint}

    @state.setter
    def state(self, value):
        if not isinstance(value, dict):
            _raise("TypeError", "state must be a dict")
        if value.get("bit_generator", "") != "PCG64":
            _raise("ValueError", "state must be for a PCG64 RNG")
        st = value["state"]
        self._g("set_state", _to_words(st["state"]), _to_words(st["inc"]), int(value["has_uint32"]), int(value["uinteger"]))

    def spawn(self, n_children):
        return [PCG64(s) for s in self._seed_seq.spawn(n_children)]

    def __getattr__(self, name):
        if name in ("advance", "jumped", "random_raw", "ctypes", "cffi", "capsule", "lock"):
            _refuse("numpy.random.PCG64." + name)
        _raise("AttributeError", "'numpy.random._pcg64.PCG64' object has no attribute '" + name + "'")


def _from_words(w):
    v = 0
    for x in w:
        v = (v << 32) | x
    return v


def _to_words(v):
    v = _np._index_int(v) % (1 << 128)
    return [(v >> 96) & _MASK32, (v >> 64) & _MASK32, (v >> 32) & _MASK32, v & _MASK32]


def _hex_id(x):
    return "%X" % id(x)


def _signbit(x):
    return x < 0 or (x == 0 and _math.copysign(1.0, x) < 0)


def _scalar_param(x):
    return not isinstance(x, (_np.ndarray, list, tuple))


def _check_non_negative(v, name):
    # CONS_NON_NEGATIVE: the sign bit set and not NaN (so -0.0 too).
    if isinstance(v, float):
        if v == v and _signbit(v):
            _raise("ValueError", name + " < 0")
        return
    t = v._t if isinstance(v, _np.ndarray) else v
    if _pybool(((t < 0) | ((t == 0) & (torch.copysign(torch.ones_like(t), t) < 0))).any()):
        _raise("ValueError", name + " < 0")


_GEN_REFUSED = set("""beta binomial chisquare dirichlet f gamma geometric gumbel hypergeometric laplace logistic
lognormal logseries multinomial multivariate_hypergeometric multivariate_normal negative_binomial noncentral_chisquare
noncentral_f pareto poisson power rayleigh standard_cauchy standard_gamma standard_t triangular vonmises wald
weibull zipf bytes permuted""".split())


class Generator:
    def __init__(self, bit_generator):
        if not isinstance(bit_generator, PCG64):
            _refuse("numpy.random.Generator over a " + type(bit_generator).__name__ + " (only PCG64 is modelled)")
        self._bit_generator = bit_generator
        self._g = bit_generator._g

    def __getattr__(self, name):
        if name in _GEN_REFUSED:
            _refuse("numpy.random.Generator." + name)
        _raise("AttributeError", "'numpy.random._generator.Generator' object has no attribute '" + name + "'")

    def __str__(self):
        return "Generator(PCG64)"

    def __repr__(self):
        return "Generator(PCG64) at 0x" + _hex_id(self)

    @property
    def bit_generator(self):
        return self._bit_generator

    def spawn(self, n_children):
        if n_children < 0:
            _raise("ValueError", "n_children must be non-negative")
        return [Generator(g) for g in self._bit_generator.spawn(n_children)]

    # ---- standard draws (double_fill) ----

    def _fill(self, op, size, out):
        if out is not None:
            _refuse("numpy.random.Generator." + op + "(out=...)")
        if size is None:
            return self._g(op + "1")
        shape = _size_shape(size)
        return _np._wrap(self._g(op, _count(shape)).reshape(shape))

    def random(self, size=None, dtype=None, out=None):
        d = _np._as_dtype(_np.float64 if dtype is None else dtype)
        if d == _np.float32:
            if out is not None:
                _refuse("numpy.random.Generator.random(out=...)")
            if size is None:
                return self._g("random_f", 1).item()
            shape = _size_shape(size)
            return _np._wrap(self._g("random_f", _count(shape)).reshape(shape))
        if d != _np.float64:
            _raise("TypeError", "Unsupported dtype " + repr(d) + " for random")
        return self._fill("random", size, out)

    def standard_normal(self, size=None, dtype=None, out=None):
        d = _np._as_dtype(_np.float64 if dtype is None else dtype)
        if d == _np.float32:
            _refuse("numpy.random.Generator.standard_normal(dtype=float32) (NumPy's float32 ziggurat)")
        if d != _np.float64:
            _raise("TypeError", "Unsupported dtype " + repr(d) + " for standard_normal")
        return self._fill("normal", size, out)

    def standard_exponential(self, size=None, dtype=None, method="zig", out=None):
        d = _np._as_dtype(_np.float64 if dtype is None else dtype)
        if d == _np.float32:
            _refuse("numpy.random.Generator.standard_exponential(dtype=float32) (NumPy's float32 ziggurat)")
        if d != _np.float64:
            _raise("TypeError", "Unsupported dtype " + repr(d) + " for standard_exponential")
        return self._fill("exponential" if method == "zig" else "exponential_inv", size, out)

    # ---- with parameters (cont) ----

    def _cont(self, op, a, b, size, combine):
        # Scalars: one standard draw per element combined as NumPy's C does
        # (one IEEE operation at a time). Arrays: parameters broadcast
        # against each other (or size), draws in C order.
        if _scalar_param(a) and _scalar_param(b):
            if size is None:
                return combine(a, b, self._g(op + "1"))
            shape = _size_shape(size)
            z = self._g(op, _count(shape)).reshape(shape)
            return _np._wrap(combine(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64), z))
        at = a._t if isinstance(a, _np.ndarray) else torch.tensor(a, dtype=torch.float64)
        bt = b._t if isinstance(b, _np.ndarray) else torch.tensor(b, dtype=torch.float64)
        bshape = tuple(torch.broadcast_tensors(at, bt)[0].shape)
        if size is None:
            shape = bshape
        else:
            shape = _size_shape(size)
            if tuple(torch.broadcast_tensors(torch.zeros(shape, dtype=torch.bool), torch.zeros(bshape, dtype=torch.bool))[0].shape) != shape:
                _raise("ValueError", "Output size " + str(shape) + " is not compatible with broadcast dimensions of inputs " + str(bshape) + ".")
        z = self._g(op, _count(shape)).reshape(shape)
        return _np._wrap(combine(at.expand(shape), bt.expand(shape), z))

    def normal(self, loc=0.0, scale=1.0, size=None):
        if _scalar_param(loc) and _scalar_param(scale):
            loc = float(loc)
            scale = float(scale)
            _check_non_negative(scale, "scale")
        else:
            loc = _np.asarray(loc).astype(_np.float64)
            scale = _np.asarray(scale).astype(_np.float64)
            _check_non_negative(scale, "scale")
        return self._cont("normal", loc, scale, size, _normal)

    def uniform(self, low=0.0, high=1.0, size=None):
        if _scalar_param(low) and _scalar_param(high):
            lo = float(low)
            rng = float(high) - lo
            if not _math.isfinite(rng):
                _raise("OverflowError", "high - low range exceeds valid bounds")
            _check_non_negative(rng, "high - low")
            return self._cont("random", lo, rng, size, _uniform_range)
        alow = _np.asarray(low).astype(_np.float64)
        arng = _np.asarray(high).astype(_np.float64) - alow
        if not _pybool(torch.isfinite(arng._t).all()):
            _raise("OverflowError", "Range exceeds valid bounds")
        _check_non_negative(arng, "high - low")
        return self._cont("random", alow, arng, size, _uniform_range)

    def exponential(self, scale=1.0, size=None):
        if _scalar_param(scale):
            scale = float(scale)
            _check_non_negative(scale, "scale")
            if size is None:
                return scale * self._g("exponential1")
            shape = _size_shape(size)
            return _np._wrap(scale * self._g("exponential", _count(shape)).reshape(shape))
        st = _np.asarray(scale).astype(_np.float64)
        _check_non_negative(st, "scale")
        return self._cont("exponential", st, 0.0, size, _scaled)

    # ---- integers ----

    def integers(self, low, high=None, size=None, dtype=None, endpoint=False):
        if high is None:
            high = low
            low = 0
        d = _np._as_dtype(_np.int64 if dtype is None else dtype)
        if d != _np.int64 and d != _np.int32:
            _refuse("numpy.random.Generator.integers(dtype=" + d.name + ")")
        if isinstance(low, _np.ndarray) and low.ndim == 0:
            low = low.item()
        if isinstance(high, _np.ndarray) and high.ndim == 0:
            high = high.item()
        if not (_scalar_param(low) and _scalar_param(high)):
            _refuse("numpy.random.Generator.integers with array bounds")
        if size is not None:
            shape = _size_shape(size)
            if _count(shape) == 0:
                return _np.zeros(shape, dtype=d)
        lo = int(low)
        hi = int(high)
        if not endpoint:
            hi -= 1
        bmin, bmax = _np._int_bounds(d)
        if lo < bmin:
            _raise("ValueError", "low is out of bounds for " + d.name)
        if hi > bmax:
            _raise("ValueError", "high is out of bounds for " + d.name)
        if lo > hi:
            if lo == 0:
                _raise("ValueError", "high < 0" if endpoint else "high <= 0")
            _raise("ValueError", "low > high" if endpoint else "low >= high")
        op = "int64" if d == _np.int64 else "int32"
        if size is None:
            v = self._g(op, lo, hi, 1).item()
            return v if dtype is int else _np._scalar(d, v)
        return _np._wrap(self._g(op, lo, hi, _count(shape)).reshape(shape))

    # ---- sequences ----

    def shuffle(self, x, axis=0):
        if isinstance(x, _np.ndarray):
            if x.ndim == 0:
                _raise("TypeError", "len() of unsized object")
            _np._check_writable(x)
            if axis != 0 and axis != -x.ndim:
                if not isinstance(axis, int) or axis >= x.ndim or axis < -x.ndim:
                    _np._raise_axis(axis, x.ndim)
                _refuse("numpy.random.Generator.shuffle(axis=" + str(axis) + ")")
            if x.size == 0:
                return
            order = self._g("shuffle_order", x.shape[0])
            x._t.copy_(x._t[order])
            return
        if isinstance(x, list):
            if axis != 0:
                _raise("NotImplementedError", "Axis argument is only supported on ndarray objects")
            order = self._g("shuffle_order", len(x)).tolist()
            items = [x[i] for i in order]
            for k in range(len(items)):
                x[k] = items[k]
            return
        _refuse("numpy.random.Generator.shuffle of a " + type(x).__name__)

    def permutation(self, x, axis=0):
        if isinstance(x, (int, _np.integer)) and not isinstance(x, _pybool):
            arr = _np.arange(_np._index_int(x))
            self.shuffle(arr)
            return arr
        arr = _np.asarray(x)
        if arr.ndim == 0 or axis >= arr.ndim or axis < -arr.ndim:
            _np._raise_axis(axis, arr.ndim)
        if axis != 0 and axis != -arr.ndim:
            _refuse("numpy.random.Generator.permutation(axis=" + str(axis) + ")")
        if arr.ndim == 1:
            arr = arr.copy()
            self.shuffle(arr)
            return arr
        idx = _np.arange(arr.shape[0])
        self.shuffle(idx)
        return arr[idx]

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        arr = _np.asarray(a)
        nsamp = None if size is None else _count(_size_shape(size))
        if arr.ndim == 0:
            v = arr.item()
            if not isinstance(v, int) or isinstance(v, _pybool):
                _raise("ValueError", "a must be a sequence or an integer, not " + str(type(a)))
            pop_size = v
            if pop_size <= 0 and nsamp != 0:
                _raise("ValueError", "a must be a positive integer unless no samples are taken")
        else:
            if axis != 0:
                _refuse("numpy.random.Generator.choice(axis=" + str(axis) + ")")
            pop_size = arr.shape[0]
            if pop_size == 0 and nsamp != 0:
                _raise("ValueError", "a cannot be empty unless no samples are taken")
        if p is not None:
            p = _checked_probabilities(p, pop_size, ("p must be 1-dimensional", "a and p must have same size",
                                                     "Probabilities contain NaN", "Probabilities are not non-negative",
                                                     "Probabilities do not sum to 1. See Notes section of docstring for more information."))
        is_scalar = size is None
        shape = () if is_scalar else _size_shape(size)
        n = _count(shape)
        if replace:
            if p is not None:
                cdf = _cdf(p.tolist())
                u = self._g("random", n).tolist()
                idx = _np._wrap(torch.tensor([_search_right(cdf, x) for x in u], dtype=torch.int64).reshape(shape))
            else:
                idx = self.integers(0, pop_size, size=shape)
        else:
            if n > pop_size:
                _raise("ValueError", "Cannot take a larger sample than population when replace is False")
            if p is not None:
                pv = p.tolist()
                if len([v for v in pv if v > 0]) < n:
                    _raise("ValueError", "Fewer non-zero entries in p than size")
                found = []
                while len(found) < n:
                    x = self._g("random", n - len(found)).tolist()
                    for f in found:
                        pv[f] = 0.0
                    cdf = _cdf(pv)
                    seen = set()
                    for v in [_search_right(cdf, u) for u in x]:
                        if v not in seen:
                            seen.add(v)
                            found.append(v)
                idx = _np._wrap(torch.tensor(found, dtype=torch.int64).reshape(shape))
            else:
                cutoff = 50 if shuffle else 20
                if pop_size > 10000 and n > pop_size // cutoff:
                    t = self._g("choice_tail", pop_size, n)
                else:
                    t = self._g("choice_floyd", pop_size, n, shuffle)
                idx = _np._wrap(t.reshape(shape))
        if is_scalar and isinstance(idx, _np.ndarray):
            idx = idx.item(0)
        if arr.ndim == 0:
            return idx
        if not is_scalar and idx.ndim == 0 and arr.ndim == 1:
            return _np._wrap(arr._t[idx._t.item()].clone())
        return arr[idx]


def _uniform_range(low, rng, u):
    return low + rng * u


def _scaled(scale, unused, z):
    return scale * z


def default_rng(seed=None):
    if isinstance(seed, PCG64):
        return Generator(seed)
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, RandomState):
        _refuse("numpy.random.default_rng of a RandomState (its MT19937 as a Generator)")
    return Generator(PCG64(seed))


def _refused_bit_generator(name):
    def make(*args, **kwargs):
        _refuse("numpy.random." + name + " (only PCG64 is modelled)")
    return make


MT19937 = _refused_bit_generator("MT19937")
PCG64DXSM = _refused_bit_generator("PCG64DXSM")
Philox = _refused_bit_generator("Philox")
SFC64 = _refused_bit_generator("SFC64")
)PY";

}  // namespace kiln::py
