// collections, functools and copy: Python source in the subset after CPython
// 3.12's. OrderedDict is the VM's dict marked ordered; the subset cannot
// subclass dict, so defaultdict, Counter and deque are classes that behave as
// the containers they wrap.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kCollectionsSource = R"PY(# collections in the subset.
import _kiln_std
from typing import _TUPLE_METHODS, _tuple_init

OrderedDict = _kiln_std.builtin_type("OrderedDict")


def _raise(kind, message):
    _kiln_std.raise_error(kind, message)


class _NamedTupleBase:
    pass


def namedtuple(typename, field_names, *, rename=False, defaults=None, module=None):
    if isinstance(field_names, str):
        field_names = field_names.replace(",", " ").split()
    fields = tuple([str(f) for f in field_names])
    seen = {}
    for name in fields:
        if name.startswith("_"):
            _raise("ValueError", "Field names cannot start with an underscore: " + repr(name))
        if name in seen:
            _raise("ValueError", "Encountered duplicate field name: " + repr(name))
        seen[name] = True
    field_defaults = {}
    if defaults is not None:
        defaults = tuple(defaults)
        if len(defaults) > len(fields):
            _raise("TypeError", "Got more default values than field names")
        for i in range(len(defaults)):
            field_defaults[fields[len(fields) - len(defaults) + i]] = defaults[i]

    class _NT(_NamedTupleBase):
        pass

    _kiln_std.set_class_name(_NT, typename, "__main__" if module is None else module)
    cd = _kiln_std.class_dict(_NT)
    cd["_fields"] = fields
    cd["_field_defaults"] = field_defaults
    cd["__init__"] = _tuple_init
    for name, fn in _TUPLE_METHODS.items():
        cd[name] = fn
    return _NT


class defaultdict:
    def __init__(self, default_factory=None, *args, **kwargs):
        if default_factory is not None and not callable(default_factory):
            _raise("TypeError", "first argument must be callable or None")
        self.default_factory = default_factory
        self._d = dict(*args, **kwargs)

    def __missing__(self, key):
        if self.default_factory is None:
            _raise("KeyError", repr(key))
        value = self.default_factory()
        self._d[key] = value
        return value

    def __getitem__(self, key):
        d = self._d
        if key in d:
            return d[key]
        return self.__missing__(key)

    def __setitem__(self, key, value):
        self._d[key] = value

    def __delitem__(self, key):
        del self._d[key]

    def __contains__(self, key):
        return key in self._d

    def __len__(self):
        return len(self._d)

    def __iter__(self):
        return iter(self._d)

    def __eq__(self, other):
        if isinstance(other, dict):
            return self._d == other
        if isinstance(other, defaultdict) or isinstance(other, Counter):
            return self._d == other._d
        return False

    def __repr__(self):
        f = self.default_factory
        return "defaultdict(" + repr(f) + ", " + repr(self._d) + ")"

    def keys(self):
        return self._d.keys()

    def values(self):
        return self._d.values()

    def items(self):
        return self._d.items()

    def get(self, key, default=None):
        return self._d.get(key, default)

    def pop(self, key, *default):
        return self._d.pop(key, *default)

    def setdefault(self, key, default=None):
        return self._d.setdefault(key, default)

    def update(self, *args, **kwargs):
        self._d.update(*args, **kwargs)

    def clear(self):
        self._d.clear()

    def copy(self):
        return defaultdict(self.default_factory, self._d)


