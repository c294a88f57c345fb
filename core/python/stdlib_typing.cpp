// __future__, typing, abc and enum: Python source in the subset after
// CPython 3.12's modules. Annotations are evaluated as CPython 3.11's (texts
// under `from __future__ import annotations`, compiler_stmt.cpp); typing's
// objects subscript, print and answer get_origin/get_args as CPython's.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kFutureSource = R"PY(# __future__: every feature is already how the subset behaves.
class _Feature:
    def __init__(self, optional, mandatory, flag):
        self.optional = optional
        self.mandatory = mandatory
        self.compiler_flag = flag

    def getOptionalRelease(self):
        return self.optional

    def getMandatoryRelease(self):
        return self.mandatory

    def __repr__(self):
        return "_Feature" + repr((self.optional, self.mandatory, self.compiler_flag))


all_feature_names = ["nested_scopes", "generators", "division", "absolute_import", "with_statement",
                     "print_function", "unicode_literals", "barry_as_FLUFL", "generator_stop", "annotations"]
nested_scopes = _Feature((2, 1, 0, "beta", 1), (2, 2, 0, "alpha", 0), 16)
generators = _Feature((2, 2, 0, "alpha", 1), (2, 3, 0, "final", 0), 0)
division = _Feature((2, 2, 0, "alpha", 2), (3, 0, 0, "alpha", 0), 131072)
absolute_import = _Feature((2, 5, 0, "alpha", 1), (3, 0, 0, "alpha", 0), 262144)
with_statement = _Feature((2, 5, 0, "alpha", 1), (2, 6, 0, "alpha", 0), 524288)
print_function = _Feature((2, 6, 0, "alpha", 2), (3, 0, 0, "alpha", 0), 1048576)
unicode_literals = _Feature((2, 6, 0, "alpha", 2), (3, 0, 0, "alpha", 0), 2097152)
barry_as_FLUFL = _Feature((3, 1, 0, "alpha", 2), (4, 0, 0, "alpha", 0), 4194304)
generator_stop = _Feature((3, 5, 0, "beta", 1), (3, 7, 0, "alpha", 0), 8388608)
annotations = _Feature((3, 7, 0, "beta", 1), None, 16777216)
)PY";

const char* const kTypingSource = R"PY(# typing, after CPython 3.12's: objects that subscript and print as
# CPython's; none of them checks anything.
import _kiln_std

TYPE_CHECKING = False


def _type_repr(obj):
    if _kiln_std.is_class(obj):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return obj.__module__ + "." + obj.__qualname__
    if obj is ...:
        return "..."
    if obj is None or obj is type(None):
        return "None"
    if _kiln_std.is_function(obj):
        return obj.__name__
    if isinstance(obj, list):
        return "[" + ", ".join([_type_repr(a) for a in obj]) + "]"
    return repr(obj)


def _as_tuple(params):
    if isinstance(params, tuple):
        return params
    return (params,)


class _GenericAlias:
    def __init__(self, origin, args, name):
        self.__origin__ = origin
        self.__args__ = args
        self._name = name

    def __getitem__(self, params):
        return _GenericAlias(self.__origin__, _as_tuple(params), self._name)

    def __repr__(self):
        if self._name == "Optional":
            return "typing.Optional[" + _type_repr(self.__args__[0]) + "]"
        return "typing." + self._name + "[" + ", ".join([_type_repr(a) for a in self.__args__]) + "]"

    def __call__(self, *args, **kwargs):
        return self.__origin__(*args, **kwargs)

    def __instancecheck__(self, obj):
        if self._name == "Union" or self._name == "Optional":
            return isinstance(obj, tuple([type(None) if a is None else a for a in self.__args__]))
        _kiln_std.raise_error("TypeError", "Subscripted generics cannot be used with class and instance checks")

    def __subclasscheck__(self, cls):
        if self._name == "Union" or self._name == "Optional":
            return issubclass(cls, tuple([type(None) if a is None else a for a in self.__args__]))
        _kiln_std.raise_error("TypeError", "Subscripted generics cannot be used with class and instance checks")

    def __eq__(self, other):
        if not isinstance(other, _GenericAlias):
            return False
        return self.__origin__ is other.__origin__ and self.__args__ == other.__args__


