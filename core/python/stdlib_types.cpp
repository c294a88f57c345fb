// types and importlib: the types of the subset's objects under CPython 3.12's
// names, SimpleNamespace and MappingProxyType as Python source; import_module
// imports what `import x` imports and refuses the rest with its error.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kTypesSource = R"PY(# types, after CPython 3.12's Lib/types.py.
import sys as _sys
import _kiln_std


def _f():
    pass


def _g():
    yield 1


class _C:
    def _m(self):
        pass


FunctionType = type(_f)
LambdaType = type(lambda: None)
GeneratorType = type(_g())
MethodType = type(_C()._m)
BuiltinFunctionType = type(len)
BuiltinMethodType = type([].append)
ModuleType = type(_sys)
NoneType = type(None)
EllipsisType = type(Ellipsis)


class SimpleNamespace:
    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __repr__(self):
        d = _kiln_std.instance_dict(self)
        items = [k + "=" + repr(v) for k, v in d.items()]
        name = "namespace" if type(self) is SimpleNamespace else type(self).__name__
        return name + "(" + ", ".join(items) + ")"

    def __eq__(self, other):
        if isinstance(self, SimpleNamespace) and isinstance(other, SimpleNamespace):
            return _kiln_std.instance_dict(self) == _kiln_std.instance_dict(other)
        return NotImplemented


class MappingProxyType:
    # A read-only view of a mapping: reads go to the mapping, writes fail.
    def __init__(self, mapping):
        if not hasattr(mapping, "keys"):
            _kiln_std.raise_error("TypeError", "mappingproxy() argument must be a mapping, not " + type(mapping).__name__)
        _kiln_std.instance_dict(self)["_mapping"] = mapping

    def __getitem__(self, key):
        return self._mapping[key]

    def __contains__(self, key):
        return key in self._mapping

    def __iter__(self):
        return iter(self._mapping)

    def __len__(self):
        return len(self._mapping)

    def __eq__(self, other):
        return self._mapping == other

    def get(self, key, default=None):
        return self._mapping.get(key, default)

    def keys(self):
        return self._mapping.keys()

    def values(self):
        return self._mapping.values()

    def items(self):
        return self._mapping.items()

    def copy(self):
        return self._mapping.copy()

    def __setitem__(self, key, value):
        _kiln_std.raise_error("TypeError", "'mappingproxy' object does not support item assignment")

    def __delitem__(self, key):
        _kiln_std.raise_error("TypeError", "'mappingproxy' object does not support item deletion")

    def __setattr__(self, name, value):
        _kiln_std.raise_error("AttributeError", "'mappingproxy' object has no attribute '" + name + "'")

    def __repr__(self):
        return "mappingproxy(" + repr(self._mapping) + ")"

    def __str__(self):
        return str(self._mapping)


def _type_repr(obj):
    if obj is type(None):
        return "None"
    if _kiln_std.is_class(obj):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return obj.__module__ + "." + obj.__qualname__
    if obj is ...:
        return "..."
    if obj is type(None):
        return "None"
    if _kiln_std.is_function(obj):
        return obj.__name__
    return repr(obj)


class GenericAlias:
    # list[int], dict[str, int]: what subscripting a builtin class gives (PEP 585).
    def __init__(self, origin, args):
        self.__origin__ = origin
        self.__args__ = args if isinstance(args, tuple) else (args,)
        self.__parameters__ = ()

    def __repr__(self):
        if len(self.__args__) == 0:
            return _type_repr(self.__origin__) + "[()]"
        return _type_repr(self.__origin__) + "[" + ", ".join([_type_repr(a) for a in self.__args__]) + "]"

    def __call__(self, *args, **kwargs):
        return self.__origin__(*args, **kwargs)

    def __eq__(self, other):
        if not isinstance(other, GenericAlias):
            return False
        return self.__origin__ is other.__origin__ and self.__args__ == other.__args__

    def __hash__(self):
        return hash(self.__args__)

    def __or__(self, other):
        return _union(self, other)

    def __ror__(self, other):
        return _union(other, self)

    def __instancecheck__(self, obj):
        _kiln_std.raise_error("TypeError", "isinstance() argument 2 cannot be a parameterized generic")

    def __subclasscheck__(self, cls):
        _kiln_std.raise_error("TypeError", "issubclass() argument 2 cannot be a parameterized generic")


def _union(a, b):
    # int | None: the interpreter calls this for `|` between classes (PEP 604).
    args = []
    for x in (a, b):
        if x is None:
            x = type(None)
        for y in (x.__args__ if isinstance(x, UnionType) else (x,)):
            if y not in args:
                args.append(y)
    if len(args) == 1:
        return args[0]
    return UnionType(tuple(args))


class UnionType:
    def __init__(self, args):
        self.__args__ = args
        self.__parameters__ = ()

    def __repr__(self):
        return " | ".join([_type_repr(a) for a in self.__args__])

    def __eq__(self, other):
        if not isinstance(other, UnionType):
            return False
        return set(self.__args__) == set(other.__args__)

    def __hash__(self):
        return hash(len(self.__args__))

    def __or__(self, other):
        return _union(self, other)

    def __ror__(self, other):
        return _union(other, self)

    def __instancecheck__(self, obj):
        return isinstance(obj, self.__args__)

    def __subclasscheck__(self, cls):
        return issubclass(cls, self.__args__)


def new_class(name, bases=(), kwds=None, exec_body=None):
    ns = {}
    if exec_body is not None:
        exec_body(ns)
    return type(name, tuple(bases) if bases else (object,), ns)


def coroutine(func):
    return func
)PY";

// importlib.import_module(name, package): `import name` without the binding;
// a relative name resolves against package as CPython's does.
Value import_module(VM& vm, const CallArgs& a) {
  if (a.npos < 1) throw_type_error("import_module() missing 1 required positional argument: 'name'");
  std::string name = as_str(a[0]);
  const Value* package = a.npos > 1 ? &a[1] : a.kwarg("package");
  if (!name.empty() && name[0] == '.') {
    if (!package || package->is_none())
      throw PyError("TypeError", "the 'package' argument is required to perform a relative import for '" + name + "'");
    size_t level = 0;
    while (level < name.size() && name[level] == '.') ++level;
    std::string base = as_str(*package);
    for (size_t i = 1; i < level; ++i) {
      size_t dot = base.rfind('.');
      if (dot == std::string::npos) throw PyError("ImportError", "attempted relative import beyond top-level package");
      base = base.substr(0, dot);
    }
    name = level < name.size() ? base + "." + name.substr(level) : base;
  }
  if (name.empty()) throw PyError("ValueError", "Empty module name");
  Ref<Module> m = vm.module(name);
  if (!m)
    throw PyError("ModuleNotFoundError",
                  "No module named '" + name + "' (not in Kiln's Python subset; docs/python.md lists its modules)", true);
  return Value(m);
}

}  // namespace

KILN_STDLIB_SOURCE(load_types, kTypesSource, "types.py")

void load_importlib(VM&, const Ref<Module>& m) {
  def_native(m, "import_module", import_module);
  // reload: the subset's modules are made once; the module itself comes back.
  def_native(m, "reload", [](VM&, const CallArgs& a) -> Value {
    if (a.npos != 1 || !a[0].is(ObjKind::Module)) throw_type_error("reload() argument must be a module");
    return a[0];
  });
  def_native(m, "invalidate_caches", [](VM&, const CallArgs&) { return Value(); });
}

}  // namespace kiln::py