class Counter:
    def __init__(self, iterable=None, **kwds):
        self._d = {}
        self.update(iterable, **kwds)

    def __missing__(self, key):
        return 0

    def __getitem__(self, key):
        d = self._d
        if key in d:
            return d[key]
        return 0

    def __setitem__(self, key, value):
        self._d[key] = value

    def __delitem__(self, key):
        if key in self._d:
            del self._d[key]

    def __contains__(self, key):
        return key in self._d

    def __len__(self):
        return len(self._d)

    def __iter__(self):
        return iter(self._d)

    def __eq__(self, other):
        if isinstance(other, Counter):
            other = other._d
        if not isinstance(other, dict):
            return False
        for k, v in self._d.items():
            if v != other.get(k, 0):
                return False
        for k, v in other.items():
            if v != self._d.get(k, 0):
                return False
        return True

    def keys(self):
        return self._d.keys()

    def values(self):
        return self._d.values()

    def items(self):
        return self._d.items()

    def get(self, key, default=None):
        return self._d.get(key, default)

    def pop(self, key, *default):
        return self._d.pop(key, *default)

    def clear(self):
        self._d.clear()

    def total(self):
        return sum(self._d.values())

    def most_common(self, n=None):
        items = sorted(self._d.items(), key=lambda kv: kv[1], reverse=True)
        if n is None:
            return items
        return items[:max(n, 0)]

    def elements(self):
        out = []
        for k, v in self._d.items():
            for i in range(v):
                out.append(k)
        return iter(out)

    def update(self, iterable=None, **kwds):
        d = self._d
        if iterable is not None:
            if isinstance(iterable, dict) or isinstance(iterable, Counter):
                for k, v in iterable.items():
                    d[k] = d.get(k, 0) + v
            else:
                for k in iterable:
                    d[k] = d.get(k, 0) + 1
        for k, v in kwds.items():
            d[k] = d.get(k, 0) + v

    def subtract(self, iterable=None, **kwds):
        d = self._d
        if iterable is not None:
            if isinstance(iterable, dict) or isinstance(iterable, Counter):
                for k, v in iterable.items():
                    d[k] = d.get(k, 0) - v
            else:
                for k in iterable:
                    d[k] = d.get(k, 0) - 1
        for k, v in kwds.items():
            d[k] = d.get(k, 0) - v

    def copy(self):
        return Counter(self._d)

    def __add__(self, other):
        result = Counter()
        for k, v in self._d.items():
            n = v + other[k]
            if n > 0:
                result[k] = n
        for k, v in other.items():
            if k not in self._d and v > 0:
                result[k] = v
        return result

    def __sub__(self, other):
        result = Counter()
        for k, v in self._d.items():
            n = v - other[k]
            if n > 0:
                result[k] = n
        for k, v in other.items():
            if k not in self._d and v < 0:
                result[k] = 0 - v
        return result

    def __repr__(self):
        if not self._d:
            return "Counter()"
        items = sorted(self._d.items(), key=lambda kv: kv[1], reverse=True)
        return "Counter({" + ", ".join([repr(k) + ": " + repr(v) for k, v in items]) + "})"


class deque:
    def __init__(self, iterable=(), maxlen=None):
        if maxlen is not None and maxlen < 0:
            _raise("ValueError", "maxlen must be non-negative")
        self.maxlen = maxlen
        self._items = []
        for x in iterable:
            self.append(x)

    def append(self, x):
        self._items.append(x)
        if self.maxlen is not None and len(self._items) > self.maxlen:
            self._items.pop(0)

    def appendleft(self, x):
        self._items.insert(0, x)
        if self.maxlen is not None and len(self._items) > self.maxlen:
            self._items.pop()

    def extend(self, iterable):
        for x in list(iterable):
            self.append(x)

    def extendleft(self, iterable):
        for x in list(iterable):
            self.appendleft(x)

    def pop(self):
        if not self._items:
            _raise("IndexError", "pop from an empty deque")
        return self._items.pop()

    def popleft(self):
        if not self._items:
            _raise("IndexError", "pop from an empty deque")
        return self._items.pop(0)

    def clear(self):
        self._items = []

    def rotate(self, n=1):
        k = len(self._items)
        if k:
            n = n % k
            self._items = self._items[k - n:] + self._items[:k - n]

    def count(self, x):
        return self._items.count(x)

    def index(self, x):
        return self._items.index(x)

    def remove(self, x):
        self._items.remove(x)

    def reverse(self):
        self._items.reverse()

    def copy(self):
        return deque(self._items, self.maxlen)

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def __getitem__(self, i):
        if isinstance(i, slice):
            _raise("TypeError", "sequence index must be integer, not 'slice'")
        n = len(self._items)
        if i < -n or i >= n:
            _raise("IndexError", "deque index out of range")
        return self._items[i]

    def __setitem__(self, i, v):
        self._items[i] = v

    def __contains__(self, x):
        return x in self._items

    def __bool__(self):
        return len(self._items) != 0

    def __eq__(self, other):
        return isinstance(other, deque) and self._items == other._items

    def __repr__(self):
        if self.maxlen is None:
            return "deque(" + repr(self._items) + ")"
        return "deque(" + repr(self._items) + ", maxlen=" + str(self.maxlen) + ")"
)PY";

