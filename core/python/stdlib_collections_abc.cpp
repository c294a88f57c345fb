// collections.abc: CPython's abstract base classes as plain classes. The
// subset has no metaclasses, so where CPython's ABCMeta answers isinstance and
// issubclass from registrations and __subclasshook__, each ABC here answers
// through __class_instancecheck__ / __class_subclasscheck__ (VM::is_instance):
// the builtins CPython registers, classes registered with .register(), and,
// for the one-method ABCs, any class that defines the methods. The mixin
// methods (Sequence.index, Mapping.get, MutableMapping.update, ...) are
// CPython's, so user classes that subclass an ABC behave as there.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kCollectionsAbcSource = R"PY(import _kiln_std


def _defines(cls, names):
    for name in names:
        if not hasattr(cls, name) or getattr(cls, name) is None:
            return False
    return True


def _builtin_iterator(obj):
    # Builtin iterators (iter(list), zip, map, enumerate, generators) have no
    # class of their own in the subset: an iterator is its own iterator.
    if _kiln_std.is_instance_object(obj):
        return False
    try:
        return iter(obj) is obj
    except TypeError:
        return False


def _collections_types(names):
    import collections
    return tuple([getattr(collections, n) for n in names])


def _subclass_match(abc, sub):
    for b in abc._builtin_types():
        if sub is b or issubclass(sub, b):
            return True
    for r in _kiln_std.class_dict(abc).get("_registered", []):
        if sub is r or issubclass(sub, r):
            return True
    methods = abc._methods
    return len(methods) > 0 and _kiln_std.is_user_class(sub) and _defines(sub, methods)


class _Alias:
    # Sequence[int]: a parameterized generic, as types.GenericAlias prints.
    def __init__(self, origin, args):
        self.__origin__ = origin
        self.__args__ = args

    def __repr__(self):
        def name(a):
            if _kiln_std.is_class(a):
                return a.__name__ if a.__module__ == "builtins" else a.__module__ + "." + a.__qualname__
            return repr(a)
        return "collections.abc." + self.__origin__.__name__ + "[" + ", ".join([name(a) for a in self.__args__]) + "]"

    def __instancecheck__(self, obj):
        _kiln_std.raise_error("TypeError", "isinstance() argument 2 cannot be a parameterized generic")

    def __subclasscheck__(self, cls):
        _kiln_std.raise_error("TypeError", "issubclass() argument 2 cannot be a parameterized generic")


class _ABC:
    _methods = ()
    _iterators = False

    def _builtin_types():
        return ()

    def __class_instancecheck__(cls, obj):
        if _subclass_match(cls, type(obj)):
            return True
        return cls._iterators and _builtin_iterator(obj)

    def __class_subclasscheck__(cls, sub):
        return _subclass_match(cls, sub)

    def __class_getitem__(cls, params):
        return _Alias(cls, params if isinstance(params, tuple) else (params,))

    @classmethod
    def register(cls, subclass):
        d = _kiln_std.class_dict(cls)
        if "_registered" not in d:
            cls._registered = []
        cls._registered.append(subclass)
        return subclass


class Hashable(_ABC):
    def _builtin_types():
        return (int, float, bool, str, tuple, frozenset, range, type(None), type)

    def __class_subclasscheck__(cls, sub):
        # A class is hashable unless it sets __hash__ = None (as defining
        # __eq__ alone does in CPython).
        if _kiln_std.is_user_class(sub):
            return not hasattr(sub, "__hash__") or sub.__hash__ is not None
        return _subclass_match(cls, sub)

    def __class_instancecheck__(cls, obj):
        return Hashable.__class_subclasscheck__(cls, type(obj))


class Iterable(_ABC):
    _methods = ("__iter__",)
    _iterators = True

    def _builtin_types():
        return (list, tuple, str, dict, set, frozenset, range) + _collections_types(["deque", "defaultdict", "Counter"])


class Iterator(Iterable):
    _methods = ("__iter__", "__next__")

    def _builtin_types():
        return ()

    def __iter__(self):
        return self


class Generator(Iterator):
    _methods = ("__iter__", "__next__", "send", "throw", "close")


class Reversible(Iterable):
    _methods = ("__reversed__", "__iter__")
    _iterators = False

    def _builtin_types():
        return (list, tuple, str, dict, range) + _collections_types(["deque", "defaultdict", "Counter"])