class _SpecialGeneric:
    # List, Dict, ...: the unsubscripted alias of a builtin container.
    def __init__(self, origin, name):
        self.__origin__ = origin
        self._name = name

    def __getitem__(self, params):
        return _GenericAlias(self.__origin__, _as_tuple(params), self._name)

    def __repr__(self):
        return "typing." + self._name

    def __call__(self, *args, **kwargs):
        return self.__origin__(*args, **kwargs)

    def _check_origin(self):
        # The class isinstance answers with: the builtin, or CPython's
        # collections / collections.abc class behind the alias.
        if self.__origin__ is not None:
            return self.__origin__
        import collections
        import collections.abc
        names = {"DefaultDict": "defaultdict", "Counter": "Counter", "Deque": "deque"}
        if self._name in names:
            return getattr(collections, names[self._name])
        if self._name == "AbstractSet":
            return collections.abc.Set
        if self._name == "ContextManager":
            _kiln_std.refuse("isinstance() with typing.ContextManager (contextlib has no AbstractContextManager in the subset)")
        return getattr(collections.abc, self._name)

    def __instancecheck__(self, obj):
        return isinstance(obj, self._check_origin())

    def __subclasscheck__(self, cls):
        return issubclass(cls, self._check_origin())


class _SpecialForm:
    def __init__(self, name):
        self._name = name

    def __getitem__(self, params):
        name = self._name
        args = _as_tuple(params)
        if name == "Optional":
            return Union[args[0], None]
        if name == "Union":
            flat = []
            for a in args:
                if a is None:
                    a = type(None)
                if isinstance(a, _GenericAlias) and a._name == "Union":
                    for b in a.__args__:
                        if b not in flat:
                            flat.append(b)
                elif a not in flat:
                    flat.append(a)
            if len(flat) == 1:
                return flat[0]
            if len(flat) == 2 and flat[1] is type(None):
                alias = _GenericAlias(Union, tuple(flat), "Optional")
                return alias
            return _GenericAlias(Union, tuple(flat), "Union")
        return _GenericAlias(self, args, name)

    def __repr__(self):
        return "typing." + self._name

    def __call__(self, *args, **kwargs):
        _kiln_std.raise_error("TypeError", "Cannot instantiate typing." + self._name)


Any = _SpecialForm("Any")
Union = _SpecialForm("Union")
Optional = _SpecialForm("Optional")
ClassVar = _SpecialForm("ClassVar")
Final = _SpecialForm("Final")
Literal = _SpecialForm("Literal")
Annotated = _SpecialForm("Annotated")
NoReturn = _SpecialForm("NoReturn")
Never = _SpecialForm("Never")
Self = _SpecialForm("Self")
TypeAlias = _SpecialForm("TypeAlias")
Concatenate = _SpecialForm("Concatenate")
TypeGuard = _SpecialForm("TypeGuard")
Required = _SpecialForm("Required")
NotRequired = _SpecialForm("NotRequired")
Unpack = _SpecialForm("Unpack")
LiteralString = _SpecialForm("LiteralString")
Callable = _SpecialGeneric(None, "Callable")
List = _SpecialGeneric(list, "List")
Dict = _SpecialGeneric(dict, "Dict")
Tuple = _SpecialGeneric(tuple, "Tuple")
Type = _SpecialGeneric(type, "Type")
DefaultDict = _SpecialGeneric(None, "DefaultDict")
OrderedDict = _SpecialGeneric(dict, "OrderedDict")
Counter = _SpecialGeneric(None, "Counter")
Deque = _SpecialGeneric(None, "Deque")
Iterable = _SpecialGeneric(None, "Iterable")
Iterator = _SpecialGeneric(None, "Iterator")
Generator = _SpecialGeneric(None, "Generator")
Sequence = _SpecialGeneric(None, "Sequence")
MutableSequence = _SpecialGeneric(None, "MutableSequence")
Mapping = _SpecialGeneric(None, "Mapping")
MutableMapping = _SpecialGeneric(None, "MutableMapping")
Collection = _SpecialGeneric(None, "Collection")
Container = _SpecialGeneric(None, "Container")
Hashable = _SpecialGeneric(None, "Hashable")
Sized = _SpecialGeneric(None, "Sized")
Reversible = _SpecialGeneric(None, "Reversible")
AbstractSet = _SpecialGeneric(None, "AbstractSet")
Set = _SpecialGeneric(set, "Set")
FrozenSet = _SpecialGeneric(frozenset, "FrozenSet")
Awaitable = _SpecialGeneric(None, "Awaitable")
Coroutine = _SpecialGeneric(None, "Coroutine")
AsyncIterator = _SpecialGeneric(None, "AsyncIterator")
AsyncIterable = _SpecialGeneric(None, "AsyncIterable")
ContextManager = _SpecialGeneric(None, "ContextManager")
Text = str


