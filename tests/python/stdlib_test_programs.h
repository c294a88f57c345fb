#pragma once
// The programs of test_python_stdlib.cpp, kept out of the file moc reads
// (their Python comments would read to it as preprocessor lines).

namespace stdlib_test {

const char* const k_typing_and_future = R"PY(from __future__ import annotations, division
import __future__
from typing import Optional, List, Dict, Tuple, Union, Any, Callable, Iterable, Iterator, Sequence, Mapping, TYPE_CHECKING, cast, TypeVar, Generic
import typing
T = TypeVar("T")
print(Optional[int], Optional[List[int]], Union[int, str], Union[int, None], Union[int])
print(List, Dict[str, Tuple[int, ...]], Callable[[int, str], float], Iterable[int], Sequence[str], Mapping[str, Any])
print(TYPE_CHECKING, cast(int, "x"), T, __future__.annotations.getMandatoryRelease())
class Box(Generic[T]):
    def __init__(self, v: T) -> None:
        self.v = v
def f(x: Optional[int] = None) -> List[int]:
    return [x or 0]
print(Box(3).v, f(), f(2), Optional[int] == Optional[int])
class P(typing.NamedTuple):
    x: int
    y: float = 1.5
p = P(2)
a, b = p
print(p, p.x, p[1], a + b, p._asdict(), p._replace(x=5), len(p), p == (2, 1.5))
class Cfg:
    lr: float = 0.1
    name: str
    depth: Dict[str, int]
print(Cfg.__annotations__, Cfg.lr)
)PY";
const char* const k_random_is_cpythons_mersenne_twister = R"PY(import random
random.seed(0)
print(random.random(), random.random())
print([random.randint(0, 100) for _ in range(5)], random.randrange(10), random.randrange(5, 50, 5))
random.seed(42)
xs = list(range(10))
random.shuffle(xs)
print(xs, random.choice("abcdef"), random.uniform(-1, 1))
print(random.gauss(0, 1), random.gauss(0, 1), random.normalvariate(2, 0.5))
print(random.sample(range(1000), 4), random.sample(["a", "b", "c"], 2))
print(random.choices([1, 2, 3], k=4), random.choices("xyz", weights=[1, 0, 5], k=3))
random.seed(2**80 + 12345)
print(random.random(), random.getrandbits(1), random.getrandbits(32), random.getrandbits(100))
random.seed(-7)
print(random.random())
s = random.getstate()
a = random.random()
random.setstate(s)
print(a == random.random())
r = random.Random(123)
print(r.random(), r.randint(1, 6), random.Random(123).random() == random.Random(123).random())
)PY";
const char* const k_collections_module = R"PY(from collections import namedtuple, defaultdict, OrderedDict, deque, Counter
Point = namedtuple("Point", ["x", "y"])
Pt3 = namedtuple("Pt3", "x, y z", defaults=[0])
p = Point(1, 2)
q = Pt3(1, 2)
print(p, q, p.x + p.y, p[0], tuple(q), p._asdict(), p._replace(y=9), Point._fields, len(q))
x, y = p
print(x, y, p == Point(1, 2), p == (1, 2), repr(Point))
d = defaultdict(int)
for w in "the cat and the hat".split():
    d[w] += 1
print(d, d["dog"], len(d), "cat" in d, sorted(d.items()))
g = defaultdict(list)
g["a"].append(1)
g["a"].append(2)
print(g, dict(g.items()))
od = OrderedDict([("b", 1), ("a", 2)])
od["c"] = 3
print(list(od.keys()), isinstance(od, dict))
q = deque([1, 2, 3])
q.appendleft(0)
q.append(4)
print(q, q.popleft(), q.pop(), len(q), q[0], q[-1])
q.rotate(1)
print(q, deque(range(5), maxlen=3), deque("ab"))
c = Counter("mississippi")
print(c, c["s"], c["z"], c.most_common(2), sum(c.values()), c.total())
c.update(["m", "m"])
print(c.most_common(1), Counter(a=2, b=1) + Counter(a=1, c=4), Counter(a=3) - Counter(a=1, b=2))
)PY";
const char* const k_functools_and_itertools = R"PY(import functools
import itertools
from functools import partial, reduce, wraps, lru_cache
print(reduce(lambda a, b: a + b, [1, 2, 3, 4]), reduce(lambda a, b: a * b, [], 1), reduce(max, [3, 9, 2]))
def power(base, exp):
    return base ** exp
square = partial(power, exp=2)
print(square(5), partial(power, 2)(10), square.func is power, square.args, square.keywords)
def deco(fn):
    @wraps(fn)
    def inner(*a, **k):
        return fn(*a, **k) + 1
    return inner
@deco
def add(a, b):
    return a + b
print(add(1, 2), add.__name__, add.__wrapped__ is not None)
calls = []
@lru_cache(maxsize=2)
def sq(n):
    calls.append(n)
    return n * n
print(sq(2), sq(3), sq(2), sq(4), sq(3), calls, sq.cache_info())
@functools.cache
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print(fib(80), fib.cache_info())
print(list(itertools.chain([1, 2], (3,), "ab")), list(itertools.chain.from_iterable([[1], [2, 3]])))
print(list(itertools.islice(itertools.count(10, 5), 4)), list(itertools.islice("abcdefg", 1, 6, 2)), list(itertools.islice(range(10), 3)))
print(list(itertools.repeat("x", 3)), list(itertools.islice(itertools.cycle([1, 2]), 5)))
print(list(itertools.accumulate([1, 2, 3, 4])), list(itertools.accumulate([3, 1, 4], max)), list(itertools.accumulate([1, 2], initial=10)))
print(list(itertools.zip_longest("ab", [1, 2, 3], fillvalue="-")))
print(list(itertools.product([0, 1], "xy")), len(list(itertools.product(range(3), repeat=3))))
print(list(itertools.combinations("abcd", 3)), list(itertools.combinations_with_replacement([1, 2], 2)))
print(list(itertools.permutations([1, 2, 3])), list(itertools.permutations("ab", 3)))
print(list(itertools.starmap(pow, [(2, 3), (3, 2)])), list(itertools.takewhile(lambda v: v < 3, [1, 2, 5, 1])), list(itertools.dropwhile(lambda v: v < 3, [1, 2, 5, 1])))
print([(k, list(g)) for k, g in itertools.groupby("aabccc")], list(itertools.pairwise([1, 2, 3])), list(itertools.compress("abc", [1, 0, 1])))
for i, (a, b) in enumerate(itertools.product(range(2), range(2))):
    print(i, a, b, end="; ")
print()
)PY";
const char* const k_inspect_enum_abc = R"PY(import inspect
import enum
from enum import Enum, auto, IntEnum
from abc import ABC, abstractmethod
def f(a, b=2, *args, c, d=None, **kwargs):
    pass
sig = inspect.signature(f)
print(sig, list(sig.parameters), sig.parameters["b"].default, sig.parameters["c"].default is inspect.Parameter.empty)
print([str(p.kind) for p in sig.parameters.values()], sig.parameters["args"].kind == inspect.Parameter.VAR_POSITIONAL)
class Net:
    def __init__(self, dim, depth=2):
        pass
    def forward(self, x, *, mask=None):
        pass
print(inspect.signature(Net), inspect.signature(Net(1).forward), inspect.signature(lambda x, y=1: 0))
print(inspect.isclass(Net), inspect.isfunction(f), inspect.ismethod(Net(1).forward), inspect.isfunction(Net))
class Color(Enum):
    RED = 1
    GREEN = 2
    BLUE = 3
class Mode(Enum):
    TRAIN = auto()
    EVAL = auto()
print(Color.RED, repr(Color.GREEN), Color(3), Color.RED.name, Color.BLUE.value, Color.RED == Color.RED, Color.RED == 1)
print(Mode.TRAIN.value, Mode.EVAL.value, Mode(2) is Mode.EVAL, isinstance(Mode.TRAIN, Mode), list(Color.__members__))
print(f"{Color.GREEN}", {Color.RED: "r"}[Color.RED])
class Level(IntEnum):
    LOW = 1
    HIGH = 2
