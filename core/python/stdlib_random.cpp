// random: CPython 3.12's Random, bit for bit. The Mersenne Twister and its
// seeding (init_by_array over the 32-bit words of abs(seed)) are native; the
// methods built on it are CPython's Lib/random.py in the subset, so that each
// draws the same words in the same order.
#include <random>

#include "core/python/compiler.h"
#include "core/python/mt19937.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

// One generator behind a builtin taking an operation name: the subset has no
// native object kind to hold the state, and the Python class keeps this.
Value make_generator() {
  auto mt = std::make_shared<MersenneTwister>();
  std::random_device rd;
  mt->init_by_array({rd(), rd(), rd(), rd()});
  return make_builtin("random._mt", [mt](VM& vm, const CallArgs& a) -> Value {
    const std::string& op = as_str(a[0]);
    if (op == "random") return Value(mt->random());
    if (op == "bits32") {
      // getrandbits(k) for 0 < k <= 32
      int64_t k = to_index(a[1], "k");
      return Value(int64_t(mt->genrand() >> (32 - k)));
    }
    if (op == "seed_words") {
      std::vector<uint32_t> key;
      for (const Value& w : vm.to_vector(a[1])) key.push_back(uint32_t(to_index(w, "seed word")));
      if (key.empty()) key.push_back(0);
      mt->init_by_array(key);
      return Value();
    }
    if (op == "seed_os") {
      std::random_device rd;
      std::vector<uint32_t> key;
      for (int i = 0; i < 8; ++i) key.push_back(rd());
      mt->init_by_array(key);
      return Value();
    }
    if (op == "getstate") {
      ValueVec words;
      for (uint32_t w : mt->mt) words.push_back(Value(int64_t(w)));
      words.push_back(Value(int64_t(mt->index)));
      return tuple_value(std::move(words));
    }
    if (op == "setstate") {
      ValueVec words = vm.to_vector(a[1]);
      if (words.size() != size_t(MersenneTwister::N) + 1) throw PyError("ValueError", "state vector is the wrong size");
      for (int i = 0; i < MersenneTwister::N; ++i) mt->mt[size_t(i)] = uint32_t(to_index(words[size_t(i)], "state"));
      int64_t index = to_index(words.back(), "state");
      if (index < 0 || index > MersenneTwister::N) throw PyError("ValueError", "invalid state");
      mt->index = int(index);
      return Value();
    }
    throw PyError("SystemError", "random._mt: unknown operation " + op);
  });
}

const char* const kRandomSource = R"PY(# CPython 3.12's Lib/random.py in the subset (Random's methods over the
# native generator).
import math as _math
import _kiln_std

_ONE = 1
NV_MAGICCONST = 4 * _math.exp(-0.5) / _math.sqrt(2.0)
TWOPI = 2.0 * _math.pi
LOG4 = _math.log(4.0)
SG_MAGICCONST = 1.0 + _math.log(4.5)
BPF = 53
RECIP_BPF = 2 ** -BPF


def _raise(kind, message):
    _kiln_std.raise_error(kind, message)


def _index(x):
    if isinstance(x, bool) or isinstance(x, int):
        return int(x)
    _raise("TypeError", "'" + type(x).__name__ + "' object cannot be interpreted as an integer")


def _bisect_right(a, x, lo, hi):
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