class TypeVar:
    def __init__(self, name, *constraints, bound=None, covariant=False, contravariant=False):
        self.__name__ = name
        self.__constraints__ = constraints
        self.__bound__ = bound
        self.__covariant__ = covariant
        self.__contravariant__ = contravariant

    def __repr__(self):
        if self.__covariant__:
            return "+" + self.__name__
        if self.__contravariant__:
            return "-" + self.__name__
        return "~" + self.__name__


class _ParamSpecPart:
    # P.args and P.kwargs, the annotations of a ParamSpec's *args and **kwargs.
    def __init__(self, origin, part):
        self.__origin__ = origin
        self._part = part

    def __repr__(self):
        return self.__origin__.__name__ + "." + self._part


class ParamSpec(TypeVar):
    def __init__(self, name, *, bound=None, covariant=False, contravariant=False):
        TypeVar.__init__(self, name, bound=bound, covariant=covariant, contravariant=contravariant)
        self.args = _ParamSpecPart(self, "args")
        self.kwargs = _ParamSpecPart(self, "kwargs")


class TypeVarTuple:
    def __init__(self, name):
        self.__name__ = name

    def __repr__(self):
        return self.__name__


AnyStr = TypeVar("AnyStr", str)


class Generic:
    # `class C(Generic[T])`: the subscript is the class itself.
    def __class_getitem__(cls, params):
        return cls


class Protocol(Generic):
    pass


class NamedTuple:
    # `class P(NamedTuple): x: int; y: int = 0`: fields from the class body's
    # annotations, collected when the subclass is made.
    def __new__(typename, fields=None, **kwargs):
        # NamedTuple("P", [("x", int)]): a class call reaches __new__ with the
        # arguments only (only NamedTuple's own dict has it, not a subclass's).
        from collections import namedtuple
        names = [f[0] for f in fields] if fields is not None else list(kwargs.keys())
        return namedtuple(typename, names)

    def __init_subclass__(cls):
        cd = _kiln_std.class_dict(cls)
        ann = cd.get("__annotations__", {})
        fields = tuple(ann.keys())
        defaults = {}
        for name in fields:
            if name in cd:
                defaults[name] = cd[name]
        cd["_fields"] = fields
        cd["_field_defaults"] = defaults
        cd["__init__"] = _tuple_init
        for name in ["__getitem__", "__iter__", "__len__", "__repr__", "__eq__", "_asdict", "_replace"]:
            cd[name] = _TUPLE_METHODS[name]


def _tuple_init(self, *args, **kwargs):
    cls = type(self)
    fields = cls._fields
    defaults = cls._field_defaults
    name = cls.__name__
    if len(args) > len(fields):
        n = len(fields) + 1
        _kiln_std.raise_error("TypeError", name + ".__new__() takes " + str(n) + " positional argument" +
                              ("" if n == 1 else "s") + " but " + str(len(args) + 1) + " were given")
    values = {}
    for i in range(len(args)):
        values[fields[i]] = args[i]
    for k, v in kwargs.items():
        if k not in fields:
            _kiln_std.raise_error("TypeError", name + ".__new__() got an unexpected keyword argument '" + k + "'")
        if k in values:
            _kiln_std.raise_error("TypeError", name + ".__new__() got multiple values for argument '" + k + "'")
        values[k] = v
    missing = []
    for f in fields:
        if f not in values:
            if f in defaults:
                values[f] = defaults[f]
            else:
                missing.append(f)
    if missing:
        _missing_error(name + ".__new__()", missing)
    d = _kiln_std.instance_dict(self)
    for f in fields:
        d[f] = values[f]