print(Level.HIGH == 2, Level.LOW)
class Base(ABC):
    @abstractmethod
    def run(self):
        pass
class Impl(Base):
    def run(self):
        return "ran"
print(Impl().run(), isinstance(Impl(), Base))
)PY";
const char* const k_dataclasses_module = R"PY(from __future__ import annotations
import dataclasses
from dataclasses import dataclass, field, asdict, astuple, fields, replace
from typing import List, ClassVar
class Config:
    name: str
    lr: float = 1e-3
    layers: List[int] = field(default_factory=lambda: [64, 64])
    tags: list = field(default_factory=list)
    count: ClassVar[int] = 0
    secret: int = field(default=7, repr=False)
Config = dataclass(Config)
c = Config("mlp")
print(c, c.lr, c.layers, c.secret, Config.count)
print(c == Config("mlp"), c == Config("cnn"), asdict(c), astuple(c))
print([f.name for f in fields(Config)], fields(Config)[1].type, dataclasses.is_dataclass(c), dataclasses.is_dataclass(3))
print(replace(c, lr=0.5), Config("a", 0.1, [1]))
class Point:
    x: int
    y: int = 0
    def norm2(self):
        return self.x * self.x + self.y * self.y
Point = dataclass(eq=True)(Point)
class Point3(Point):
    z: int = 5
    def __post_init__(self):
        self.total = self.x + self.y + self.z
Point3 = dataclass(Point3)
p = Point3(1, 2)
print(p, p.total, p.norm2(), Point(3, 4).norm2())
class Frozen:
    a: int
Frozen = dataclass(frozen=True)(Frozen)
print(Frozen(1))
)PY";
const char* const k_os_path_and_sys = R"PY(import os
import os.path
import sys
from os.path import join, basename, dirname, splitext
print(join("data", "train", "x.bin"), join("/abs", "/root", "f"), join("a/", "b"), join("a", ""))
print(basename("/tmp/model.pt"), dirname("/tmp/model.pt"), dirname("model.pt"), splitext("ckpt/model.tar.gz"), splitext(".bashrc"))
print(os.path.split("a/b/c"), os.path.normpath("a//b/../c/./d"), os.path.isabs("/x"), os.sep, os.path.sep)
print(sys.maxsize, sys.platform, sys.version_info >= (3, 8), sys.version_info[0])
n = sys.stdout.write("written\n")
sys.stdout.flush()
print(n, os.environ.get("KILN_SURELY_UNSET", "default"), os.getenv("KILN_SURELY_UNSET"))
)PY";
const char* const k_time_module = R"PY(import time
t0 = time.perf_counter()
m0 = time.monotonic()
time.sleep(0.02)
print(time.perf_counter() - t0 >= 0.02, time.monotonic() >= m0, time.time() > 1.7e9, isinstance(time.time_ns(), int))
print(len(time.strftime("%Y-%m-%d")))
time.sleep(-1)
)PY";
const char* const k_warnings_once_per_location = R"PY(import warnings
def old_api():
    warnings.warn("old_api is deprecated", DeprecationWarning, stacklevel=2)
def noisy(i):
    warnings.warn(f"step {i // 2}")
for i in range(4):
    noisy(i)
old_api()
old_api()
warnings.warn("future change", FutureWarning)
warnings.warn("pending", PendingDeprecationWarning)
warnings.simplefilter("ignore", UserWarning)
warnings.warn("silenced")
warnings.resetwarnings()
warnings.filterwarnings("always", message="rep")
for i in range(2):
    warnings.warn("repeated")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    warnings.warn("recorded", RuntimeWarning)