class Sized(_ABC):
    _methods = ("__len__",)

    def _builtin_types():
        return (list, tuple, str, dict, set, frozenset, range) + _collections_types(["deque", "defaultdict", "Counter"])


class Container(_ABC):
    _methods = ("__contains__",)

    def _builtin_types():
        return (list, tuple, str, dict, set, frozenset, range) + _collections_types(["deque", "defaultdict", "Counter"])


# CPython's Collection derives from Sized, Iterable and Container; the subset
# has single inheritance, and those three answer for a Collection's
# subclasses structurally (they define the three methods).
class Collection(_ABC):
    _methods = ("__len__", "__iter__", "__contains__")
    _iterators = False


class Callable(_ABC):
    _methods = ("__call__",)

    def __class_instancecheck__(cls, obj):
        return callable(obj)


class Sequence(Collection):
    _methods = ()

    def _builtin_types():
        return (list, tuple, str, range) + _collections_types(["deque"])

    def __contains__(self, value):
        for v in self:
            if v is value or v == value:
                return True
        return False

    def __iter__(self):
        i = 0
        try:
            while True:
                v = self[i]
                yield v
                i += 1
        except IndexError:
            return

    def __reversed__(self):
        for i in reversed(range(len(self))):
            yield self[i]

    def index(self, value, start=0, stop=None):
        if start is not None and start < 0:
            start = max(len(self) + start, 0)
        if stop is not None and stop < 0:
            stop += len(self)
        i = start
        while stop is None or i < stop:
            try:
                v = self[i]
            except IndexError:
                break
            if v is value or v == value:
                return i
            i += 1
        raise ValueError

    def count(self, value):
        return sum(1 for v in self if v is value or v == value)


class MutableSequence(Sequence):
    def _builtin_types():
        return (list,) + _collections_types(["deque"])

    def append(self, value):
        self.insert(len(self), value)

    def clear(self):
        try:
            while True:
                self.pop()
        except IndexError:
            pass

    def reverse(self):
        n = len(self)
        for i in range(n // 2):
            self[i], self[n - i - 1] = self[n - i - 1], self[i]

    def extend(self, values):
        if values is self:
            values = list(values)
        for v in values:
            self.append(v)

    def pop(self, index=-1):
        v = self[index]
        del self[index]
        return v

    def remove(self, value):
        del self[self.index(value)]

    def __iadd__(self, values):
        self.extend(values)
        return self


class Set(Collection):
    _methods = ()

    def _builtin_types():
        return (set, frozenset)


class MutableSet(Set):
    def _builtin_types():
        return (set,)


class Mapping(Collection):
    _methods = ()

    def _builtin_types():
        return (dict,) + _collections_types(["defaultdict", "Counter"])

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key):
        try:
            self[key]
        except KeyError:
            return False
        else:
            return True

    def keys(self):
        return [k for k in self]

    def items(self):
        return [(k, self[k]) for k in self]

    def values(self):
        return [self[k] for k in self]

    def __eq__(self, other):
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.items()) == dict(other.items())


class MutableMapping(Mapping):
    def pop(self, key, *default):
        try:
            value = self[key]
        except KeyError:
            if default:
                return default[0]
            raise
        else:
            del self[key]
            return value

    def popitem(self):
        try:
            key = next(iter(self))
        except StopIteration:
            raise KeyError from None
        value = self[key]
        del self[key]
        return key, value

    def clear(self):
        try:
            while True:
                self.popitem()
        except KeyError:
            pass

    def update(self, other=(), **kwds):
        if isinstance(other, Mapping):
            for key in other:
                self[key] = other[key]
        elif hasattr(other, "keys"):
            for key in other.keys():
                self[key] = other[key]
        else:
            for key, value in other:
                self[key] = value
        for key, value in kwds.items():
            self[key] = value

    def setdefault(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            self[key] = default
        return default


class MappingView(Sized):
    _methods = ()

    def _builtin_types():
        return ()


class KeysView(MappingView):
    pass


class ValuesView(MappingView):
    pass


class ItemsView(MappingView):
    pass


class Awaitable(_ABC):
    pass


class Coroutine(Awaitable):
    pass


class AsyncIterable(_ABC):
    pass


class AsyncIterator(AsyncIterable):
    pass


class AsyncGenerator(AsyncIterator):
    pass
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_collections_abc, kCollectionsAbcSource, "collections/abc.py")

}  // namespace kiln::py