def _missing_error(where, missing):
    quoted = ["'" + m + "'" for m in missing]
    if len(quoted) == 1:
        text = quoted[0]
    elif len(quoted) == 2:
        text = quoted[0] + " and " + quoted[1]
    else:
        text = ", ".join(quoted[:-1]) + ", and " + quoted[-1]
    n = len(missing)
    _kiln_std.raise_error("TypeError", where + " missing " + str(n) + " required positional argument" +
                          ("" if n == 1 else "s") + ": " + text)


def _tuple_values(self):
    return tuple([getattr(self, f) for f in type(self)._fields])


def _tuple_getitem(self, i):
    return _tuple_values(self)[i]


def _tuple_iter(self):
    return iter(_tuple_values(self))


def _tuple_len(self):
    return len(type(self)._fields)


def _tuple_repr(self):
    return type(self).__name__ + "(" + ", ".join([f + "=" + repr(getattr(self, f)) for f in type(self)._fields]) + ")"


def _tuple_eq(self, other):
    if isinstance(other, tuple):
        return _tuple_values(self) == other
    if _kiln_std.is_instance_object(other) and hasattr(other, "_fields") and hasattr(other, "_asdict"):
        return _tuple_values(self) == _tuple_values(other)
    return False


def _tuple_asdict(self):
    return {f: getattr(self, f) for f in type(self)._fields}


def _tuple_replace(self, **kwargs):
    values = _tuple_asdict(self)
    for k, v in kwargs.items():
        if k not in values:
            _kiln_std.raise_error("ValueError", "Got unexpected field names: ['" + k + "']")
        values[k] = v
    return type(self)(**values)


_TUPLE_METHODS = {"__getitem__": _tuple_getitem, "__iter__": _tuple_iter, "__len__": _tuple_len,
                  "__repr__": _tuple_repr, "__eq__": _tuple_eq, "_asdict": _tuple_asdict, "_replace": _tuple_replace}


class TypedDict:
    # `class Movie(TypedDict, total=False): name: str`, or TypedDict("Movie",
    # {"name": str}): a class whose calls make plain dicts, with CPython's
    # __required_keys__, __optional_keys__ and __total__.
    def __new__(typename, fields=None, total=True, **kwargs):
        # The functional form (a class call reaches __new__ with the arguments
        # only; only TypedDict's own dict has this one, not a subclass's).
        if fields is None:
            fields = kwargs
        cls = type(typename, (TypedDict,), {"__annotations__": dict(fields)})
        _typeddict_setup(cls, total)
        return cls

    def __init_subclass__(cls, total=True):
        _typeddict_setup(cls, total)


def _typeddict_setup(cls, total):
    cd = _kiln_std.class_dict(cls)
    own = cd.get("__annotations__", {})
    annotations = {}
    required = []
    optional = []
    base = _kiln_std.base_of(cls)
    if base is not None and base is not TypedDict:
        annotations.update(base.__annotations__)
        required.extend(base.__required_keys__)
        optional.extend(base.__optional_keys__)
    for name, tp in own.items():
        origin = tp.__origin__ if isinstance(tp, _GenericAlias) else None
        if origin is Required:
            is_required = True
        elif origin is NotRequired:
            is_required = False
        else:
            is_required = total
        annotations[name] = tp
        if is_required:
            if name in optional:
                optional.remove(name)
            if name not in required:
                required.append(name)
        else:
            if name in required:
                required.remove(name)
            if name not in optional:
                optional.append(name)
    cd["__annotations__"] = annotations
    cd["__required_keys__"] = frozenset(required)
    cd["__optional_keys__"] = frozenset(optional)
    cd["__total__"] = total
    cd["__new__"] = _typeddict_new


def _typeddict_new(*args, **kwargs):
    return dict(*args, **kwargs)


def is_typeddict(tp):
    return _kiln_std.is_class(tp) and tp is not TypedDict and issubclass(tp, TypedDict)


def cast(typ, val):
    return val


def overload(func):
    return func


def final(f):
    return f


def no_type_check(f):
    return f


def runtime_checkable(cls):
    return cls