print(len(caught), caught[0].category.__name__, str(caught[0].message), caught[0].lineno)
warnings.warn("after")
print("done")
)PY";
const char* const k_argparse_values = R"PY(import argparse
p = argparse.ArgumentParser(description="Train a small model on some data with a fairly long description that needs to wrap across lines.")
p.add_argument("data", help="path to the data")
p.add_argument("--lr", type=float, default=0.1, help="learning rate (default: %(default)s)")
p.add_argument("-e", "--epochs", type=int, default=3)
p.add_argument("--cuda", action="store_true", help="use the GPU")
p.add_argument("--no-shuffle", dest="shuffle", action="store_false")
p.add_argument("--opt", choices=["sgd", "adam"], default="sgd", help="optimizer")
p.add_argument("--layers", nargs="+", type=int, default=[1])
p.add_argument("-v", "--verbose", action="count", default=0)
p.add_argument("extra", nargs="*")
args = p.parse_args()
print(args)
print(args.lr * 2, args.epochs, args.data, args.extra)
)PY";
const char* const k_argparse_help = R"PY(import argparse
p = argparse.ArgumentParser(description="Train a small model on some data with a fairly long description that needs to wrap across lines.")
p.add_argument("data", help="path to the data")
p.add_argument("--lr", type=float, default=0.1, help="learning rate (default: %(default)s)")
p.add_argument("-e", "--epochs", type=int, default=3)
p.add_argument("--cuda", action="store_true", help="use the GPU")
p.add_argument("--no-shuffle", dest="shuffle", action="store_false")
p.add_argument("--opt", choices=["sgd", "adam"], default="sgd", help="optimizer")
p.add_argument("--layers", nargs="+", type=int, default=[1])
p.add_argument("-v", "--verbose", action="count", default=0)
p.add_argument("extra", nargs="*")
args = p.parse_args()
print(args)
print(args.lr * 2, args.epochs, args.data, args.extra)
)PY";
const char* const k_argparse_missing_positional = R"PY(import argparse
p = argparse.ArgumentParser(description="Train a small model on some data with a fairly long description that needs to wrap across lines.")
p.add_argument("data", help="path to the data")
p.add_argument("--lr", type=float, default=0.1, help="learning rate (default: %(default)s)")
p.add_argument("-e", "--epochs", type=int, default=3)
p.add_argument("--cuda", action="store_true", help="use the GPU")
p.add_argument("--no-shuffle", dest="shuffle", action="store_false")
p.add_argument("--opt", choices=["sgd", "adam"], default="sgd", help="optimizer")
p.add_argument("--layers", nargs="+", type=int, default=[1])
p.add_argument("-v", "--verbose", action="count", default=0)
p.add_argument("extra", nargs="*")
args = p.parse_args()
print(args)
print(args.lr * 2, args.epochs, args.data, args.extra)
)PY";
const char* const k_argparse_invalid_float = R"PY(import argparse
p = argparse.ArgumentParser(description="Train a small model on some data with a fairly long description that needs to wrap across lines.")
p.add_argument("data", help="path to the data")
p.add_argument("--lr", type=float, default=0.1, help="learning rate (default: %(default)s)")
p.add_argument("-e", "--epochs", type=int, default=3)
p.add_argument("--cuda", action="store_true", help="use the GPU")
p.add_argument("--no-shuffle", dest="shuffle", action="store_false")
p.add_argument("--opt", choices=["sgd", "adam"], default="sgd", help="optimizer")
p.add_argument("--layers", nargs="+", type=int, default=[1])
p.add_argument("-v", "--verbose", action="count", default=0)
p.add_argument("extra", nargs="*")
args = p.parse_args()
print(args)
print(args.lr * 2, args.epochs, args.data, args.extra)
)PY";
const char* const k_argparse_invalid_choice = R"PY(import argparse
p = argparse.ArgumentParser(description="Train a small model on some data with a fairly long description that needs to wrap across lines.")
p.add_argument("data", help="path to the data")
p.add_argument("--lr", type=float, default=0.1, help="learning rate (default: %(default)s)")
p.add_argument("-e", "--epochs", type=int, default=3)
p.add_argument("--cuda", action="store_true", help="use the GPU")
p.add_argument("--no-shuffle", dest="shuffle", action="store_false")
p.add_argument("--opt", choices=["sgd", "adam"], default="sgd", help="optimizer")
p.add_argument("--layers", nargs="+", type=int, default=[1])
p.add_argument("-v", "--verbose", action="count", default=0)
p.add_argument("extra", nargs="*")
args = p.parse_args()
print(args)
print(args.lr * 2, args.epochs, args.data, args.extra)
)PY";
const char* const k_argparse_expected_one_argument = R"PY(import argparse
p = argparse.ArgumentParser(description="Train a small model on some data with a fairly long description that needs to wrap across lines.")
p.add_argument("data", help="path to the data")
p.add_argument("--lr", type=float, default=0.1, help="learning rate (default: %(default)s)")
p.add_argument("-e", "--epochs", type=int, default=3)
p.add_argument("--cuda", action="store_true", help="use the GPU")
p.add_argument("--no-shuffle", dest="shuffle", action="store_false")
p.add_argument("--opt", choices=["sgd", "adam"], default="sgd", help="optimizer")
p.add_argument("--layers", nargs="+", type=int, default=[1])
p.add_argument("-v", "--verbose", action="count", default=0)
p.add_argument("extra", nargs="*")
args = p.parse_args()
print(args)
print(args.lr * 2, args.epochs, args.data, args.extra)
)PY";
const char* const k_argparse_unrecognized = R"PY(import argparse
p = argparse.ArgumentParser(description="Train a small model on some data with a fairly long description that needs to wrap across lines.")
p.add_argument("data", help="path to the data")
p.add_argument("--lr", type=float, default=0.1, help="learning rate (default: %(default)s)")
p.add_argument("-e", "--epochs", type=int, default=3)
p.add_argument("--cuda", action="store_true", help="use the GPU")
p.add_argument("--no-shuffle", dest="shuffle", action="store_false")
p.add_argument("--opt", choices=["sgd", "adam"], default="sgd", help="optimizer")
p.add_argument("--layers", nargs="+", type=int, default=[1])
p.add_argument("-v", "--verbose", action="count", default=0)
p.add_argument("extra", nargs="*")
args = p.parse_args()
print(args)
print(args.lr * 2, args.epochs, args.data, args.extra)
)PY";
const char* const k_argparse_groups_help = R"PY(import argparse
import sys
p = argparse.ArgumentParser(prog="train", formatter_class=argparse.ArgumentDefaultsHelpFormatter, epilog="See the docs for more.")
p.add_argument("mode", choices=["fit", "eval"], help="what to do")
p.add_argument("ckpt", nargs="?", default="last.pt", help="checkpoint")
g = p.add_argument_group("model", "Options of the model architecture, which has quite a long description to wrap.")
g.add_argument("--hidden", type=int, default=64, metavar="H", help="hidden size")
g.add_argument("--act", default="relu", help="activation")
m = p.add_mutually_exclusive_group()
m.add_argument("--fp16", action="store_true", help="half precision")
m.add_argument("--bf16", action="store_true", help="bfloat16")
p.add_argument("--tag", action="append", help="tags")
p.add_argument("--seed", type=int, required=True, help="random seed")
p.add_argument("--shift", type=float, default=0.0)
p.add_argument("--size", nargs=2, type=int, default=[3, 4], metavar=("W", "H"))
p.add_argument("--version", action="version", version="%(prog)s 1.0")
args = p.parse_args(sys.argv[1:])
print(args)
print(vars(args)["seed"])
)PY";
const char* const k_argparse_groups_values = R"PY(import argparse
import sys
p = argparse.ArgumentParser(prog="train", formatter_class=argparse.ArgumentDefaultsHelpFormatter, epilog="See the docs for more.")
p.add_argument("mode", choices=["fit", "eval"], help="what to do")
p.add_argument("ckpt", nargs="?", default="last.pt", help="checkpoint")
g = p.add_argument_group("model", "Options of the model architecture, which has quite a long description to wrap.")
g.add_argument("--hidden", type=int, default=64, metavar="H", help="hidden size")
g.add_argument("--act", default="relu", help="activation")
m = p.add_mutually_exclusive_group()
m.add_argument("--fp16", action="store_true", help="half precision")
m.add_argument("--bf16", action="store_true", help="bfloat16")
p.add_argument("--tag", action="append", help="tags")
p.add_argument("--seed", type=int, required=True, help="random seed")
p.add_argument("--shift", type=float, default=0.0)
p.add_argument("--size", nargs=2, type=int, default=[3, 4], metavar=("W", "H"))
p.add_argument("--version", action="version", version="%(prog)s 1.0")
args = p.parse_args(sys.argv[1:])
print(args)
print(vars(args)["seed"])
)PY";
const char* const k_argparse_mutually_exclusive = R"PY(import argparse
import sys
p = argparse.ArgumentParser(prog="train", formatter_class=argparse.ArgumentDefaultsHelpFormatter, epilog="See the docs for more.")
p.add_argument("mode", choices=["fit", "eval"], help="what to do")
p.add_argument("ckpt", nargs="?", default="last.pt", help="checkpoint")
g = p.add_argument_group("model", "Options of the model architecture, which has quite a long description to wrap.")
g.add_argument("--hidden", type=int, default=64, metavar="H", help="hidden size")
g.add_argument("--act", default="relu", help="activation")
m = p.add_mutually_exclusive_group()
m.add_argument("--fp16", action="store_true", help="half precision")
m.add_argument("--bf16", action="store_true", help="bfloat16")
p.add_argument("--tag", action="append", help="tags")
p.add_argument("--seed", type=int, required=True, help="random seed")
p.add_argument("--shift", type=float, default=0.0)
p.add_argument("--size", nargs=2, type=int, default=[3, 4], metavar=("W", "H"))
p.add_argument("--version", action="version", version="%(prog)s 1.0")
args = p.parse_args(sys.argv[1:])
print(args)
print(vars(args)["seed"])
)PY";
const char* const k_argparse_required_option = R"PY(import argparse
import sys
p = argparse.ArgumentParser(prog="train", formatter_class=argparse.ArgumentDefaultsHelpFormatter, epilog="See the docs for more.")
p.add_argument("mode", choices=["fit", "eval"], help="what to do")
p.add_argument("ckpt", nargs="?", default="last.pt", help="checkpoint")
g = p.add_argument_group("model", "Options of the model architecture, which has quite a long description to wrap.")
g.add_argument("--hidden", type=int, default=64, metavar="H", help="hidden size")
g.add_argument("--act", default="relu", help="activation")
m = p.add_mutually_exclusive_group()
m.add_argument("--fp16", action="store_true", help="half precision")
m.add_argument("--bf16", action="store_true", help="bfloat16")
p.add_argument("--tag", action="append", help="tags")
p.add_argument("--seed", type=int, required=True, help="random seed")
p.add_argument("--shift", type=float, default=0.0)
p.add_argument("--size", nargs=2, type=int, default=[3, 4], metavar=("W", "H"))
p.add_argument("--version", action="version", version="%(prog)s 1.0")
args = p.parse_args(sys.argv[1:])
print(args)
print(vars(args)["seed"])
)PY";
const char* const k_argparse_version = R"PY(import argparse
import sys
p = argparse.ArgumentParser(prog="train", formatter_class=argparse.ArgumentDefaultsHelpFormatter, epilog="See the docs for more.")
p.add_argument("mode", choices=["fit", "eval"], help="what to do")
p.add_argument("ckpt", nargs="?", default="last.pt", help="checkpoint")
g = p.add_argument_group("model", "Options of the model architecture, which has quite a long description to wrap.")
g.add_argument("--hidden", type=int, default=64, metavar="H", help="hidden size")
g.add_argument("--act", default="relu", help="activation")
m = p.add_mutually_exclusive_group()
m.add_argument("--fp16", action="store_true", help="half precision")
m.add_argument("--bf16", action="store_true", help="bfloat16")
p.add_argument("--tag", action="append", help="tags")
p.add_argument("--seed", type=int, required=True, help="random seed")
p.add_argument("--shift", type=float, default=0.0)
p.add_argument("--size", nargs=2, type=int, default=[3, 4], metavar=("W", "H"))
p.add_argument("--version", action="version", version="%(prog)s 1.0")
args = p.parse_args(sys.argv[1:])
print(args)
print(vars(args)["seed"])
)PY";
const char* const k_argparse_nargs_count = R"PY(import argparse
import sys
p = argparse.ArgumentParser(prog="train", formatter_class=argparse.ArgumentDefaultsHelpFormatter, epilog="See the docs for more.")
p.add_argument("mode", choices=["fit", "eval"], help="what to do")
p.add_argument("ckpt", nargs="?", default="last.pt", help="checkpoint")
g = p.add_argument_group("model", "Options of the model architecture, which has quite a long description to wrap.")
g.add_argument("--hidden", type=int, default=64, metavar="H", help="hidden size")
g.add_argument("--act", default="relu", help="activation")
m = p.add_mutually_exclusive_group()
m.add_argument("--fp16", action="store_true", help="half precision")
m.add_argument("--bf16", action="store_true", help="bfloat16")
p.add_argument("--tag", action="append", help="tags")
p.add_argument("--seed", type=int, required=True, help="random seed")
p.add_argument("--shift", type=float, default=0.0)
p.add_argument("--size", nargs=2, type=int, default=[3, 4], metavar=("W", "H"))
p.add_argument("--version", action="version", version="%(prog)s 1.0")
args = p.parse_args(sys.argv[1:])
print(args)
print(vars(args)["seed"])
)PY";
const char* const k_copy = R"PY(import copy
import torch
import torch.nn as nn
a = [1, [2, 3], {"k": [4]}]
b = copy.copy(a)
c = copy.deepcopy(a)
a[1].append(9)
print(b, c, b[1] is a[1], c[1] is a[1])
shared = [0]
pair = [shared, shared]
dp = copy.deepcopy(pair)
print(dp[0] is dp[1], dp[0] is shared)
torch.manual_seed(0)
t = torch.randn(3, requires_grad=True)
u = copy.deepcopy(t)
print(u is t, torch.equal(u, t), u.requires_grad, u.is_leaf)
with torch.no_grad():
    u.add_(1)
