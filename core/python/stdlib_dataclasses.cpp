// inspect and dataclasses: Python source in the subset after CPython 3.12's.
// Both read what the interpreter knows of functions and classes through
// _kiln_std (a function's parameters, a class's own dict and annotations).
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kInspectSource = R"PY(# inspect.signature for Python functions, classes and bound methods.
import _kiln_std


class _empty:
    pass


class _void:
    pass


def formatannotation(annotation, base_module=None):
    if getattr(annotation, "__module__", None) == "typing":
        return repr(annotation).replace("typing.", "")
    if _kiln_std.is_class(annotation):
        if annotation.__module__ in ("builtins", base_module):
            return annotation.__qualname__
        return annotation.__module__ + "." + annotation.__qualname__
    return repr(annotation)


class _ParameterKind:
    def __init__(self, name, value, description):
        self.name = name
        self.value = value
        self.description = description

    def __repr__(self):
        return "<_ParameterKind." + self.name + ": " + str(self.value) + ">"

    def __str__(self):
        return self.name


_KINDS = {
    "POSITIONAL_ONLY": _ParameterKind("POSITIONAL_ONLY", 0, "positional-only"),
    "POSITIONAL_OR_KEYWORD": _ParameterKind("POSITIONAL_OR_KEYWORD", 1, "positional or keyword"),
    "VAR_POSITIONAL": _ParameterKind("VAR_POSITIONAL", 2, "variadic positional"),
    "KEYWORD_ONLY": _ParameterKind("KEYWORD_ONLY", 3, "keyword-only"),
    "VAR_KEYWORD": _ParameterKind("VAR_KEYWORD", 4, "variadic keyword"),
}


class Parameter:
    POSITIONAL_ONLY = _KINDS["POSITIONAL_ONLY"]
    POSITIONAL_OR_KEYWORD = _KINDS["POSITIONAL_OR_KEYWORD"]
    VAR_POSITIONAL = _KINDS["VAR_POSITIONAL"]
    KEYWORD_ONLY = _KINDS["KEYWORD_ONLY"]
    VAR_KEYWORD = _KINDS["VAR_KEYWORD"]
    empty = _empty

    def __init__(self, name, kind, *, default=_empty, annotation=_empty):
        self.name = name
        self.kind = kind
        self.default = default
        self.annotation = annotation

    def __str__(self):
        text = self.name
        if self.kind is Parameter.VAR_POSITIONAL:
            text = "*" + text
        elif self.kind is Parameter.VAR_KEYWORD:
            text = "**" + text
        if self.annotation is not _empty:
            text += ": " + formatannotation(self.annotation)
        if self.default is not _empty:
            text += (" = " if self.annotation is not _empty else "=") + repr(self.default)
        return text

    def __repr__(self):
        return "<Parameter \"" + str(self) + "\">"

    def __eq__(self, other):
        return (isinstance(other, Parameter) and self.name == other.name and self.kind is other.kind and
                self.default == other.default and self.annotation == other.annotation)

    def replace(self, *, name=None, kind=None, default=_void, annotation=_void):
        return Parameter(self.name if name is None else name, self.kind if kind is None else kind,
                         default=self.default if default is _void else default,
                         annotation=self.annotation if annotation is _void else annotation)


class Signature:
    empty = _empty

    def __init__(self, parameters=None, *, return_annotation=_empty):
        self.parameters = {}
        if parameters is not None:
            for p in parameters:
                self.parameters[p.name] = p
        self.return_annotation = return_annotation

    def __str__(self):
        parts = []
        star = False
        for p in self.parameters.values():
            if p.kind is Parameter.VAR_POSITIONAL:
                star = True
            elif p.kind is Parameter.KEYWORD_ONLY and not star:
                parts.append("*")
                star = True
            parts.append(str(p))
        text = "(" + ", ".join(parts) + ")"
        if self.return_annotation is not _empty:
            text += " -> " + formatannotation(self.return_annotation)
        return text

    def __repr__(self):
        return "<Signature " + str(self) + ">"

    def replace(self, *, parameters=None, return_annotation=_void):
        return Signature(parameters if parameters is not None else list(self.parameters.values()),
                         return_annotation=self.return_annotation if return_annotation is _void else return_annotation)

    def __eq__(self, other):
        return (isinstance(other, Signature) and self.return_annotation == other.return_annotation and
                list(self.parameters.values()) == list(other.parameters.values()))

    def bind(self, *args, **kwargs):
        _kiln_std.refuse("inspect.Signature.bind is outside Kiln's subset")