const char* const kFunctoolsSource = R"PY(# functools in the subset.
import _kiln_std

WRAPPER_ASSIGNMENTS = ("__module__", "__name__", "__qualname__", "__annotations__", "__doc__")
WRAPPER_UPDATES = ("__dict__",)


def reduce(function, iterable, *initial):
    it = iter(iterable)
    if len(initial) > 1:
        _kiln_std.raise_error("TypeError", "reduce expected at most 3 arguments, got " + str(2 + len(initial)))
    if initial:
        value = initial[0]
    else:
        items = list(it)
        if not items:
            _kiln_std.raise_error("TypeError", "reduce() of empty iterable with no initial value")
        value = items[0]
        it = iter(items[1:])
    for element in it:
        value = function(value, element)
    return value


class partial:
    def __init__(self, func, *args, **keywords):
        if not callable(func):
            _kiln_std.raise_error("TypeError", "the first argument must be callable")
        if isinstance(func, partial):
            args = func.args + args
            merged = dict(func.keywords)
            merged.update(keywords)
            keywords = merged
            func = func.func
        self.func = func
        self.args = args
        self.keywords = keywords

    def __call__(self, *args, **keywords):
        merged = dict(self.keywords)
        merged.update(keywords)
        return self.func(*self.args, *args, **merged)

    def __repr__(self):
        parts = [repr(self.func)]
        for a in self.args:
            parts.append(repr(a))
        for k, v in self.keywords.items():
            parts.append(k + "=" + repr(v))
        return "functools.partial(" + ", ".join(parts) + ")"


def update_wrapper(wrapper, wrapped, assigned=WRAPPER_ASSIGNMENTS, updated=WRAPPER_UPDATES):
    name = getattr(wrapped, "__name__", None)
    if name is not None and _kiln_std.is_function(wrapper):
        _kiln_std.set_function_name(wrapper, name, getattr(wrapped, "__qualname__", name))
    if _kiln_std.is_function(wrapper):
        wrapper.__wrapped__ = wrapped
        if "__annotations__" in assigned and hasattr(wrapped, "__annotations__"):
            wrapper.__annotations__ = wrapped.__annotations__
        doc = getattr(wrapped, "__doc__", None)
        if doc is not None:
            wrapper.__doc__ = doc
    return wrapper


def wraps(wrapped, assigned=WRAPPER_ASSIGNMENTS, updated=WRAPPER_UPDATES):
    def decorator(wrapper):
        return update_wrapper(wrapper, wrapped)
    return decorator


class _CacheInfo:
    def __init__(self, hits, misses, maxsize, currsize):
        self.hits = hits
        self.misses = misses
        self.maxsize = maxsize
        self.currsize = currsize

    def __repr__(self):
        return ("CacheInfo(hits=" + str(self.hits) + ", misses=" + str(self.misses) + ", maxsize=" +
                str(self.maxsize) + ", currsize=" + str(self.currsize) + ")")

    def __eq__(self, other):
        return isinstance(other, tuple) and (self.hits, self.misses, self.maxsize, self.currsize) == other


def _make_key(args, kwds):
    if not kwds:
        return args
    key = list(args)
    key.append("<kwd_mark>")
    for k, v in kwds.items():
        key.append(k)
        key.append(v)
    return tuple(key)


