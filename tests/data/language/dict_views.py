# Dict views: live, printed with their type's name, set-like for keys and
# items, and OrderedDict's own methods (whose printing differs between
# CPython 3.11 and 3.12, so only its contents are printed here).
from collections import OrderedDict

d = {"a": 1, "b": 2}
keys, values, items = d.keys(), d.values(), d.items()
print(keys, values, items)
print(type(keys).__name__, type(values).__name__, type(items).__name__)
d["c"] = 3
print(keys, len(keys), "c" in keys, 3 in values, ("c", 3) in items, ("c", 4) in items)
print(list(keys), sorted(values, reverse=True), list(reversed(keys)))
for k, v in items:
    print(k, v, end="; ")
print()
print(keys & {"a", "z"}, sorted(keys | {"z"}), sorted(keys - {"a"}), sorted(keys ^ {"a", "z"}))
print(d.keys() == {"a": 0, "b": 0, "c": 0}.keys(), d.keys() == {"a": 0}.keys(), d.items() == dict(d).items())
print(d.values() == d.values(), bool({}.keys()), bool(keys))
print(sorted(items - {("a", 1)}))
try:
    keys[0]
except TypeError as e:
    print("TypeError:", e)
try:
    hash(keys)
except TypeError as e:
    print("TypeError:", e)
e = {}
e.update(d.items())
e.update(zip(["x", "y"], [8, 9]))
print(e, dict(d.items()) == d)
try:
    e.update([("p", 1, 2)])
except ValueError as err:
    print("ValueError:", err)

od = OrderedDict()
od["x"] = 1
od["y"] = 2
od["z"] = 3
print(type(od).__name__, isinstance(od, dict), isinstance(d, OrderedDict), type(od.keys()).__name__)
od.move_to_end("x")
print(list(od.items()))
od.move_to_end("z", last=False)
print(list(od.items()))
print(od.popitem(), od.popitem(last=False), list(od))
a = OrderedDict([("p", 1), ("q", 2)])
b = OrderedDict([("q", 2), ("p", 1)])
print(a == b, dict(a) == dict(b), a == dict(b), a.copy() == a, type(a.copy()).__name__)
print(list(OrderedDict.fromkeys("abc")) if hasattr(OrderedDict, "fromkeys") else None)
try:
    od.move_to_end("missing")
except KeyError as err:
    print("KeyError:", err)