def _function_signature(f, skip_first):
    names, kinds, defaults = _kiln_std.parameters(f)
    annotations = f.__annotations__
    params = []
    for i in range(len(names)):
        if skip_first and i == 0 and kinds[0] == "POSITIONAL_OR_KEYWORD":
            continue
        name = names[i]
        default = defaults[name] if name in defaults else _empty
        params.append(Parameter(name, _KINDS[kinds[i]], default=default, annotation=annotations.get(name, _empty)))
    return Signature(params, return_annotation=annotations.get("return", _empty))


def unwrap(func, *, stop=None):
    seen = []
    while hasattr(func, "__wrapped__") and (stop is None or not stop(func)):
        for s in seen:
            if s is func:
                _kiln_std.raise_error("ValueError", "wrapper loop when unwrapping " + repr(seen[0]))
        seen.append(func)
        func = func.__wrapped__
    return func


def signature(obj, *, follow_wrapped=True):
    if follow_wrapped and (_kiln_std.is_function(obj) or ismethod(obj)):
        inner = unwrap(obj.__func__ if ismethod(obj) else obj)
        if ismethod(obj) and inner is not obj.__func__:
            # A bound wrapper: the wrapped function's signature less its first parameter.
            sig = signature(inner)
            return sig.replace(parameters=list(sig.parameters.values())[1:])
        obj = inner if not ismethod(obj) else obj
    if _kiln_std.is_function(obj):
        return _function_signature(obj, False)
    if ismethod(obj):
        return _function_signature(obj.__func__, True)
    if _kiln_std.is_class(obj):
        init = getattr(obj, "__init__", None)
        if init is None or not _kiln_std.is_function(init):
            return Signature([])
        return _function_signature(init, True)
    if _kiln_std.is_instance_object(obj) and hasattr(obj, "__call__"):
        return signature(obj.__call__)
    _kiln_std.raise_error("ValueError", "no signature found for " + repr(obj))


def isclass(obj):
    return _kiln_std.is_class(obj)


def isfunction(obj):
    return _kiln_std.is_function(obj)


def ismethod(obj):
    return _kiln_std.is_method(obj)


def isbuiltin(obj):
    return _kiln_std.is_builtin(obj)


def ismodule(obj):
    return _kiln_std.is_module(obj)


def isroutine(obj):
    return isfunction(obj) or ismethod(obj) or isbuiltin(obj)


def getdoc(obj):
    return getattr(obj, "__doc__", None)


def getsource(obj):
    _kiln_std.refuse("inspect.getsource is outside Kiln's subset (programs cannot read files)")


def currentframe():
    _kiln_std.refuse("inspect.currentframe is outside Kiln's subset")


def stack():
    _kiln_std.refuse("inspect.stack is outside Kiln's subset")
)PY";

const char* const kDataclassesSource = R"PY(# dataclasses, after CPython 3.12's: the fields are the class body's
# annotated names (their annotations are values, or strings under PEP 563).
import _kiln_std
from typing import _missing_error  # CPython's "missing N required positional arguments" text


class _MISSING_TYPE:
    def __repr__(self):
        return "<dataclasses._MISSING_TYPE object>"


MISSING = _MISSING_TYPE()


class _KW_ONLY_TYPE:
    pass


KW_ONLY = _KW_ONLY_TYPE()


class FrozenInstanceError(AttributeError):
    pass


class Field:
    def __init__(self, default, default_factory, init, repr, hash, compare, metadata, kw_only):
        self.name = None
        self.type = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.metadata = {} if metadata is None else metadata
        self.kw_only = kw_only

    def __repr__(self):
        return ("Field(name=" + repr(self.name) + ",type=" + repr(self.type) + ",default=" + repr(self.default) +
                ",default_factory=" + repr(self.default_factory) + ",init=" + repr(self.init) + ",repr=" +
                repr(self.repr) + ",hash=" + repr(self.hash) + ",compare=" + repr(self.compare) + ",metadata=" +
                repr(self.metadata) + ",kw_only=" + repr(self.kw_only) + ",_field_type=_FIELD)")


