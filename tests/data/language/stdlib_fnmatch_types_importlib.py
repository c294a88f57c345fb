# fnmatch's shell patterns, types' names for the types of objects, importlib.import_module.
import fnmatch
import types
import importlib

names = ["model.pt", "model.bin", "Model.PT", "data_01.csv", "data_2.csv", ".hidden", "a[1].txt", "x-y.z"]
for pat in ["*.pt", "*.PT", "data_??.csv", "data_[0-9]*.csv", "[!.]*", "*[-]*", "a[[]1].txt", "*", "model.*", "*a*b*"]:
    print(pat, fnmatch.filter(names, pat), fnmatch.translate(pat))
print(fnmatch.fnmatch("foo.py", "*.py"), fnmatch.fnmatchcase("FOO.PY", "*.py"), fnmatch.fnmatch("a/b/c.py", "a/*.py"))
print(fnmatch.translate("[z-a]"), fnmatch.translate("[a-c-e]"), fnmatch.translate("[!]"), fnmatch.translate("x*y*z*"))
print(fnmatch.fnmatch("layer.0.weight", "layer.*.weight"), fnmatch.fnmatch("layer.0.bias", "layer.*.weight"))


def f(x):
    return x


def gen():
    yield 1


class C:
    def m(self):
        return self.v


c = C()
c.v = 7
print(isinstance(f, types.FunctionType), isinstance(lambda: 0, types.LambdaType), isinstance(c.m, types.MethodType))
print(isinstance(len, types.BuiltinFunctionType), isinstance(types, types.ModuleType), isinstance(gen(), types.GeneratorType))
print(isinstance(f, types.MethodType), isinstance(c, types.FunctionType), types.FunctionType, types.MethodType, types.ModuleType)
print(types.GeneratorType, types.BuiltinFunctionType, types.NoneType, type(c.m).__name__)
bound = types.MethodType(lambda self, k: self.v * k, c)
print(bound(3), bound.__self__ is c)
ns = types.SimpleNamespace(a=1, b="two")
ns.c = [3]
print(ns, ns.a, ns.c, ns == types.SimpleNamespace(a=1, b="two", c=[3]), ns == types.SimpleNamespace(a=1))
mp = types.MappingProxyType({"x": 1, "y": 2})
print(mp, repr(mp), mp["x"], len(mp), list(mp), "y" in mp, mp.get("z", 0), list(mp.items()))
try:
    mp["z"] = 3
except TypeError as e:
    print("TypeError", e)

m = importlib.import_module("math" if False else "json")
print(m.dumps({"a": 1}), m is importlib.import_module("json"), importlib.import_module("os.path").join("a", "b"))
print(importlib.import_module(".path", "os").basename("/x/y.txt"), importlib.reload(m) is m)
try:
    importlib.import_module(".path")
except TypeError as e:
    print("TypeError", e)