print(torch.equal(u, t))
m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
m2 = copy.deepcopy(m)
print(type(m2).__name__, m2[0].weight is m[0].weight, torch.equal(m2[0].weight, m[0].weight), isinstance(m2[0].weight, nn.Parameter))
with torch.no_grad():
    m2[0].weight.zero_()
print(m[0].weight.abs().sum().item() > 0, m2[0].weight.abs().sum().item(), len(list(m2.parameters())))
x = torch.ones(2, 4)
print(torch.equal(m(x), m(x)), m2(x).shape)
class Holder:
    def __init__(self):
        self.w = torch.zeros(2)
        self.alias = self.w
h2 = copy.deepcopy(Holder())
print(h2.w is h2.alias, type(h2).__name__)
y = t * 2
copy.deepcopy(y)
)PY";
const char* const k_typing_and_future_out = R"OUT(typing.Optional[int] typing.Optional[typing.List[int]] typing.Union[int, str] typing.Optional[int] <class 'int'>
typing.List typing.Dict[str, typing.Tuple[int, ...]] typing.Callable[[int, str], float] typing.Iterable[int] typing.Sequence[str] typing.Mapping[str, typing.Any]
False x ~T None
3 [0] [2] True
P(x=2, y=1.5) 2 1.5 3.5 {'x': 2, 'y': 1.5} P(x=5, y=1.5) 2 True
{'lr': 'float', 'name': 'str', 'depth': 'Dict[str, int]'} 0.1
)OUT";
const char* const k_random_is_cpythons_mersenne_twister_out = R"OUT(0.8444218515250481 0.7579544029403025
[53, 5, 33, 65, 62] 6 25
[7, 3, 2, 8, 5, 6, 9, 4, 0, 1] e -0.15615636062945915
0.6901729991646017 0.1307464077662839 2.0047187904078307
[203, 733, 665, 718] ['c', 'b']
[1, 2, 3, 1] ['z', 'z', 'z']
0.7304434512634141 0 2954380730 911121098495077821166314256839
0.32383276483316237
True
0.052363598850944326 1 True
)OUT";
const char* const k_collections_module_out = R"OUT(Point(x=1, y=2) Pt3(x=1, y=2, z=0) 3 1 (1, 2, 0) {'x': 1, 'y': 2} Point(x=1, y=9) ('x', 'y') 3
1 2 True True <class '__main__.Point'>
defaultdict(<class 'int'>, {'the': 2, 'cat': 1, 'and': 1, 'hat': 1, 'dog': 0}) 0 5 True [('and', 1), ('cat', 1), ('dog', 0), ('hat', 1), ('the', 2)]
defaultdict(<class 'list'>, {'a': [1, 2]}) {'a': [1, 2]}
['b', 'a', 'c'] True
deque([1, 2, 3]) 0 4 3 1 3
deque([3, 1, 2]) deque([2, 3, 4], maxlen=3) deque(['a', 'b'])
Counter({'i': 4, 's': 4, 'p': 2, 'm': 1}) 4 0 [('i', 4), ('s', 4)] 11 11
[('i', 4)] Counter({'c': 4, 'a': 3, 'b': 1}) Counter({'a': 2})
)OUT";
const char* const k_functools_and_itertools_out = R"OUT(10 1 9
25 1024 True () {'exp': 2}
4 add True
4 9 4 16 9 [2, 3, 4, 3] CacheInfo(hits=1, misses=4, maxsize=2, currsize=2)
23416728348467685 CacheInfo(hits=78, misses=81, maxsize=None, currsize=81)
[1, 2, 3, 'a', 'b'] [1, 2, 3]
[10, 15, 20, 25] ['b', 'd', 'f'] [0, 1, 2]
['x', 'x', 'x'] [1, 2, 1, 2, 1]
[1, 3, 6, 10] [3, 3, 4] [10, 11, 13]
[('a', 1), ('b', 2), ('-', 3)]
[(0, 'x'), (0, 'y'), (1, 'x'), (1, 'y')] 27
[('a', 'b', 'c'), ('a', 'b', 'd'), ('a', 'c', 'd'), ('b', 'c', 'd')] [(1, 1), (1, 2), (2, 2)]
[(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)] []
[8, 9] [1, 2] [5, 1]
[('a', ['a', 'a']), ('b', ['b']), ('c', ['c', 'c', 'c'])] [(1, 2), (2, 3)] ['a', 'c']
0 0 0; 1 0 1; 2 1 0; 3 1 1; 
)OUT";
const char* const k_inspect_enum_abc_out = R"OUT((a, b=2, *args, c, d=None, **kwargs) ['a', 'b', 'args', 'c', 'd', 'kwargs'] 2 True
['POSITIONAL_OR_KEYWORD', 'POSITIONAL_OR_KEYWORD', 'VAR_POSITIONAL', 'KEYWORD_ONLY', 'KEYWORD_ONLY', 'VAR_KEYWORD'] True
(dim, depth=2) (x, *, mask=None) (x, y=1)
True True True False
Color.RED <Color.GREEN: 2> Color.BLUE RED 3 True False
1 2 True True ['RED', 'GREEN', 'BLUE']
Color.GREEN r
True 1
ran True
)OUT";
const char* const k_dataclasses_module_out = R"OUT(Config(name='mlp', lr=0.001, layers=[64, 64], tags=[]) 0.001 [64, 64] 7 0
True False {'name': 'mlp', 'lr': 0.001, 'layers': [64, 64], 'tags': [], 'secret': 7} ('mlp', 0.001, [64, 64], [], 7)
['name', 'lr', 'layers', 'tags', 'secret'] float True False
Config(name='mlp', lr=0.5, layers=[64, 64], tags=[]) Config(name='a', lr=0.1, layers=[1], tags=[])
Point3(x=1, y=2, z=5) 8 5 25
Frozen(a=1)
)OUT";
const char* const k_os_path_and_sys_out = R"OUT(data/train/x.bin /root/f a/b a/
model.pt /tmp  ('ckpt/model.tar', '.gz') ('.bashrc', '')
('a/b', 'c') a/c/d True / /
9223372036854775807 linux True 3
written
8 default None
)OUT";
const char* const k_time_module_out = R"OUT(True True True True
10
)OUT";
const char* const k_time_module_err = R"ERR(ValueError: sleep length must be non-negative)ERR";
const char* const k_warnings_once_per_location_out = R"OUT(1 RuntimeWarning recorded 20
done
)OUT";
const char* const k_warnings_once_per_location_err = R"ERR(prog.py:5: UserWarning: step 0
  warnings.warn(f"step {i // 2}")