def field(*, default=MISSING, default_factory=MISSING, init=True, repr=True, hash=None, compare=True, metadata=None,
          kw_only=MISSING):
    if default is not MISSING and default_factory is not MISSING:
        _kiln_std.raise_error("ValueError", "cannot specify both default and default_factory")
    return Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)


def _is_classvar(tp):
    # CPython's test: typing.ClassVar itself or subscripted, or such a text (PEP 563).
    if isinstance(tp, str):
        return tp.startswith("ClassVar") or tp.startswith("typing.ClassVar")
    import typing
    return tp is typing.ClassVar or (type(tp) is typing._GenericAlias and tp.__origin__ is typing.ClassVar)


def _is_kw_only(tp):
    if isinstance(tp, str):
        return tp == "KW_ONLY" or tp == "dataclasses.KW_ONLY"
    return tp is KW_ONLY


def _is_mutable_default(value):
    return isinstance(value, list) or isinstance(value, dict)


def _make_init(cls, fields, frozen):
    positional = [f for f in fields if f.init and not f.kw_only]
    keyword_only = [f for f in fields if f.init and f.kw_only]
    by_name = {f.name: f for f in fields if f.init}
    qualname = cls.__qualname__

    def __init__(self, *args, **kwargs):
        where = qualname + ".__init__()"
        if len(args) > len(positional):
            n = len(positional) + 1
            _kiln_std.raise_error("TypeError", where + " takes " + str(n) + " positional argument" +
                                  ("" if n == 1 else "s") + " but " + str(len(args) + 1) + " were given")
        values = {}
        for i in range(len(args)):
            values[positional[i].name] = args[i]
        for k, v in kwargs.items():
            if k not in by_name:
                _kiln_std.raise_error("TypeError", where + " got an unexpected keyword argument '" + k + "'")
            if k in values:
                _kiln_std.raise_error("TypeError", where + " got multiple values for argument '" + k + "'")
            values[k] = v
        missing = []
        for f in positional:
            if f.name not in values and f.default is MISSING and f.default_factory is MISSING:
                missing.append(f.name)
        if missing:
            _missing_error(where, missing)
        missing = []
        for f in keyword_only:
            if f.name not in values and f.default is MISSING and f.default_factory is MISSING:
                missing.append(f.name)
        if missing:
            quoted = ["'" + m + "'" for m in missing]
            n = len(missing)
            _kiln_std.raise_error("TypeError", where + " missing " + str(n) + " required keyword-only argument" +
                                  ("" if n == 1 else "s") + ": " + " and ".join(quoted))
        d = _kiln_std.instance_dict(self)
        for f in fields:
            if f.name in values:
                d[f.name] = values[f.name]
            elif f.default_factory is not MISSING:
                d[f.name] = f.default_factory()
            elif f.default is not MISSING:
                d[f.name] = f.default
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    return __init__


def _make_repr(fields):
    shown = [f.name for f in fields if f.repr]

    def __repr__(self):
        return type(self).__qualname__ + "(" + ", ".join([n + "=" + repr(getattr(self, n)) for n in shown]) + ")"

    return __repr__


def _make_eq(fields):
    compared = [f.name for f in fields if f.compare]

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        for n in compared:
            if not (getattr(self, n) == getattr(other, n)):
                return False
        return True

    return __eq__


def _frozen_setattr(self, name, value):
    raise FrozenInstanceError("cannot assign to field " + repr(name))


def _frozen_delattr(self, name):
    raise FrozenInstanceError("cannot delete field " + repr(name))


def _make_order(fields, op):
    compared = [f.name for f in fields if f.compare]

    def compare(self, other):
        if type(other) is not type(self):
            return NotImplemented
        a = tuple([getattr(self, n) for n in compared])
        b = tuple([getattr(other, n) for n in compared])
        if op == "__lt__":
            return a < b
        if op == "__le__":
            return a <= b
        if op == "__gt__":
            return a > b
        return a >= b

    return compare