def _split_top(text, sep):
    # Splits at `sep` outside brackets.
    parts = []
    depth = 0
    cur = ""
    for c in text:
        if c == "[" or c == "(":
            depth += 1
        elif c == "]" or c == ")":
            depth -= 1
        if c == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    parts.append(cur.strip())
    return parts


def _eval_text(text, globalns):
    # A forward reference ("Node", "List[int]", "int | None", "torch.Tensor"),
    # evaluated without eval(): names, attributes, subscripts, `|`.
    text = text.strip()
    if "|" in text and len(_split_top(text, "|")) > 1:
        parts = [_eval_text(p, globalns) for p in _split_top(text, "|")]
        return Union[tuple(parts)]
    if text == "None":
        return None
    if text == "...":
        return ...
    if (text.startswith("'") and text.endswith("'")) or (text.startswith('"') and text.endswith('"')):
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        return [_eval_text(p, globalns) for p in _split_top(text[1:-1], ",") if p]
    if text.endswith("]") and "[" in text:
        i = text.index("[")
        base = _eval_text(text[:i], globalns)
        args = [_eval_text(p, globalns) for p in _split_top(text[i + 1:-1], ",") if p]
        return base[args[0] if len(args) == 1 else tuple(args)]
    if text.isdigit():
        return int(text)
    names = text.split(".")
    if names[0] in globalns:
        value = globalns[names[0]]
    elif names[0] in globals():
        value = globals()[names[0]]
    else:
        value = _kiln_std.builtin(names[0])
        if value is None:
            _kiln_std.raise_error("NameError", "name '" + names[0] + "' is not defined")
    for n in names[1:]:
        value = getattr(value, n)
    return value


def _resolve(tp, globalns, include_extras):
    if tp is None:
        return type(None)
    if isinstance(tp, str):
        tp = _resolve(_eval_text(tp, globalns), globalns, include_extras)
    if not include_extras and isinstance(tp, _GenericAlias) and tp.__origin__ in (Annotated, Required, NotRequired):
        return _resolve(tp.__args__[0], globalns, include_extras)
    return tp


def _globals_of(obj):
    if _kiln_std.is_function(obj):
        return obj.__globals__
    if _kiln_std.is_method(obj):
        return obj.__func__.__globals__
    if _kiln_std.is_class(obj):
        for v in _kiln_std.class_dict(obj).values():
            if _kiln_std.is_function(v):
                return v.__globals__
    return {}


def get_type_hints(obj, globalns=None, localns=None, include_extras=False):
    if globalns is None:
        globalns = _globals_of(obj)
    if localns is not None:
        merged = dict(globalns)
        merged.update(localns)
        globalns = merged
    hints = {}
    if _kiln_std.is_class(obj):
        chain = []
        c = obj
        while c is not None:
            chain.append(c)
            c = _kiln_std.base_of(c)
        for c in reversed(chain):
            for name, tp in _kiln_std.class_dict(c).get("__annotations__", {}).items():
                hints[name] = _resolve(tp, globalns, include_extras)
        return hints
    for name, tp in getattr(obj, "__annotations__", {}).items():
        hints[name] = _resolve(tp, globalns, include_extras)
    return hints


def NewType(name, tp):
    def new_type(x):
        return x
    _kiln_std.set_function_name(new_type, name)
    return new_type


def get_origin(tp):
    import types
    if isinstance(tp, _GenericAlias):
        if tp.__origin__ is None:
            return _SpecialGeneric(None, tp._name)._check_origin()
        if tp._name == "Optional":
            return Union
        return tp.__origin__
    if isinstance(tp, _SpecialGeneric):
        return tp._check_origin()
    if isinstance(tp, types.GenericAlias):
        return tp.__origin__
    if isinstance(tp, types.UnionType):
        return types.UnionType
    if isinstance(tp, _ParamSpecPart):
        return tp.__origin__
    if tp is Generic:
        return Generic
    return None


def get_args(tp):
    import types
    if isinstance(tp, _GenericAlias) or isinstance(tp, types.GenericAlias) or isinstance(tp, types.UnionType):
        return tp.__args__
    return ()
)PY";