prog.py:5: UserWarning: step 1
  warnings.warn(f"step {i // 2}")
prog.py:8: DeprecationWarning: old_api is deprecated
  old_api()
prog.py:9: DeprecationWarning: old_api is deprecated
  old_api()
prog.py:10: FutureWarning: future change
  warnings.warn("future change", FutureWarning)
prog.py:17: UserWarning: repeated
  warnings.warn("repeated")
prog.py:17: UserWarning: repeated
  warnings.warn("repeated")
prog.py:22: UserWarning: after
  warnings.warn("after")
)ERR";
const char* const k_argparse_values_out = R"OUT(Namespace(data='d1', lr=0.1, epochs=5, cuda=False, shuffle=True, opt='sgd', layers=[4, 5], verbose=0, extra=[])
0.2 5 d1 []
)OUT";
const char* const k_argparse_values_err = R"ERR()ERR";
const char* const k_argparse_help_out = R"OUT(usage: ap1.py [-h] [--lr LR] [-e EPOCHS] [--cuda] [--no-shuffle]
              [--opt {sgd,adam}] [--layers LAYERS [LAYERS ...]] [-v]
              data [extra ...]

Train a small model on some data with a fairly long description that needs to
wrap across lines.

positional arguments:
  data                  path to the data
  extra

options:
  -h, --help            show this help message and exit
  --lr LR               learning rate (default: 0.1)
  -e EPOCHS, --epochs EPOCHS
  --cuda                use the GPU
  --no-shuffle
  --opt {sgd,adam}      optimizer
  --layers LAYERS [LAYERS ...]
  -v, --verbose
)OUT";
const char* const k_argparse_help_err = R"ERR()ERR";
const char* const k_argparse_missing_positional_out = R"OUT()OUT";
const char* const k_argparse_missing_positional_err = R"ERR(usage: ap1.py [-h] [--lr LR] [-e EPOCHS] [--cuda] [--no-shuffle]
              [--opt {sgd,adam}] [--layers LAYERS [LAYERS ...]] [-v]
              data [extra ...]
ap1.py: error: the following arguments are required: data, extra
)ERR";
const char* const k_argparse_invalid_float_out = R"OUT()OUT";
const char* const k_argparse_invalid_float_err = R"ERR(usage: ap1.py [-h] [--lr LR] [-e EPOCHS] [--cuda] [--no-shuffle]
              [--opt {sgd,adam}] [--layers LAYERS [LAYERS ...]] [-v]
              data [extra ...]
ap1.py: error: argument --lr: invalid float value: 'abc'
)ERR";
const char* const k_argparse_invalid_choice_out = R"OUT()OUT";
const char* const k_argparse_invalid_choice_err = R"ERR(usage: ap1.py [-h] [--lr LR] [-e EPOCHS] [--cuda] [--no-shuffle]
              [--opt {sgd,adam}] [--layers LAYERS [LAYERS ...]] [-v]
              data [extra ...]
ap1.py: error: argument --opt: invalid choice: 'sgdx' (choose from 'sgd', 'adam')
)ERR";
const char* const k_argparse_expected_one_argument_out = R"OUT()OUT";
const char* const k_argparse_expected_one_argument_err = R"ERR(usage: ap1.py [-h] [--lr LR] [-e EPOCHS] [--cuda] [--no-shuffle]
              [--opt {sgd,adam}] [--layers LAYERS [LAYERS ...]] [-v]
              data [extra ...]
ap1.py: error: argument --lr: expected one argument
)ERR";
const char* const k_argparse_unrecognized_out = R"OUT()OUT";
const char* const k_argparse_unrecognized_err = R"ERR(usage: ap1.py [-h] [--lr LR] [-e EPOCHS] [--cuda] [--no-shuffle]
              [--opt {sgd,adam}] [--layers LAYERS [LAYERS ...]] [-v]
              data [extra ...]
ap1.py: error: unrecognized arguments: x y
)ERR";
const char* const k_argparse_groups_help_out = R"OUT(usage: train [-h] [--hidden H] [--act ACT] [--fp16 | --bf16] [--tag TAG]
             --seed SEED [--shift SHIFT] [--size W H] [--version]
             {fit,eval} [ckpt]

positional arguments:
  {fit,eval}     what to do
  ckpt           checkpoint (default: last.pt)

options:
  -h, --help     show this help message and exit
  --fp16         half precision (default: False)
  --bf16         bfloat16 (default: False)
  --tag TAG      tags (default: None)
  --seed SEED    random seed (default: None)
  --shift SHIFT
  --size W H
  --version      show program's version number and exit

model:
  Options of the model architecture, which has quite a long description to
  wrap.

  --hidden H     hidden size (default: 64)
  --act ACT      activation (default: relu)

See the docs for more.
)OUT";
const char* const k_argparse_groups_help_err = R"ERR()ERR";
const char* const k_argparse_groups_values_out = R"OUT(Namespace(mode='eval', ckpt='x.pt', hidden=64, act='relu', fp16=True, bf16=False, tag=['a', 'b'], seed=2, shift=-1.5, size=[5, 6])
2
)OUT";
const char* const k_argparse_groups_values_err = R"ERR()ERR";
const char* const k_argparse_mutually_exclusive_out = R"OUT()OUT";
const char* const k_argparse_mutually_exclusive_err = R"ERR(usage: train [-h] [--hidden H] [--act ACT] [--fp16 | --bf16] [--tag TAG]
             --seed SEED [--shift SHIFT] [--size W H] [--version]
             {fit,eval} [ckpt]
train: error: argument --bf16: not allowed with argument --fp16
)ERR";
const char* const k_argparse_required_option_out = R"OUT()OUT";
const char* const k_argparse_required_option_err = R"ERR(usage: train [-h] [--hidden H] [--act ACT] [--fp16 | --bf16] [--tag TAG]
             --seed SEED [--shift SHIFT] [--size W H] [--version]
             {fit,eval} [ckpt]
train: error: the following arguments are required: --seed
)ERR";
const char* const k_argparse_version_out = R"OUT(train 1.0
)OUT";
const char* const k_argparse_version_err = R"ERR()ERR";
const char* const k_argparse_nargs_count_out = R"OUT()OUT";
const char* const k_argparse_nargs_count_err = R"ERR(usage: train [-h] [--hidden H] [--act ACT] [--fp16 | --bf16] [--tag TAG]
             --seed SEED [--shift SHIFT] [--size W H] [--version]
             {fit,eval} [ckpt]