class Random:
    VERSION = 3

    def __init__(self, x=None):
        self._mt = _new_generator()
        self.seed(x)

    def seed(self, a=None, version=2):
        if a is None:
            self._mt("seed_os")
        else:
            if isinstance(a, float) and a == int(a):
                a = int(a)
            if not (isinstance(a, int) or isinstance(a, bool)):
                if isinstance(a, str) or isinstance(a, float):
                    _kiln_std.refuse("random.seed() of a " + type(a).__name__ + " is outside Kiln's subset (it seeds from an int)")
                _raise("TypeError", "The only supported seed types are:\nNone, int, float, str, bytes, and bytearray.")
            a = abs(int(a))
            words = []
            while a:
                words.append(a & 0xFFFFFFFF)
                a >>= 32
            self._mt("seed_words", words)
        self.gauss_next = None

    def getstate(self):
        return (self.VERSION, self._mt("getstate"), self.gauss_next)

    def setstate(self, state):
        if state[0] != 3:
            _raise("ValueError", "state with version " + str(state[0]) + " passed to Random.setstate() of version 3")
        self._mt("setstate", state[1])
        self.gauss_next = state[2]

    def random(self):
        return self._mt("random")

    def getrandbits(self, k):
        k = _index(k)
        if k < 0:
            _raise("ValueError", "number of bits must be non-negative")
        result = 0
        shift = 0
        while k > 0:
            take = 32 if k >= 32 else k
            result |= self._mt("bits32", take) << shift
            shift += 32
            k -= 32
        return result

    def _randbelow(self, n):
        k = n.bit_length() if hasattr(n, "bit_length") else len(bin(n)) - 2
        r = self.getrandbits(k)
        while r >= n:
            r = self.getrandbits(k)
        return r

    def randrange(self, start, stop=None, step=_ONE):
        istart = _index(start)
        if stop is None:
            if step is not _ONE:
                _raise("TypeError", "Missing a non-None stop argument")
            if istart > 0:
                return self._randbelow(istart)
            _raise("ValueError", "empty range for randrange()")
        istop = _index(stop)
        width = istop - istart
        istep = _index(step)
        if istep == 1:
            if width > 0:
                return istart + self._randbelow(width)
            _raise("ValueError", f"empty range in randrange({start}, {stop})")
        if istep > 0:
            n = (width + istep - 1) // istep
        elif istep < 0:
            n = (width + istep + 1) // istep
        else:
            _raise("ValueError", "zero step for randrange()")
        if n <= 0:
            _raise("ValueError", f"empty range in randrange({start}, {stop}, {step})")
        return istart + istep * self._randbelow(n)

    def randint(self, a, b):
        return self.randrange(a, b + 1)

    def choice(self, seq):
        if not len(seq):
            _raise("IndexError", "Cannot choose from an empty sequence")
        return seq[self._randbelow(len(seq))]

    def shuffle(self, x):
        randbelow = self._randbelow
        for i in reversed(range(1, len(x))):
            j = randbelow(i + 1)
            x[i], x[j] = x[j], x[i]

    def sample(self, population, k, *, counts=None):
        if counts is not None:
            _kiln_std.refuse("random.sample(counts=) is outside Kiln's subset")
        if isinstance(population, dict):
            _raise("TypeError", "Population must be a sequence.  For dicts or sets, use sorted(d).")
        n = len(population)
        randbelow = self._randbelow
        if not 0 <= k <= n:
            _raise("ValueError", "Sample larger than population or is negative")
        result = [None] * k
        setsize = 21
        if k > 5:
            setsize += 4 ** _math.ceil(_math.log(k * 3, 4))
        if n <= setsize:
            pool = list(population)
            for i in range(k):
                j = randbelow(n - i)
                result[i] = pool[j]
                pool[j] = pool[n - i - 1]
        else:
            selected = {}
            for i in range(k):
                j = randbelow(n)
                while j in selected:
                    j = randbelow(n)
                selected[j] = True
                result[i] = population[j]
        return result

    def choices(self, population, weights=None, *, cum_weights=None, k=1):
        random = self.random
        n = len(population)
        if cum_weights is None:
            if weights is None:
                n += 0.0
                return [population[_math.floor(random() * n)] for i in range(k)]
            cum_weights = []
            total = 0
            for w in weights:
                total = total + w
                cum_weights.append(total)
        elif weights is not None:
            _raise("TypeError", "Cannot specify both weights and cumulative weights")
        if len(cum_weights) != n:
            _raise("ValueError", "The number of weights does not match the population")
        total = cum_weights[-1] + 0.0
        if total <= 0.0:
            _raise("ValueError", "Total of weights must be greater than zero")
        if not _math.isfinite(total):
            _raise("ValueError", "Total of weights must be finite")
        hi = n - 1
        return [population[_bisect_right(cum_weights, random() * total, 0, hi)] for i in range(k)]

    def uniform(self, a, b):
        return a + (b - a) * self.random()

    def triangular(self, low=0.0, high=1.0, mode=None):
        u = self.random()
        if mode is None:
            c = 0.5
        elif high == low:
            return low
        else:
            c = (mode - low) / (high - low)
        if u > c:
            u = 1.0 - u
            c = 1.0 - c
            low, high = high, low
        return low + (high - low) * _math.sqrt(u * c)

    def normalvariate(self, mu=0.0, sigma=1.0):
        random = self.random
        while True:
            u1 = random()
            u2 = 1.0 - random()
            z = NV_MAGICCONST * (u1 - 0.5) / u2
            zz = z * z / 4.0
            if zz <= -_math.log(u2):
                break
        return mu + z * sigma

    def gauss(self, mu=0.0, sigma=1.0):
        random = self.random
        z = self.gauss_next
        self.gauss_next = None
        if z is None:
            x2pi = random() * TWOPI
            g2rad = _math.sqrt(-2.0 * _math.log(1.0 - random()))
            z = _math.cos(x2pi) * g2rad
            self.gauss_next = _math.sin(x2pi) * g2rad
        return mu + z * sigma

    def lognormvariate(self, mu, sigma):
        return _math.exp(self.normalvariate(mu, sigma))

    def expovariate(self, lambd=1.0):
        return -_math.log(1.0 - self.random()) / lambd

    def betavariate(self, alpha, beta):
        _kiln_std.refuse("random.betavariate is outside Kiln's subset")

    def __repr__(self):
        return "<random.Random object>"


_inst = Random()
seed = _inst.seed
random = _inst.random
uniform = _inst.uniform
triangular = _inst.triangular
randint = _inst.randint
choice = _inst.choice
randrange = _inst.randrange
sample = _inst.sample
shuffle = _inst.shuffle
choices = _inst.choices
normalvariate = _inst.normalvariate
lognormvariate = _inst.lognormvariate
expovariate = _inst.expovariate
gauss = _inst.gauss
getstate = _inst.getstate
setstate = _inst.setstate
getrandbits = _inst.getrandbits
)PY";

}  // namespace

void load_random(VM& vm, const Ref<Module>& m) {
  def_native(m, "_new_generator", [](VM&, const CallArgs&) { return make_generator(); });
  static const Expected<CodePtr> code = compile_module(kRandomSource, "random.py");
  run_module_source(vm, m, code);
}

}  // namespace kiln::py