def _lru_wrapper(user_function, maxsize):
    cache = {}
    stats = [0, 0]

    def wrapper(*args, **kwds):
        key = _make_key(args, kwds)
        if key in cache:
            stats[0] += 1
            value = cache.pop(key)
            cache[key] = value
            return value
        stats[1] += 1
        value = user_function(*args, **kwds)
        if maxsize is None or maxsize > 0:
            cache[key] = value
            if maxsize is not None and len(cache) > maxsize:
                cache.pop(next(iter(cache)))
        return value

    def cache_info():
        return _CacheInfo(stats[0], stats[1], maxsize, len(cache))

    def cache_clear():
        cache.clear()
        stats[0] = 0
        stats[1] = 0

    update_wrapper(wrapper, user_function)
    wrapper.cache_info = cache_info
    wrapper.cache_clear = cache_clear
    return wrapper


def lru_cache(maxsize=128, typed=False):
    if callable(maxsize) and not isinstance(maxsize, bool):
        return _lru_wrapper(maxsize, 128)
    if maxsize is not None and not isinstance(maxsize, int):
        _kiln_std.raise_error("TypeError", "Expected first argument to be an integer, a callable, or None")
    if maxsize is not None and maxsize < 0:
        maxsize = 0

    def decorating_function(user_function):
        return _lru_wrapper(user_function, maxsize)

    return decorating_function


def cache(user_function):
    return _lru_wrapper(user_function, None)


def _gt_from_lt(self, other):
    r = type(self).__lt__(self, other)
    if r is NotImplemented:
        return r
    return not r and self != other


def _le_from_lt(self, other):
    r = type(self).__lt__(self, other)
    if r is NotImplemented:
        return r
    return r or self == other


def _ge_from_lt(self, other):
    r = type(self).__lt__(self, other)
    if r is NotImplemented:
        return r
    return not r


def _ge_from_le(self, other):
    r = type(self).__le__(self, other)
    if r is NotImplemented:
        return r
    return not r or self == other


def _lt_from_le(self, other):
    r = type(self).__le__(self, other)
    if r is NotImplemented:
        return r
    return r and self != other


def _gt_from_le(self, other):
    r = type(self).__le__(self, other)
    if r is NotImplemented:
        return r
    return not r


def _lt_from_gt(self, other):
    r = type(self).__gt__(self, other)
    if r is NotImplemented:
        return r
    return not r and self != other


def _ge_from_gt(self, other):
    r = type(self).__gt__(self, other)
    if r is NotImplemented:
        return r
    return r or self == other


def _le_from_gt(self, other):
    r = type(self).__gt__(self, other)
    if r is NotImplemented:
        return r
    return not r


def _le_from_ge(self, other):
    r = type(self).__ge__(self, other)
    if r is NotImplemented:
        return r
    return not r or self == other


def _gt_from_ge(self, other):
    r = type(self).__ge__(self, other)
    if r is NotImplemented:
        return r
    return r and self != other


def _lt_from_ge(self, other):
    r = type(self).__ge__(self, other)
    if r is NotImplemented:
        return r
    return not r


_convert = {
    "__lt__": [("__gt__", _gt_from_lt), ("__le__", _le_from_lt), ("__ge__", _ge_from_lt)],
    "__le__": [("__ge__", _ge_from_le), ("__lt__", _lt_from_le), ("__gt__", _gt_from_le)],
    "__gt__": [("__lt__", _lt_from_gt), ("__ge__", _ge_from_gt), ("__le__", _le_from_gt)],
    "__ge__": [("__le__", _le_from_ge), ("__gt__", _gt_from_ge), ("__lt__", _lt_from_ge)],
}


def cached_property(func):
    # A property whose getter keeps its first result in the instance's
    # __dict__ (CPython's is a non-data descriptor the dict then shadows; the
    # subset has no user descriptors, so the getter looks there first).
    name = func.__name__

    def getter(self):
        d = self.__dict__
        if name in d:
            return d[name]
        value = func(self)
        d[name] = value
        return value

    def setter(self, value):
        self.__dict__[name] = value

    def deleter(self):
        del self.__dict__[name]

    return property(getter, setter, deleter, getattr(func, "__doc__", None))