train: error: argument --size: expected 2 arguments
)ERR";
const char* const k_copy_deepcopy_of_tensors_and_modules_out = R"OUT([1, [2, 3, 9], {'k': [4]}] [1, [2, 3], {'k': [4]}] True False
True False
False True True True
False
Sequential False True True
True 0.0 4
True torch.Size([2, 2])
True Holder
)OUT";
const char* const k_more_random_dataclass_enum = R"PY(from __future__ import annotations
import random, itertools, dataclasses, enum
from dataclasses import dataclass, KW_ONLY, field
random.seed(5)
print(random.triangular(0, 10, 2), random.lognormvariate(0, 1), random.expovariate(2.0), random.randrange(-10, 10, 3), random.getrandbits(64))
a, b = itertools.tee([1, 2, 3])
print(list(a), list(b))
class K:
    x: int
    _: KW_ONLY
    y: int = 2
    z: int = field(default=3)
K = dataclass(K)
print(K(1, y=5), K(1))
class F:
    a: int
F = dataclass(frozen=True)(F)
f = F(1)
print(f, f.a)
class S(enum.StrEnum):
    A = "a"
    B = "b"
print(S.A, S.A == "a", f"{S.B}", list(S.__members__.keys()), S("b") is S.B)
print(list(itertools.combinations_with_replacement("abc", 2)), list(itertools.filterfalse(lambda v: v % 2, range(6))))
print(list(itertools.islice(itertools.count(1.5, 0.5), 3)), list(itertools.starmap(max, [(1, 5), (7, 2)])))
)PY";
const char* const k_more_random_dataclass_enum_out = R"OUT(4.507471947379436 7.5783035579419 1.4275530373958278 5 17013893096224296094
[1, 2, 3] [1, 2, 3]
K(x=1, y=5, z=3) K(x=1, y=2, z=3)
F(a=1) 1
a True b ['A', 'B'] True
[('a', 'a'), ('a', 'b'), ('a', 'c'), ('b', 'b'), ('b', 'c'), ('c', 'c')] [0, 2, 4]
[1.5, 2.0, 2.5] [5, 7]
)OUT";
const char* const k_class_hooks = R"PY(from enum import Enum, auto
from typing import Generic, TypeVar, Protocol
T = TypeVar("T")
class Mode(Enum):
    TRAIN = auto()
    EVAL = auto()
    TEST = "t"
print([m.name for m in Mode], len(Mode), Mode["EVAL"], list(Mode))
class Box(Generic[T]):
    def __init__(self, v):
        self.v = v
class Shape(Protocol):
    def area(self):
        return 0
IntBox = Box[int]
print(IntBox(3).v, isinstance(Box(1), Box), Box.__name__)
class Base:
    registry = []
    def __init_subclass__(cls):
        Base.registry.append(cls.__name__)
class A(Base):
    pass
class B(A):
    pass
print(Base.registry)
class Vec:
    def __class_getitem__(cls, item):
        return "Vec of " + item.__name__
print(Vec[int])
)PY";
const char* const k_class_hooks_out = R"OUT(['TRAIN', 'EVAL', 'TEST'] 3 Mode.EVAL [<Mode.TRAIN: 1>, <Mode.EVAL: 2>, <Mode.TEST: 't'>]
3 True Box
['A', 'B']
Vec of int
)OUT";
const char* const k_logging_defaults = R"PY(import logging
log = logging.getLogger(__name__)
log.info("hidden")
log.warning("last resort %d", 5)
logging.warning("root warn")
logging.info("still hidden")
logging.basicConfig(level=logging.DEBUG)
logging.info("now shown")
sub = logging.getLogger("train.loop")
sub.debug("debug %s", "x")
sub.setLevel(logging.ERROR)
sub.warning("filtered")
sub.error("err")
print(logging.getLevelName(20), logging.getLevelName(logging.WARNING), sub.getEffectiveLevel(), log.isEnabledFor(logging.DEBUG))
h = logging.StreamHandler()
h.setFormatter(logging.Formatter("[%(levelname)s] %(name)s: %(message)s"))
m = logging.getLogger("model")
m.addHandler(h)
m.propagate = False
m.info("with handler %.2f", 0.5)
print(m.name, m.level, m.handlers[0].level, logging.root.level)
)PY";
const char* const k_logging_defaults_out = R"OUT(INFO WARNING 40 False
model 0 0 30
)OUT";
const char* const k_logging_defaults_err = R"ERR(last resort 5
WARNING:root:root warn
ERROR:train.loop:err
)ERR";
const char* const k_logging_formats_and_hierarchy = R"PY(import logging
import sys
logging.basicConfig(level=logging.INFO, format="%(levelname)-8s %(name)s %(filename)s:%(lineno)d %(funcName)s| %(message)s", stream=sys.stdout)
child = logging.getLogger("a.b.c")
mid = logging.getLogger("a.b")
print(child.parent.name, mid.parent.name)
def work(n):
    child.info("working on %d items", n)
    child.debug("not shown")
    mid.warning("%(x)s and %(y)s", {"x": 1, "y": 2})
work(3)
h = logging.StreamHandler(sys.stdout)
h.setFormatter(logging.Formatter("{levelname}|{name}|{message}|{user}", style="{"))
h.setLevel(logging.ERROR)
mid.addHandler(h)
mid.error("boom", extra={"user": "me"})
mid.propagate = False
child.critical("only the handler", extra={"user": "you"})
logging.disable(logging.ERROR)
mid.error("disabled")
logging.disable(logging.NOTSET)
log = logging.getLogger(__name__)
log.log(25, "custom level")
print(logging.getLevelName(25), repr(logging.getLogger("a.b")), logging.getLogger() is logging.root)
)PY";
const char* const k_logging_formats_and_hierarchy_out = R"OUT(a.b root
INFO     a.b.c prog.py:8 work| working on 3 items
WARNING  a.b prog.py:10 work| 1 and 2
ERROR|a.b|boom|me
ERROR    a.b prog.py:16 <module>| boom
CRITICAL|a.b.c|only the handler|you
Level 25 __main__ prog.py:23 <module>| custom level
Level 25 <Logger a.b (INFO)> True
)OUT";
const char* const k_logging_formats_and_hierarchy_err = R"ERR()ERR";
const char* const k_operator_contextlib = R"PY(import operator
import contextlib
from functools import reduce
print(reduce(operator.mul, [2, 3, 4]), operator.add(1, 2), operator.itemgetter(1)([5, 6]), operator.itemgetter(0, 2)("abc"))
pairs = [("b", 2), ("a", 3), ("c", 1)]
print(sorted(pairs, key=operator.itemgetter(1)), operator.neg(3), operator.truediv(1, 4), operator.contains([1], 1))
class P:
    def __init__(self):
        self.x = 5
        self.inner = self
print(operator.attrgetter("x")(P()), operator.attrgetter("inner.x", "x")(P()), operator.methodcaller("upper")("hi"))
with contextlib.nullcontext(7) as v:
    print("inside", v)
log = []
with contextlib.ExitStack() as stack:
    stack.callback(log.append, "first")
    stack.callback(log.append, "second")
    stack.enter_context(contextlib.nullcontext())
print(log)
)PY";
const char* const k_operator_contextlib_out = R"OUT(24 3 6 ('a', 'c')
[('c', 1), ('b', 2), ('a', 3)] -3 0.25 True
5 (5, 5) HI
inside 7
['second', 'first']
)OUT";
const char* const k_json_module = R"PY(import json
import sys
cfg = {"name": "mlp", "lr": 0.001, "layers": [64, 32], "tied": True, "none": None, "ratio": 1e-7, "big": 10**20, "t": (1, 2.5)}
print(json.dumps(cfg))
print(json.dumps(cfg, indent=2, sort_keys=True))
print(json.dumps({"é": "naïve ✓ 😀", 3: 1, 2.5: "x", None: 0, False: 1}))
print(json.dumps(["tab\there", "quote\"", "back\\slash", "\x01"], ensure_ascii=False))
print(json.dumps({"a": [1, {"b": []}], "c": {}}, indent="\t", separators=(",", ":")))
print(json.dumps(float("nan")), json.dumps([float("inf"), -float("inf")]), json.dumps(1.0), json.dumps(0.1 + 0.2))
back = json.loads('{"x": [1, 2.5, -3e2, true, false, null], "s": "a\\u00e9\\ud83d\\ude00\\n", "n": 123456789012345678901234}')
print(back, back["s"] == "a\u00e9\U0001F600\n")
json.dump({"k": 1}, sys.stdout, indent=1)
print()
print(json.loads("NaN"), json.loads(" [ ] "), json.loads('{"a" : {"b" : 1}}'))
class P:
    pass