const char* const kAbcSource = R"PY(# abc: ABC is a plain base class and abstractmethod marks nothing (the
# subset has no metaclasses to refuse instantiating an abstract class).
class ABCMeta:
    pass


class ABC:
    pass


def abstractmethod(funcobj):
    return funcobj


def abstractproperty(funcobj):
    return funcobj


def abstractclassmethod(funcobj):
    return funcobj


def abstractstaticmethod(funcobj):
    return funcobj
)PY";

const char* const kEnumSource = R"PY(# enum, after CPython 3.12's: a subclass of Enum turns its plain class
# attributes into members when it is made (__init_subclass__: the subset has
# no metaclasses). Members print, compare and look up by value as CPython's.
import _kiln_std

_auto_null = object()


class auto:
    def __init__(self, value=_auto_null):
        self.value = value

    def __repr__(self):
        return "auto(" + repr(self.value) + ")"


def _is_member_value(name, value):
    if name.startswith("_"):
        return False
    if _kiln_std.is_function(value) or _kiln_std.is_class(value):
        return False
    # Descriptors (properties, classmethods, staticmethods) are not members, as in CPython.
    if isinstance(value, (property, classmethod, staticmethod)):
        return False
    if _kiln_std.is_instance_object(value) and (hasattr(type(value), "__get__") or hasattr(type(value), "__set__")):
        return False
    return True


def _make_lookup(cls):
    # Color(1): the member whose value is 1 (a class call reaches __new__ with
    # the arguments only).
    def __new__(value):
        for m in cls._member_map_.values():
            if m._value_ == value:
                return m
        if _kiln_std.is_instance_object(value) and type(value) is cls:
            return value
        _kiln_std.raise_error("ValueError", repr(value) + " is not a valid " + cls.__qualname__)
    return __new__


class Enum:
    def __init_subclass__(cls):
        cd = _kiln_std.class_dict(cls)
        members = {}
        last = 0
        for name, value in list(cd.items()):
            if not _is_member_value(name, value):
                continue
            if isinstance(value, auto):
                if value.value is _auto_null:
                    value = cls._generate_next_value_(name, 1, len(members), last)
                else:
                    value = value.value
            alias = None
            for m in members.values():
                if m._value_ == value:
                    alias = m
            if alias is not None:
                cd[name] = alias
                continue
            member = _kiln_std.new_instance(cls)
            d = _kiln_std.instance_dict(member)
            d["_name_"] = name
            d["_value_"] = value
            d["name"] = name
            d["value"] = value
            members[name] = member
            cd[name] = member
            if isinstance(value, int):
                last = value
        cd["_member_map_"] = members
        cd["_member_names_"] = list(members.keys())
        cd["__members__"] = members
        cd["__new__"] = _make_lookup(cls)

    def __class_getitem__(cls, name):
        return cls._member_map_[name]

    def __class_iter__(cls):
        return iter(list(cls._member_map_.values()))

    def __class_len__(cls):
        return len(cls._member_map_)

    def _generate_next_value_(name, start, count, last_values):
        if count == 0:
            return start
        return last_values + 1

    def __repr__(self):
        return "<" + type(self).__qualname__ + "." + self._name_ + ": " + repr(self._value_) + ">"

    def __str__(self):
        return type(self).__qualname__ + "." + self._name_

    def __format__(self, spec):
        return format(str(self), spec)


class IntEnum(Enum):
    def __str__(self):
        return str(self._value_)

    def __format__(self, spec):
        return format(self._value_, spec)

    def __eq__(self, other):
        if isinstance(other, int):
            return self._value_ == other
        return self is other

    def __int__(self):
        return self._value_


class StrEnum(Enum):
    def __str__(self):
        return self._value_

    def __format__(self, spec):
        return format(self._value_, spec)

    def __eq__(self, other):
        if isinstance(other, str):
            return self._value_ == other
        return self is other


def unique(enumeration):
    return enumeration
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_future, kFutureSource, "__future__.py")
KILN_STDLIB_SOURCE(load_typing, kTypingSource, "typing.py")
KILN_STDLIB_SOURCE(load_abc, kAbcSource, "abc.py")
KILN_STDLIB_SOURCE(load_enum, kEnumSource, "enum.py")

}  // namespace kiln::py