def total_ordering(cls):
    roots = []
    c = cls
    while c is not None and _kiln_std.is_user_class(c):
        for op in _convert:
            if op in _kiln_std.class_dict(c) and op not in roots:
                roots.append(op)
        c = _kiln_std.base_of(c)
    if not roots:
        raise ValueError("must define at least one ordering operation: < > <= >=")
    root = max(roots)
    cd = _kiln_std.class_dict(cls)
    for opname, opfunc in _convert[root]:
        if opname not in roots:
            cd[opname] = opfunc
    return cls


def cmp_to_key(mycmp):
    class K:
        def __init__(self, obj):
            self.obj = obj

        def __lt__(self, other):
            return mycmp(self.obj, other.obj) < 0

        def __gt__(self, other):
            return mycmp(self.obj, other.obj) > 0

        def __eq__(self, other):
            return mycmp(self.obj, other.obj) == 0

        def __le__(self, other):
            return mycmp(self.obj, other.obj) <= 0

        def __ge__(self, other):
            return mycmp(self.obj, other.obj) >= 0

    return K
)PY";

const char* const kCopySource = R"PY(# copy in the subset. deepcopy of a tensor clones it as PyTorch's
# Tensor.__deepcopy__ does (a Parameter stays a Parameter, requires_grad and
# .grad are kept); of an object (an nn.Module), copies its attributes.
import torch
import _kiln_std


class Error:
    pass


def _is_atomic(x):
    if x is None or isinstance(x, bool) or isinstance(x, int) or isinstance(x, float) or isinstance(x, str):
        return True
    if x is ... or _kiln_std.is_class(x) or _kiln_std.is_function(x) or isinstance(x, range):
        return True
    if _kiln_std.is_builtin(x) or _kiln_std.is_module(x) or _kiln_std.is_method(x):
        return True
    name = type(x).__name__
    return name == "dtype" or name == "device"


def _clone_tensor(x, memo):
    if not x.is_leaf:
        _kiln_std.raise_error("RuntimeError", "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  If you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
    y = x.detach().clone()
    if isinstance(x, torch.nn.Parameter):
        y = torch.nn.Parameter(y, x.requires_grad)
    elif x.requires_grad:
        y.requires_grad_(True)
    if x.grad is not None:
        y.grad = deepcopy(x.grad, memo)
    return y


def copy(x):
    if _is_atomic(x):
        return x
    if isinstance(x, list):
        return list(x)
    if isinstance(x, dict):
        return type(x)(x)
    if isinstance(x, tuple):
        return x
    if isinstance(x, torch.Tensor):
        return _clone_tensor(x, {})
    if _kiln_std.is_instance_object(x):
        if hasattr(x, "__copy__"):
            return x.__copy__()
        y = _kiln_std.new_instance(type(x))
        d = _kiln_std.instance_dict(y)
        for k, v in _kiln_std.instance_dict(x).items():
            d[k] = v
        return y
    return x


def deepcopy(x, memo=None):
    if memo is None:
        memo = {}
    if _is_atomic(x):
        return x
    key = _kiln_std.identity(x)
    if key in memo:
        return memo[key]
    if isinstance(x, list):
        y = []
        memo[key] = y
        for v in x:
            y.append(deepcopy(v, memo))
    elif isinstance(x, tuple):
        y = tuple([deepcopy(v, memo) for v in x])
    elif isinstance(x, dict):
        y = type(x)()
        memo[key] = y
        for k, v in x.items():
            y[deepcopy(k, memo)] = deepcopy(v, memo)
    elif isinstance(x, torch.Tensor):
        y = _clone_tensor(x, memo)
    elif _kiln_std.is_instance_object(x):
        if hasattr(x, "__deepcopy__"):
            y = x.__deepcopy__(memo)
        else:
            y = _kiln_std.new_instance(type(x))
            memo[key] = y
            d = _kiln_std.instance_dict(y)
            for k, v in _kiln_std.instance_dict(x).items():
                d[k] = deepcopy(v, memo)
    else:
        y = x
    memo[key] = y
    return y
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_collections, kCollectionsSource, "collections/__init__.py")
KILN_STDLIB_SOURCE(load_functools, kFunctoolsSource, "functools.py")
KILN_STDLIB_SOURCE(load_copy, kCopySource, "copy.py")

}  // namespace kiln::py