print(json.dumps({"p": P()}, default=lambda o: "P!"))
json.loads('{"a": 1,}')
)PY";
const char* const k_json_module_out = R"OUT({"name": "mlp", "lr": 0.001, "layers": [64, 32], "tied": true, "none": null, "ratio": 1e-07, "big": 100000000000000000000, "t": [1, 2.5]}
{
  "big": 100000000000000000000,
  "layers": [
    64,
    32
  ],
  "lr": 0.001,
  "name": "mlp",
  "none": null,
  "ratio": 1e-07,
  "t": [
    1,
    2.5
  ],
  "tied": true
}
{"\u00e9": "na\u00efve \u2713 \ud83d\ude00", "3": 1, "2.5": "x", "null": 0, "false": 1}
["tab\there", "quote\"", "back\\slash", "\u0001"]
{
	"a":[
		1,
		{
			"b":[]
		}
	],
	"c":{}
}
NaN [Infinity, -Infinity] 1.0 0.30000000000000004
{'x': [1, 2.5, -300.0, True, False, None], 's': 'aé😀\n', 'n': 123456789012345678901234} True
{
 "k": 1
}
nan [] {'a': {'b': 1}}
{"p": "P!"}
)OUT";
const char* const k_argparse_type_functions = R"PY(import argparse
def positive(s):
    v = int(s)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{s} is not positive")
    return v
def pair(s):
    a, b = s.split(",")
    return (int(a), int(b))
p = argparse.ArgumentParser(prog="t")
p.add_argument("--n", type=positive, default=1)
p.add_argument("--shape", type=pair)
print(p.parse_args(["--n", "3", "--shape", "2,5"]))
q = argparse.ArgumentParser(prog="q", exit_on_error=False)
q.add_argument("--k", type=int)
try:
    q.parse_args(["--k", "x"])
except argparse.ArgumentError as e:
    print("caught:", e)
for argv in (["--shape", "2"], ["--n", "-4"]):
    try:
        p.parse_args(argv)
    except SystemExit as e:
        print("exit", e.code)
)PY";
const char* const k_argparse_type_functions_out = R"OUT(Namespace(n=3, shape=(2, 5))
caught: argument --k: invalid int value: 'x'
exit 2
exit 2
)OUT";
const char* const k_argparse_type_functions_err = R"ERR(usage: t [-h] [--n N] [--shape SHAPE]
t: error: argument --shape: invalid pair value: '2'
usage: t [-h] [--n N] [--shape SHAPE]
t: error: argument --n: -4 is not positive
)ERR";
const char* const k_decorators_and_ordering = R"PY(from dataclasses import dataclass, field
from typing import List
import functools
@dataclass
class A:
    x: int
    ys: List[int] = field(default_factory=list)
@dataclass(frozen=True)
class B:
    name: str = "b"
print(A(1), B(), A(2) == A(2))
try:
    B().name = "c"
except AttributeError as e:
    print("frozen:", type(e).__name__, e)
@functools.total_ordering
class V:
    def __init__(self, v):
        self.v = v
    def __lt__(self, o):
        return self.v < o.v
    def __eq__(self, o):
        return self.v == o.v
print(V(1) < V(2), V(3) > V(2))
print(V(1) <= V(2), V(2) >= V(2), V(1) >= V(2))
@dataclass(order=True)
class Ver:
    major: int
    minor: int = 0
print(sorted([Ver(1, 2), Ver(0, 5), Ver(1, 0)]), Ver(1) < Ver(1, 1), max(Ver(2), Ver(1, 9)))
print(sorted([3, 1, 2], key=functools.cmp_to_key(lambda a, b: b - a)))
import warnings
warnings.simplefilter("error")
try:
    warnings.warn("now an error", RuntimeWarning)
except RuntimeWarning as w:
    print("caught", type(w).__name__, w)
)PY";
const char* const k_decorators_and_ordering_out = R"OUT(A(x=1, ys=[]) B(name='b') True
frozen: FrozenInstanceError cannot assign to field 'name'
True True
True True False
[Ver(major=0, minor=5), Ver(major=1, minor=0), Ver(major=1, minor=2)] True Ver(major=2, minor=0)
[3, 2, 1]
caught RuntimeWarning now an error
)OUT";
const char* const k_decorators_and_ordering_err = R"ERR()ERR";
const char* const k_json_errors = R"PY(import json
for doc in ['{"a": 1,}', '[1, 2', '"abc', '{"a" 1}', 'tru', '[1] x', '\n\n  {"k": nul}']:
    try:
        json.loads(doc)
    except ValueError as e:
        print(type(e).__name__, isinstance(e, json.JSONDecodeError), e.msg, e.pos, e.lineno, e.colno, "|", e)
json.loads("{")
)PY";
const char* const k_json_errors_out = R"OUT(JSONDecodeError True Expecting property name enclosed in double quotes 8 1 9 | Expecting property name enclosed in double quotes: line 1 column 9 (char 8)
JSONDecodeError True Expecting ',' delimiter 5 1 6 | Expecting ',' delimiter: line 1 column 6 (char 5)
JSONDecodeError True Unterminated string starting at 0 1 1 | Unterminated string starting at: line 1 column 1 (char 0)
JSONDecodeError True Expecting ':' delimiter 5 1 6 | Expecting ':' delimiter: line 1 column 6 (char 5)
JSONDecodeError True Expecting value 0 1 1 | Expecting value: line 1 column 1 (char 0)
JSONDecodeError True Extra data 4 1 5 | Extra data: line 1 column 5 (char 4)
JSONDecodeError True Expecting value 10 3 9 | Expecting value: line 3 column 9 (char 10)
)OUT";
const char* const k_contextlib_generators = R"PY(import contextlib
import time
@contextlib.contextmanager
def timer(name, log):
    start = time.perf_counter()
    log.append("enter " + name)
    yield start
    log.append("exit " + name)
log = []
with timer("fwd", log) as t0:
    log.append(t0 > 0)
print(log, timer.__name__)
@timer("deco", log)
def work(x):
    return x * 2
print(work(4), log[-2:])
with contextlib.suppress(KeyError, IndexError):
    [][1]
print("suppressed")
with contextlib.suppress(KeyError):
    try:
        {}["k"]
    finally:
        print("finally ran")
try:
    with contextlib.suppress(KeyError):
        1 / 0
except ZeroDivisionError as e:
    print("passed through:", e)
)PY";
const char* const k_contextlib_generators_out = R"OUT(['enter fwd', True, 'exit fwd'] timer
8 ['enter deco', 'exit deco']
suppressed
finally ran
passed through: division by zero
)OUT";
const char* const k_string_bisect_heapq = R"PY(import string, bisect, heapq, random
print(string.ascii_letters, string.digits, string.punctuation, len(string.printable), string.capwords("hello  big world"))
a = [1, 3, 3, 7]
print(bisect.bisect(a, 3), bisect.bisect_left(a, 3), bisect.bisect_right(a, 0))
bisect.insort(a, 5)
print(a, bisect.bisect_left([(1, "a"), (4, "b")], 3, key=lambda t: t[0]))
random.seed(3)
h = []
for v in [random.randint(0, 50) for _ in range(10)]:
    heapq.heappush(h, (v, str(v)))