def _process_class(cls, init, repr, eq, order, frozen, kw_only):
    cd = _kiln_std.class_dict(cls)
    fields = {}
    base = _kiln_std.base_of(cls)
    while base is not None:
        bd = _kiln_std.class_dict(base)
        if "__dataclass_fields__" in bd:
            inherited = bd["__dataclass_fields__"]
            merged = dict(inherited)
            for k, v in fields.items():
                merged[k] = v
            fields = merged
        base = _kiln_std.base_of(base)
    ann = cd.get("__annotations__", {})
    in_kw_only = kw_only
    for name, text in ann.items():
        if _is_classvar(text):
            continue
        if _is_kw_only(text):
            in_kw_only = True
            continue
        default = cd.get(name, MISSING)
        if isinstance(default, Field):
            f = default
        else:
            f = Field(default, MISSING, True, True, None, True, None, MISSING)
        f.name = name
        f.type = text
        if f.kw_only is MISSING:
            f.kw_only = in_kw_only
        if _is_mutable_default(f.default):
            _kiln_std.raise_error("ValueError", "mutable default " + repr(type(f.default)) + " for field " + name +
                                  " is not allowed: use default_factory")
        if isinstance(default, Field):
            if f.default is MISSING:
                cd.pop(name)
            else:
                cd[name] = f.default
        fields[name] = f
    field_list = list(fields.values())
    seen_default = None
    for f in field_list:
        if not f.init or f.kw_only:
            continue
        if f.default is MISSING and f.default_factory is MISSING:
            if seen_default is not None:
                _kiln_std.raise_error("TypeError", "non-default argument '" + f.name + "' follows default argument")
        else:
            seen_default = f
    cd["__dataclass_fields__"] = fields
    if init and "__init__" not in cd:
        cd["__init__"] = _make_init(cls, field_list, frozen)
    if repr and "__repr__" not in cd:
        cd["__repr__"] = _make_repr(field_list)
    if eq and "__eq__" not in cd:
        cd["__eq__"] = _make_eq(field_list)
    if order:
        for op in ["__lt__", "__le__", "__gt__", "__ge__"]:
            if op in cd:
                raise TypeError("Cannot overwrite attribute " + op + " in class " + cls.__name__ + ". Consider using functools.total_ordering")
            cd[op] = _make_order(field_list, op)
    if frozen:
        cd["__setattr__"] = _frozen_setattr
        cd["__delattr__"] = _frozen_delattr
    return cls


def dataclass(cls=None, *, init=True, repr=True, eq=True, order=False, unsafe_hash=False, frozen=False,
              match_args=True, kw_only=False, slots=False, weakref_slot=False):
    def wrap(c):
        return _process_class(c, init, repr, eq, order, frozen, kw_only)
    if cls is None:
        return wrap
    return wrap(cls)


def is_dataclass(obj):
    cls = obj if _kiln_std.is_class(obj) else type(obj)
    return hasattr(cls, "__dataclass_fields__")


def fields(class_or_instance):
    if not is_dataclass(class_or_instance):
        _kiln_std.raise_error("TypeError", "must be called with a dataclass type or instance")
    return tuple(class_or_instance.__dataclass_fields__.values())


def _asdict_inner(obj):
    if _kiln_std.is_instance_object(obj) and is_dataclass(obj):
        return {f.name: _asdict_inner(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, list):
        return [_asdict_inner(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple([_asdict_inner(v) for v in obj])
    if isinstance(obj, dict):
        return {_asdict_inner(k): _asdict_inner(v) for k, v in obj.items()}
    return obj


def asdict(obj):
    if not (_kiln_std.is_instance_object(obj) and is_dataclass(obj)):
        _kiln_std.raise_error("TypeError", "asdict() should be called on dataclass instances")
    return _asdict_inner(obj)


def astuple(obj):
    if not (_kiln_std.is_instance_object(obj) and is_dataclass(obj)):
        _kiln_std.raise_error("TypeError", "astuple() should be called on dataclass instances")
    return tuple([_asdict_inner(getattr(obj, f.name)) for f in fields(obj)])


def replace(obj, **changes):
    for f in fields(obj):
        if f.init and f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return type(obj)(**changes)
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_inspect, kInspectSource, "inspect.py")
KILN_STDLIB_SOURCE(load_dataclasses, kDataclassesSource, "dataclasses.py")

}  // namespace kiln::py
