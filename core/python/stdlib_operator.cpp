// operator and contextlib: small pure modules model programs reach for
// (functools.reduce(operator.mul, shape), `contextlib.nullcontext()` in
// place of torch.no_grad(), a @contextmanager timer).
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kOperatorSource = R"PY(# operator in the subset, after CPython 3.12's Lib/operator.py.
import _kiln_std


def lt(a, b):
    return a < b


def le(a, b):
    return a <= b


def eq(a, b):
    return a == b


def ne(a, b):
    return a != b


def ge(a, b):
    return a >= b


def gt(a, b):
    return a > b


def not_(a):
    return not a


def truth(a):
    return True if a else False


def is_(a, b):
    return a is b


def is_not(a, b):
    return a is not b


def abs(a):
    return a if a >= 0 else -a


def add(a, b):
    return a + b


def and_(a, b):
    return a & b


def floordiv(a, b):
    return a // b


def index(a):
    return a.__index__() if hasattr(a, "__index__") else int(a)


def inv(a):
    return ~a


invert = inv


def lshift(a, b):
    return a << b


def mod(a, b):
    return a % b


def mul(a, b):
    return a * b


def matmul(a, b):
    return a @ b


def neg(a):
    return -a


def or_(a, b):
    return a | b


def pos(a):
    return +a


def pow(a, b):
    return a ** b


def rshift(a, b):
    return a >> b


def sub(a, b):
    return a - b


def truediv(a, b):
    return a / b


def xor(a, b):
    return a ^ b


def concat(a, b):
    return a + b


def contains(a, b):
    return b in a


def countOf(a, b):
    count = 0
    for i in a:
        if i is b or i == b:
            count += 1
    return count


def getitem(a, b):
    return a[b]


def setitem(a, b, c):
    a[b] = c


def delitem(a, b):
    del a[b]


def indexOf(a, b):
    for i, j in enumerate(a):
        if j is b or j == b:
            return i
    _kiln_std.raise_error("ValueError", "sequence.index(x): x not in sequence")


def length_hint(obj, default=0):
    return len(obj)


def iadd(a, b):
    a += b
    return a


def isub(a, b):
    a -= b
    return a


def imul(a, b):
    a *= b
    return a


def itruediv(a, b):
    a /= b
    return a


class attrgetter:
    def __init__(self, attr, *attrs):
        self._attrs = (attr,) + attrs

    def _get(self, obj, name):
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj

    def __call__(self, obj):
        if len(self._attrs) == 1:
            return self._get(obj, self._attrs[0])
        return tuple([self._get(obj, n) for n in self._attrs])

    def __repr__(self):
        return "operator.attrgetter(" + ", ".join([repr(a) for a in self._attrs]) + ")"


class itemgetter:
    def __init__(self, item, *items):
        self._items = (item,) + items

    def __call__(self, obj):
        if len(self._items) == 1:
            return obj[self._items[0]]
        return tuple([obj[i] for i in self._items])

    def __repr__(self):
        return "operator.itemgetter(" + ", ".join([repr(a) for a in self._items]) + ")"


class methodcaller:
    def __init__(self, name, *args, **kwargs):
        self._name = name
        self._args = args
        self._kwargs = kwargs

    def __call__(self, obj):
        return getattr(obj, self._name)(*self._args, **self._kwargs)
)PY";

const char* const kContextlibSource = R"PY(# contextlib in the subset.
import _kiln_std


class nullcontext:
    def __init__(self, enter_result=None):
        self.enter_result = enter_result

    def __enter__(self):
        return self.enter_result

    def __exit__(self, *excinfo):
        pass


class AbstractContextManager:
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        return None


class ContextDecorator:
    def __call__(self, func):
        cm = self

        def inner(*args, **kwds):
            with cm:
                return func(*args, **kwds)
        return inner


class ExitStack:
    def __init__(self):
        self._exits = []

    def enter_context(self, cm):
        result = cm.__enter__()
        self._exits.append(cm.__exit__)
        return result

    def callback(self, callback, *args, **kwds):
        def _exit(*exc):
            callback(*args, **kwds)
        self._exits.append(_exit)
        return callback

    def push(self, exit):
        self._exits.append(exit.__exit__ if hasattr(exit, "__exit__") else exit)
        return exit

    def close(self):
        self.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._exits:
            self._exits.pop()(None, None, None)
        return False


class redirect_stdout:
    def __init__(self, new_target):
        _kiln_std.refuse("contextlib.redirect_stdout is outside Kiln's subset")


class suppress(AbstractContextManager):
    def __init__(self, *exceptions):
        self._exceptions = exceptions

    def __enter__(self):
        pass

    def __exit__(self, exctype, excinst, exctb):
        if exctype is None:
            return False
        return isinstance(excinst, self._exceptions)


class _GeneratorContextManager(ContextDecorator):
    def __init__(self, func, args, kwds):
        self.gen = func(*args, **kwds)
        self.func = func
        self.args = args
        self.kwds = kwds

    def __call__(self, func):
        cm = self

        def inner(*args, **kwds):
            with _GeneratorContextManager(cm.func, cm.args, cm.kwds):
                return func(*args, **kwds)
        return inner

    def __enter__(self):
        try:
            return next(self.gen)
        except StopIteration:
            raise RuntimeError("generator didn't yield") from None

    def __exit__(self, typ, value, traceback):
        if typ is None:
            try:
                next(self.gen)
            except StopIteration:
                return False
            raise RuntimeError("generator didn't stop")
        # The subset's generators take no throw(): the exception goes on
        # without running the generator's code after its yield.
        return False


def contextmanager(func):
    def helper(*args, **kwds):
        return _GeneratorContextManager(func, args, kwds)
    _kiln_std.set_function_name(helper, func.__name__, func.__qualname__)
    return helper
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_operator, kOperatorSource, "operator.py")
KILN_STDLIB_SOURCE(load_contextlib, kContextlibSource, "contextlib.py")

}  // namespace kiln::py