print(h)
print([heapq.heappop(h)[0] for _ in range(3)], h[0])
x = [9, 4, 7, 1, 8, 2]
heapq.heapify(x)
print(x, heapq.heappushpop(x, 3), heapq.heapreplace(x, 10), x)
print(heapq.nlargest(2, [5, 1, 9, 3]), heapq.nsmallest(2, ["bb", "a", "ccc"], key=len), list(heapq.merge([1, 4], [2, 3])))
)PY";
const char* const k_string_bisect_heapq_out = R"OUT(abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~ 100 Hello Big World
3 1 0
[1, 3, 3, 5, 7] 1
[(4, '4'), (8, '8'), (30, '30'), (37, '37'), (15, '15'), (38, '38'), (34, '34'), (40, '40'), (37, '37'), (23, '23')]
[4, 8, 15] (23, '23')
[3, 4, 7, 9, 8, 10] 1 2 [3, 4, 7, 9, 8, 10]
[9, 5] ['a', 'bb'] [1, 2, 3, 4]
)OUT";
const char* const k_mappings = R"PY(import json
from collections import defaultdict, Counter
d = defaultdict(int)
d["a"] += 2
c = Counter("abbccc")
print(dict(d), dict(c), json.dumps(d), json.dumps(c, sort_keys=True))
x = {"z": 0}
x.update(c)
print(x)
)PY";
const char* const k_mappings_out = R"OUT({'a': 2} {'a': 1, 'b': 2, 'c': 3} {"a": 2} {"a": 1, "b": 2, "c": 3}
{'z': 0, 'a': 1, 'b': 2, 'c': 3}
)OUT";
const char* const k_named_tuple_forms = R"PY(from typing import NamedTuple
P = NamedTuple("P", [("x", int), ("y", float)])
p = P(1, 2.0)
print(p, p.y, P.__name__)
class Q(NamedTuple):
    a: int
    b: int = 3
print(Q(1), Q(1, 2)._asdict())
)PY";
const char* const k_named_tuple_forms_out = R"OUT(P(x=1, y=2.0) 2.0 P
Q(a=1, b=3) {'a': 1, 'b': 2}
)OUT";
const char* const k_cached_property = R"PY(from functools import cached_property
class Net:
    def __init__(self):
        self.calls = 0
    @cached_property
    def size(self):
        self.calls += 1
        return 42
n = Net()
print(n.size, n.size, n.calls, "size" in n.__dict__)
n.size = 7
print(n.size, n.calls)
)PY";
const char* const k_cached_property_out = R"OUT(42 42 1 True
7 1
)OUT";


// str indexes code points and takes case and classes from the Unicode
// database; unicodedata. Expected: CPython 3.11.7's output.
const char* const k_unicode_text = R"PY(import string
import unicodedata

names = 'Wiśniewski Ślusàrski Straße ǅemal ﬁne ΣΑΣ Ωμέγα'
print(len(names), names[3], names[11:20], names[::-4], names[-5:])
print(names.upper())
print(names.lower())
print(names.casefold())
print(names.title())
print(names.swapcase())
print(names.capitalize(), 'ΟΔΟΣ ΟΔΟΣ.'.lower())

# A character-level vocabulary, as char-rnn and nanoGPT's char models build it.
text = 'zażółć gęślą jaźń — naïve café'
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
print(len(text), len(chars), ''.join(chars))
print([stoi[c] for c in text[:8]], ''.join(reversed(text[-4:])), list(text[2:6]))
print(max(text), min(text), text.count('ą'), 'ó' in text, text.split('—'))


def unicode_to_ascii(s):
    letters = string.ascii_letters + " .,;'"
    return ''.join(c for c in unicodedata.normalize('NFD', s) if unicodedata.category(c) != 'Mn' and c in letters)


print(unicode_to_ascii('Ślusàrski'), unicode_to_ascii('Wiśniewski'), unicode_to_ascii('Nguyễn Đỗ'))
print([unicodedata.category(c) for c in 'aŚ1 \u0301€—'], unicodedata.name('ś'), unicodedata.lookup('LATIN SMALL LETTER S WITH ACUTE'))
print(len(unicodedata.normalize('NFD', 'Ślusàrski')), unicodedata.normalize('NFC', 'S\u0301'), unicodedata.normalize('NFKC', 'ﬁ²'))
print(unicodedata.is_normalized('NFC', 'é'), unicodedata.combining('\u0301'), unicodedata.east_asian_width('漢'))
print(unicodedata.numeric('½'), unicodedata.decimal('٣'), unicodedata.digit('²'), unicodedata.bidirectional('ا'), unicodedata.mirrored('('))
print(unicodedata.name('\x00', 'no name'), unicodedata.decimal('a', -1))

print('é'.isalpha(), '٣'.isdigit(), '٣'.isdecimal(), '²'.isdigit(), '²'.isdecimal(), '½'.isnumeric(), '\u3000'.isspace())
print('Ǆ'.isupper(), 'ǅ'.istitle(), 'ß'.islower(), 'é1'.isalnum(), 'ñame'.isidentifier(), '1ñ'.isidentifier(), 'é'.isascii())
print('żółw'.find('w'), 'żółw'.index('ł'), 'żółwżółw'.rfind('ó'), 'żółwżółw'.find('ó', 3), 'żółw'.count('ó'))
print('żółw'.center(8, '·'), 'żółw'.zfill(6), 'ż'.rjust(3) + '|', 'ż'.ljust(3) + '|', 'żółw'.startswith('ół', 1), 'żółw'.endswith('ół', 0, 3))
print(ord('ż'), chr(380), '%-6s|' % 'żó', f'{"żó":>5}|', '{:^6}|'.format('ść'), repr('ść'.strip('ś')), 'ść'.partition('ś'))
for i, c in enumerate('aż'):
    print(i, c, len(c))
try:
    unicodedata.name('\x00')
except ValueError as e:
    print('ValueError:', e)
try:
    ord('żó')
except TypeError as e:
    print('TypeError:', e)
try:
    unicodedata.normalize('NFX', 'a')
except ValueError as e:
    print('ValueError:', e)
try:
    'ab'.center(5, 'żó')
except TypeError as e:
    print('TypeError:', e)
)PY";
const char* const k_unicode_text_out = R"OUT(47 n Ślusàrski αΩΣﬁmetks wś Ωμέγα
WIŚNIEWSKI ŚLUSÀRSKI STRASSE ǄEMAL FINE ΣΑΣ ΩΜΈΓΑ
wiśniewski ślusàrski straße ǆemal ﬁne σας ωμέγα
wiśniewski ślusàrski strasse ǆemal fine σασ ωμέγα
Wiśniewski Ślusàrski Straße ǅemal Fine Σας Ωμέγα
wIŚNIEWSKI śLUSÀRSKI sTRASSE ǅEMAL FINE σας ωΜΈΓΑ
Wiśniewski ślusàrski straße ǆemal ﬁne σας ωμέγα οδος οδος.
30 23  acefgjlnvzéïóąćęłńśźż—
[10, 1, 21, 13, 17, 15, 0, 5] éfac ['ż', 'ó', 'ł', 'ć']
—   1 True ['zażółć gęślą jaźń ', ' naïve café']
Slusarski Wisniewski Nguyen o
['Ll', 'Lu', 'Nd', 'Zs', 'Mn', 'Sc', 'Pd'] LATIN SMALL LETTER S WITH ACUTE ś
11 Ś fi2
True 230 W
0.5 3 2 AL 1
no name -1
True True True True False True True
True True True True True False False
3 2 5 5 1
··żółw·· 00żółw   ż| ż  | True True
380 ż żó    |    żó|   ść  | 'ć' ('', 'ś', 'ć')
0 a 1
1 ż 1
ValueError: no such name
TypeError: ord() expected a character, but string of length 2 found
ValueError: invalid normalization form
TypeError: The fill character must be exactly one character long
)OUT";

}  // namespace stdlib_test
